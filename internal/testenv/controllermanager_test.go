package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fatalTB records a Fatalf and ends the goroutine as testing's own does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestStartControllerManagerMissing: with the stack's environment set but no
// kube-controller-manager binary (or no KAA_KUBE_BIN_DIR), StartControllerManager fails the
// test naming what to do: never a skip, even without CI or KAA_INTEGRATION.
func TestStartControllerManagerMissing(t *testing.T) {
	t.Setenv("CI", "")
	t.Setenv("KAA_INTEGRATION", "")
	t.Setenv(EnvKubeconfig, filepath.Join(t.TempDir(), "kubeconfig"))
	empty := t.TempDir()
	notExecutable := t.TempDir()
	if err := os.WriteFile(filepath.Join(notExecutable, "kube-controller-manager"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dir, want string }{
		{"", EnvKubeBinDir + " not set"},
		{empty, "no kube-controller-manager binary at " + filepath.Join(empty, "kube-controller-manager")},
		{notExecutable, "no kube-controller-manager binary at " + filepath.Join(notExecutable, "kube-controller-manager")},
	} {
		t.Setenv(EnvKubeBinDir, tc.dir)
		f := &fatalTB{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			StartControllerManager(f, "garbagecollector")
		}()
		<-done
		if !strings.Contains(f.msg, tc.want) || !strings.Contains(f.msg, "hack/build-kube.sh") {
			t.Errorf("dir %q: fatal %q, want it to contain %q and hack/build-kube.sh", tc.dir, f.msg, tc.want)
		}
	}
}
