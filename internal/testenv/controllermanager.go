package testenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// EnvKubeBinDir is the folder of the stack's kube binaries (hack/build-kube.sh's cache folder:
// kube-apiserver, etcd, kube-controller-manager), written by `hack/local-stack.sh env`.
const EnvKubeBinDir = "KAA_KUBE_BIN_DIR"

// ControllerManager is a kube-controller-manager a test started against the local stack's
// apiserver.
type ControllerManager struct {
	cmd *exec.Cmd
	// done is closed when the process has exited (and been reaped).
	done chan struct{}
	// Log is its output (klog writes to stderr), for a failing test to show.
	Log *Output
}

// controllerManagerStop bounds the wait for the process to exit after SIGTERM (then SIGKILL).
const controllerManagerStop = 10 * time.Second

// StartControllerManager starts kube-controller-manager from the cache folder the stack's
// kube-apiserver comes from (EnvKubeBinDir), pointed at the stack's apiserver with its admin
// kubeconfig, running only controllers (e.g. "garbagecollector"); it is stopped (SIGTERM,
// then SIGKILL) when the test ends. No leader election, no serving port, the kubeconfig's own
// credentials for every controller (no service-account tokens: the stack has no token
// controller).
//
// The stack runs no controller-manager on purpose (integration tests rely on there being no
// garbage collector and no namespace finalization), so a test that needs one starts its own
// and owns its lifetime; while it runs, the collector acts on every namespace of the shared
// apiserver (objects whose owners do not exist are collected), which no other integration
// test relies on.
//
// A missing binary fails the test (never a skip): hack/build-kube.sh builds it (`make up`,
// CI's stack set-up). Without the stack's environment it skips or fails as the other helpers.
func StartControllerManager(t testing.TB, controllers ...string) *ControllerManager {
	t.Helper()
	kubeconfig := lookup(t, EnvKubeconfig)
	dir := os.Getenv(EnvKubeBinDir)
	if dir == "" {
		t.Fatalf("testenv: %s not set: evaluate the current `make -s env` (hack/local-stack.sh env prints it), "+
			"and build kube-controller-manager with hack/build-kube.sh", EnvKubeBinDir)
	}
	bin := filepath.Join(dir, "kube-controller-manager")
	if fi, err := os.Stat(bin); err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("testenv: no kube-controller-manager binary at %s (%v): build it with hack/build-kube.sh "+
			"(`make up` does; ~9 min and ~2.6 GB of memory on 2 cores, once); this test never skips for want of it", bin, err)
	}
	if len(controllers) == 0 {
		t.Fatal("testenv: StartControllerManager needs the controllers to run")
	}
	cm := &ControllerManager{Log: &Output{}, done: make(chan struct{})}
	cm.cmd = exec.Command(bin,
		"--kubeconfig="+kubeconfig,
		"--leader-elect=false",
		"--use-service-account-credentials=false",
		"--secure-port=0",
		"--controllers="+strings.Join(controllers, ","),
	)
	cm.cmd.Stdout, cm.cmd.Stderr = cm.Log, cm.Log
	// Killed with the test binary if that dies without running its cleanups (a panic, a
	// timeout's exit), so no collector outlives the test on the shared stack.
	cm.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cm.cmd.Start(); err != nil {
		t.Fatalf("testenv: start %s: %v", bin, err)
	}
	go func() {
		_ = cm.cmd.Wait()
		close(cm.done)
	}()
	t.Cleanup(func() {
		_ = cm.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-cm.done:
		case <-time.After(controllerManagerStop):
			_ = cm.cmd.Process.Kill()
			<-cm.done
		}
		if t.Failed() {
			t.Logf("kube-controller-manager log (last 4 KB):\n%s", tail(cm.Log.String(), 4096))
		}
	})
	return cm
}

// WaitSynced waits until the controller-manager's log says the garbage collector's caches
// synced ("Proceeding to collect garbage"), and fails t if the process exits first or timeout
// passes.
func (cm *ControllerManager) WaitSynced(t testing.TB, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for !strings.Contains(cm.Log.String(), "Proceeding to collect garbage") {
		select {
		case <-cm.done:
			t.Fatalf("kube-controller-manager exited during start-up:\n%s", tail(cm.Log.String(), 4096))
		case <-ctx.Done():
			t.Fatalf("kube-controller-manager's garbage collector not synced after %s:\n%s", timeout, tail(cm.Log.String(), 4096))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
