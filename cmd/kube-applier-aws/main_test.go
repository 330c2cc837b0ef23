package main

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// holdPort listens on a free loopback port for the test's duration and returns its address.
func holdPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l.Addr().String()
}

// A port that cannot be served ends run at once (before the kubeconfig is even read),
// with an error naming the flag and the address.
func TestRunFailsWhenAPortCannotBeServed(t *testing.T) {
	taken := holdPort(t)
	for _, tc := range []struct {
		name                string
		metrics, health     string
		wantFlag, wantCause string
	}{
		{"metrics port taken", taken, "0", "--metrics-bind-address " + taken, "address already in use"},
		{"health port taken", "127.0.0.1:0", taken, "--health-probe-bind-address " + taken, "address already in use"},
		{"bad address", "0", "127.0.0.1:http-alt-nope", "--health-probe-bind-address 127.0.0.1:http-alt-nope", "unknown port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := flags{managementCluster: "mc01", kubeconfig: filepath.Join(t.TempDir(), "none"), metricsAddr: tc.metrics, healthAddr: tc.health}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			err := run(ctx, f)
			if err == nil || !strings.Contains(err.Error(), "cannot serve "+tc.wantFlag+": ") || !strings.Contains(err.Error(), tc.wantCause) {
				t.Fatalf("run: %v\nwant an error naming %q (%s)", err, tc.wantFlag, tc.wantCause)
			}
		})
	}
}

// The ports bound before a later one failed are released: a retry with the other port free works.
func TestListenReleasesOnFailure(t *testing.T) {
	taken := holdPort(t)
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	first := l.Addr().String()
	l.Close()
	if _, err := listen(flags{metricsAddr: first, healthAddr: taken}); err == nil {
		t.Fatal("listen succeeded on a taken port")
	}
	eps, err := listen(flags{metricsAddr: first, healthAddr: "0"})
	if err != nil {
		t.Fatalf("the first port was not released: %v", err)
	}
	closeListeners(eps)
}

// A server that stops serving after start-up reports it, naming the flag and address.
func TestServeFailureReported(t *testing.T) {
	eps, err := listen(flags{metricsAddr: "127.0.0.1:0", healthAddr: "0"})
	if err != nil {
		t.Fatal(err)
	}
	closeListeners(eps) // Serve on a closed listener fails at once
	failed := make(chan error, 1)
	servers := serve(eps, handlers(flags{}, nil, nil), func(err error) { failed <- err })
	defer shutdown(servers)
	select {
	case err := <-failed:
		if !strings.Contains(err.Error(), "cannot serve --metrics-bind-address 127.0.0.1:0: ") {
			t.Fatalf("failure %q does not name the flag and address", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no failure reported for a server that cannot serve")
	}
}

// TestBinaries builds both binaries as `make install` does and checks, on the real processes:
// --version prints the build info that the toolchain recorded (module, version, the commit
// when there is one), and kube-applier-aws exits 1 at once, naming the address, when its
// metrics port is taken.
func TestBinaries(t *testing.T) {
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	// -buildvcs=true: the environment may say false (GOFLAGS); Go stamps the commit only in a
	// checkout whose .git is a directory (not in a git worktree, where .git is a file).
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin+string(filepath.Separator), "./cmd/kube-applier-aws", "./cmd/desirectl")
	build.Dir = repo
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var wantCommit string
	if fi, err := os.Stat(filepath.Join(repo, ".git")); err == nil && fi.IsDir() {
		out, err := exec.Command("git", "-C", repo, "rev-parse", "HEAD").Output()
		if err != nil {
			t.Fatalf("git rev-parse: %v", err)
		}
		wantCommit = "commit " + strings.TrimSpace(string(out))
	} else {
		t.Logf("%s/.git is not a directory (a git worktree?): Go records no commit; checking 'commit unknown'", repo)
		wantCommit = "commit unknown"
	}
	for _, name := range []string{"kube-applier-aws", "desirectl"} {
		out, err := exec.Command(filepath.Join(bin, name), "--version").CombinedOutput()
		if err != nil {
			t.Fatalf("%s --version: %v\n%s", name, err, out)
		}
		got := string(out)
		want := name + " version (devel) (github.com/kube-applier-aws/kubeapplier, " + wantCommit
		if !strings.HasPrefix(got, want) || strings.Count(got, "\n") != 1 {
			t.Fatalf("%s --version printed %q, want one line starting %q", name, got, want)
		}
	}

	taken := holdPort(t)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "kube-applier-aws"), "--management-cluster", "mc01",
		"--kubeconfig", filepath.Join(t.TempDir(), "none"), "--metrics-bind-address", taken, "--health-probe-bind-address", "127.0.0.1:0")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("kube-applier-aws with a taken port: %v, want exit 1\n%s", err, out)
	}
	want := "error: cannot serve --metrics-bind-address " + taken + ": listen tcp " + taken + ": bind: address already in use\n"
	if !strings.HasSuffix(string(out), want) {
		t.Fatalf("output %q, want it to end with %q", out, want)
	}
	t.Logf("exit 1 after %s: %s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(string(out)))
}
