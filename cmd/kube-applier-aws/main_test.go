package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	kubeapplier "github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/testenv"
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

// versionLine is what --version prints: NAME version VERSION (DETAILS).
var versionLine = regexp.MustCompile(`^(\S+) version (\S+) \((.*)\)\n$`)

var (
	buildOnce      sync.Once
	binDir, binErr string
)

// buildBinaries builds both binaries once per test process, as `make install` does, and
// returns the repo's root and the directory holding them.
func buildBinaries(t *testing.T) (repo, bin string) {
	t.Helper()
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kaa-bin-")
		if err != nil {
			binErr = err.Error()
			return
		}
		// -buildvcs=true: the environment may say false (GOFLAGS); Go stamps the commit only in
		// a checkout whose .git is a directory (not in a git worktree, where .git is a file).
		build := exec.Command("go", "build", "-buildvcs=true", "-o", dir+string(filepath.Separator), "./cmd/kube-applier-aws", "./cmd/desirectl")
		build.Dir = repo
		if out, err := build.CombinedOutput(); err != nil {
			binErr = fmt.Sprintf("go build: %v\n%s", err, out)
			return
		}
		binDir = dir
	})
	if binErr != "" {
		t.Fatal(binErr)
	}
	return repo, binDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// TestBinaries builds both binaries as `make install` does and checks, on the real processes:
// --version prints the build info that the toolchain recorded (module, version, the commit
// when there is one), and kube-applier-aws exits 1 at once, naming the address, when its
// metrics port is taken.
func TestBinaries(t *testing.T) {
	repo, bin := buildBinaries(t)
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
		// The version is "(devel)", or, from a checkout Go stamps (Go 1.24+), a pseudo-version
		// naming the commit: v0.0.0-<time>-<12 hex of the commit>[+dirty].
		got := string(out)
		m := versionLine.FindStringSubmatch(got)
		if m == nil || m[1] != name || !strings.HasPrefix(m[3], "github.com/kube-applier-aws/kubeapplier, "+wantCommit) {
			t.Fatalf("%s --version printed %q, want one line: %s version VERSION (github.com/kube-applier-aws/kubeapplier, %s…)", name, got, name, wantCommit)
		}
		if rev, ok := strings.CutPrefix(wantCommit, "commit "); ok && m[2] != "(devel)" && !strings.Contains(m[2], rev[:12]) {
			t.Fatalf("%s --version: version %q names another commit than %s", name, m[2], rev)
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

func TestStartupPolicyFlag(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    kubeapplier.StartupFailurePolicy
		wantErr bool
	}{
		{"exit", kubeapplier.StartupFailFast, false},
		{"retry", kubeapplier.StartupRetry, false},
		{"", 0, true},
		{"Retry", 0, true},
	} {
		got, err := startupPolicy(tc.in)
		if (err != nil) != tc.wantErr || (err == nil && got != tc.want) {
			t.Errorf("startupPolicy(%q) = %v, %v; want %v (error: %v)", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestPollIntervalFlag(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    time.Duration
		wantErr bool
	}{
		{nil, 250 * time.Millisecond, false}, // the library's default
		{[]string{"--stream-poll-interval=2s"}, 2 * time.Second, false},
		{[]string{"--stream-poll-interval=1m"}, time.Minute, false},
		{[]string{"--stream-poll-interval=0"}, 0, true},
		{[]string{"--stream-poll-interval=-1s"}, -time.Second, true},
		{[]string{"--stream-poll-interval=61s"}, 61 * time.Second, true},
	} {
		var f flags
		if err := newCommand(&f).Flags().Parse(tc.args); err != nil {
			t.Fatalf("parse %v: %v", tc.args, err)
		}
		if got := f.stream().PollInterval; got != tc.want {
			t.Errorf("%v: Options.Stream.PollInterval = %s, want %s", tc.args, got, tc.want)
		}
		if err := checkPollInterval(f.streamPollInterval); (err != nil) != tc.wantErr {
			t.Errorf("%v: checkPollInterval = %v; want an error: %v", tc.args, err, tc.wantErr)
		}
	}
}

// TestIntegrationBinaryStartupFailure runs the binary against the local stack before its
// tables exist: by default it exits 1 naming the missing tables; with
// --on-startup-failure=retry it keeps running, /readyz failing with the same names, and
// becomes ready once the tables are created; SIGTERM then ends it with exit 0. Its log at the
// default verbosity says so (the "starting" line naming the endpoint, the table prefix and the
// Lease namespace), with the leadership term's start and end; the last heartbeat says the
// leader stopped.
func TestIntegrationBinaryStartupFailure(t *testing.T) {
	env := testenv.DynamoDB(t) // a fresh database: no table yet
	kubeconfig := os.Getenv(testenv.EnvKubeconfig)
	ns := testenv.Namespace(t, testenv.Kube(t)) // the Lease's
	_, bin := buildBinaries(t)
	creds, err := env.Client.Options().Credentials.Retrieve(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	missing := api.TableName(env.Prefix, "mc01", api.StatusTable, kubeapplier.KindReadDesire)
	command := func(ctx context.Context, health string, extra ...string) *exec.Cmd {
		args := append([]string{"--management-cluster", "mc01", "--kubeconfig", kubeconfig, "--aws-region", "us-east-1",
			"--aws-endpoint-url", env.Endpoint, "--table-prefix", env.Prefix, "--leader-election-namespace", ns,
			"--leader-election-lease-duration", "4s", "--leader-election-renew-deadline", "3s", "--leader-election-retry-period", "500ms",
			"--metrics-bind-address", "0", "--health-probe-bind-address", health}, extra...)
		cmd := exec.CommandContext(ctx, filepath.Join(bin, "kube-applier-aws"), args...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "AWS_ACCESS_KEY_ID=" + creds.AccessKeyID,
			"AWS_SECRET_ACCESS_KEY=" + creds.SecretAccessKey, "AWS_EC2_METADATA_DISABLED=true"}
		return cmd
	}

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	out, err := command(ctx, "0").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "error: ") || !strings.Contains(string(out), missing) {
		t.Fatalf("default (--on-startup-failure=exit): %v, want exit 1 naming %s\n%s", err, missing, out)
	}

	holder, err := net.Listen("tcp", "127.0.0.1:0") // a free port for the health server
	if err != nil {
		t.Fatal(err)
	}
	health := holder.Addr().String()
	holder.Close()
	var log testenv.Output
	cmd := command(ctx, health, "--on-startup-failure=retry")
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if t.Failed() {
			t.Logf("log:\n%s", log.String())
		}
	})
	readyz := func() (int, string) {
		resp, err := (&http.Client{Timeout: 3 * time.Second}).Get("http://" + health + "/readyz")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	testenv.WaitUntil(t, 30*time.Second, "/readyz naming "+missing, func() bool {
		code, body := readyz()
		return code == http.StatusServiceUnavailable && strings.Contains(body, missing)
	})
	if _, err := api.EnsureTables(ctx, env.Client, env.Prefix, "mc01"); err != nil {
		t.Fatal(err)
	}
	testenv.WaitUntil(t, 45*time.Second, "ready once the tables exist", func() bool { code, _ := readyz(); return code == http.StatusOK })
	testenv.WaitUntil(t, 30*time.Second, "leading", func() bool { return strings.Contains(log.String(), `"reconciling"`) })
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no exit within 30 s of SIGTERM")
	}
	// What on-call reads at the default verbosity, in order.
	rest := log.String()
	for _, want := range []string{`"starting" managementCluster="mc01" dynamodbEndpoint="` + env.Endpoint + `"`,
		`tablePrefix="` + env.Prefix + `"`, `leaseNamespace="` + ns + `"`,
		`"start-up check failed: not ready; retrying`, `"start-up check passed"`,
		`"leadership won: syncing" managementCluster="mc01" term=`, `"listed" table="` + env.Prefix + `mc-mc01-specs-`,
		`"reconciling" managementCluster="mc01" term=`, `applyDesires=0 deleteDesires=0 readDesires=0`,
		`"leadership term ended" managementCluster="mc01" term=`, `cause="shutdown: `, `"stopped cleanly"`} {
		i := strings.Index(rest, want)
		if i < 0 {
			t.Fatalf("the log lacks %q after the lines before it", want)
		}
		rest = rest[i+len(want):]
	}
	// Its last heartbeat says at once that the leader stopped (desirectl status).
	hb, err := api.ReadHeartbeat(t.Context(), env.Client, env.Prefix, "mc01")
	if err != nil || hb.Stopped == nil {
		t.Fatalf("heartbeat after SIGTERM: %+v, %v; want one saying the leader stopped", hb, err)
	}
}

// TestStartingLine: the "starting" line names the DynamoDB endpoint the clients call (the
// flag's, the environment's, else the region's), the table prefix and the Lease's namespace
// and name (none without leader election).
func TestStartingLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want []string
		not  []string
	}{
		{"DynamoDB Local by flag", []string{"--aws-endpoint-url", "http://127.0.0.1:8000", "--table-prefix", "t-",
			"--leader-election-namespace", "apps", "--leader-election-id", "kaa"}, nil,
			[]string{`"dynamodbEndpoint"="http://127.0.0.1:8000"`, `"tablePrefix"="t-"`, `"leaseNamespace"="apps"`, `"leaseName"="kaa"`, `"region"="eu-west-1"`}, nil},
		{"the region's endpoint, the default Lease", nil, nil,
			[]string{`"dynamodbEndpoint"="https://dynamodb.eu-west-1.amazonaws.com"`, `"tablePrefix"=""`,
				`"leaseNamespace"="` + kubeapplier.DefaultLeaseNamespace + `"`}, nil},
		{"AWS_ENDPOINT_URL_DYNAMODB", nil, map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": "http://localhost:8001"},
			[]string{`"dynamodbEndpoint"="http://localhost:8001"`}, nil},
		{"no election: no Lease", []string{"--leader-elect=false"}, nil, []string{`"leaderElection"=false`}, []string{"lease"}},
		{"index poll", []string{"--change-source=index-poll", "--index-poll-period=1s"}, nil,
			[]string{`"changeSource"="index-poll"`, `"indexPollPeriod"="1s"`, `"indexRelistPeriod"="5m0s"`}, nil},
		{"streams", nil, nil, []string{`"changeSource"="streams"`}, []string{"indexPollPeriod"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_PROFILE"} {
				t.Setenv(k, "")
				os.Unsetenv(k)
			}
			t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
			t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
			t.Setenv("AWS_REGION", "eu-west-1")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var f flags
			if err := newCommand(&f).Flags().Parse(append([]string{"--management-cluster", "mc01"}, tc.args...)); err != nil {
				t.Fatal(err)
			}
			cfg, err := awsConfig(t.Context(), f)
			if err != nil {
				t.Fatal(err)
			}
			var line string
			funcr.New(func(_, args string) { line = args }, funcr.Options{}).Info("starting", startingValues(t.Context(), f, cfg)...)
			for _, want := range tc.want {
				if !strings.Contains(line, want) {
					t.Errorf("starting line lacks %s: %s", want, line)
				}
			}
			for _, not := range tc.not {
				if strings.Contains(line, not) {
					t.Errorf("starting line has %q: %s", not, line)
				}
			}
		})
	}
}

// TestTableFlags: --table-prefix, --table-name-format and the repeatable --table make the
// layout the applier gets; a bad format, key, name or ARN, or a key given twice, is refused
// before anything is reached, naming the flag.
func TestTableFlags(t *testing.T) {
	const arn = "arn:aws:dynamodb:us-east-1:123456789012:table/mc01-specs-applydesires"
	for _, tc := range []struct {
		name string
		args []string
		want map[string]string // TableKey -> what the applier passes as TableName
		err  string
	}{
		{"default", nil, map[string]string{"specs-applydesires": "mc-mc01-specs-applydesires", "status-readdesires": "mc-mc01-status-readdesires"}, ""},
		{"prefix", []string{"--table-prefix", "t-"}, map[string]string{"status-deletedesires": "t-mc-mc01-status-deletedesires"}, ""},
		{"upstream format, one ARN, one name", []string{"--table-name-format", "{cluster}-{table}-{kind}",
			"--table", "specs-applydesires=" + arn, "--table", "status-readdesires=reads-status"},
			map[string]string{"specs-applydesires": arn, "status-readdesires": "reads-status", "specs-readdesires": "mc01-specs-readdesires"}, ""},
		{"unknown placeholder", []string{"--table-name-format", "{mc}-{table}-{kind}"}, nil, "--table-name-format/--table: invalid table layout: format \"{mc}-{table}-{kind}\": unknown placeholder {mc}"},
		{"colliding names", []string{"--table-name-format", "{cluster}-{kind}"}, nil, "are both named"},
		{"unknown key", []string{"--table", "specs=abc"}, nil, "--table: invalid table layout: unknown table \"specs\""},
		{"no value", []string{"--table", "specs-applydesires"}, nil, "want KEY=NAME or KEY=ARN"},
		{"bad ARN", []string{"--table", "specs-applydesires=arn:aws:dynamodb:us-east-1:12:table/abc"}, nil, "12 digits"},
		{"twice", []string{"--table", "specs-applydesires=abc", "--table", "specs-applydesires=abd"}, nil, "--table: specs-applydesires given twice"},
		{"folded deletes", []string{"--folded-deletes", "--table-name-format", "{cluster}-{table}-{kind}"},
			map[string]string{"specs-applydesires": "mc01-specs-applydesires", "status-readdesires": "mc01-status-readdesires"}, ""},
		{"folded deletes with a DeleteDesire table", []string{"--folded-deletes", "--table", "specs-deletedesires=abc"}, nil,
			"the folded layout (FoldedDeletes) has no DeleteDesire tables"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f flags
			if err := newCommand(&f).Flags().Parse(append([]string{"--management-cluster", "mc01"}, tc.args...)); err != nil {
				t.Fatal(err)
			}
			l, err := f.tableLayout()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("tableLayout = %v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if folded := slices.Contains(tc.args, "--folded-deletes"); l.FoldedDeletes != folded {
				t.Fatalf("FoldedDeletes = %v, want %v", l.FoldedDeletes, folded)
			}
			for key, want := range tc.want {
				tk, k, _ := api.ParseTableKey(key)
				if got := l.Name("mc01", tk, k); got != want {
					t.Errorf("%s = %q, want %q", key, got, want)
				}
			}
		})
	}
}

// TestIntegrationBinaryTableLayout: the binary's --table-name-format and --table reach the
// applier: before the tables exist it exits 1 naming the tables of that layout (upstream's
// names, one overridden), not the default ones; a bad format ends it with exit 1 naming the
// flag, before DynamoDB is reached.
func TestIntegrationBinaryTableLayout(t *testing.T) {
	env := testenv.DynamoDB(t) // a fresh database: no table yet
	kubeconfig := os.Getenv(testenv.EnvKubeconfig)
	ns := testenv.Namespace(t, testenv.Kube(t))
	_, bin := buildBinaries(t)
	creds, err := env.Client.Options().Credentials.Retrieve(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	run := func(extra ...string) (string, int) {
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		args := append([]string{"--management-cluster", "mc01", "--kubeconfig", kubeconfig, "--aws-region", "us-east-1",
			"--aws-endpoint-url", env.Endpoint, "--table-prefix", env.Prefix, "--leader-election-namespace", ns,
			"--metrics-bind-address", "0", "--health-probe-bind-address", "0"}, extra...)
		cmd := exec.CommandContext(ctx, filepath.Join(bin, "kube-applier-aws"), args...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "AWS_ACCESS_KEY_ID=" + creds.AccessKeyID,
			"AWS_SECRET_ACCESS_KEY=" + creds.SecretAccessKey, "AWS_EC2_METADATA_DISABLED=true"}
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("%v: %v\n%s", extra, err, out)
		}
		return string(out), exit.ExitCode()
	}
	out, code := run("--table-name-format", "{cluster}-{table}-{kind}", "--table", "status-readdesires="+env.Prefix+"reads.status")
	for _, name := range []string{env.Prefix + "mc01-specs-applydesires", env.Prefix + "mc01-status-deletedesires", env.Prefix + "reads.status"} {
		if code != 1 || !strings.Contains(out, name) {
			t.Errorf("exit %d, want 1 naming %s:\n%s", code, name, out)
		}
	}
	if strings.Contains(out, env.Prefix+"mc-mc01-") {
		t.Errorf("a table of the default layout named:\n%s", out)
	}
	out, code = run("--table-name-format", "{mc}-{table}-{kind}")
	if code != 1 || !strings.Contains(out, "error: --table-name-format/--table: invalid table layout") || strings.Contains(out, "starting") {
		t.Errorf("bad format: exit %d, want 1 naming the flag before starting:\n%s", code, out)
	}
}
