package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kube-applier-aws/kubeapplier/cmd/internal/logs"
	"k8s.io/klog/v2"
)

// -v sets the verbosity of the libraries' logs (client-go logs through klog), written to
// stderr in klog's text format.
func TestVerbosityFlagRoutesLibraryLogs(t *testing.T) {
	// This test swaps klog's logger (logs.Setup) on purpose; the tests after it get e2eKlog back.
	t.Cleanup(func() { e2eKlogOnce.Do(func() {}); logs.Setup(e2eKlog, 0) })
	t.Cleanup(func() {
		klog.ClearLogger()
		var l klog.Level
		_ = l.Set("0")
	})
	config := filepath.Join(t.TempDir(), "config.yaml")
	for _, tc := range []struct {
		args   []string
		wantV4 bool
	}{
		{nil, false},
		{[]string{"-v", "4"}, true},
		{[]string{"--v=6"}, true},
	} {
		var out, errb bytes.Buffer
		a := newApp(strings.NewReader(""), &out, &errb)
		a.getenv = func(k string) string {
			if k == configEnv {
				return config
			}
			return ""
		}
		if code := a.run(context.Background(), append(tc.args, "config", "get-contexts")); code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, errb.String())
		}
		errb.Reset()
		klog.V(4).Info("watch closed: too old resource version")
		klog.FromContext(context.Background()).V(4).Info("contextual relist")
		klog.Error("cannot list")
		got := errb.String()
		if strings.Contains(got, "too old resource version") != tc.wantV4 || strings.Contains(got, "contextual relist") != tc.wantV4 {
			t.Errorf("%v: want V(4) lines shown: %v; stderr:\n%s", tc.args, tc.wantV4, got)
		}
		if !strings.Contains(got, "] \"cannot list\"") || !strings.HasPrefix(got, "E") && !strings.Contains(got, "\nE") {
			t.Errorf("%v: error line missing or not in klog format:\n%s", tc.args, got)
		}
	}
}
