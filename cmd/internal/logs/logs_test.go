package logs

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/kube-applier-aws/kubeapplier/internal/awslog"

	"github.com/aws/smithy-go/logging"
	"k8s.io/klog/v2"
)

// header is klog's line header: severity, date, time, thread, file:line.
var header = regexp.MustCompile(`(?m)^([IEW])\d{4} \d\d:\d\d:\d\d\.\d{6}\s+\d+ [^ ]+:\d+\] `)

// logAll logs one line through each path: the binary's logger at V(0), V(1) and V(4),
// klog's global functions at V(4) and V(6) (client-go's watch and request logs), klog's
// contextual logger at V(4) (newer client-go code), and the AWS SDK's warning and debug.
func logAll(v int) string {
	var buf bytes.Buffer
	log := Setup(&buf, v)
	log.Info("own info")
	log.V(1).Info("own debug", "key", "value")
	log.V(4).Info("own trace")
	log.Error(nil, "own error")
	klog.V(4).Infof("klog v4 %s", "watch of *v1.ConfigMap closed with: too old resource version")
	klog.V(6).Info("klog v6 GET https://apiserver/api")
	klog.FromContext(context.Background()).V(4).Info("contextual v4")
	klog.Errorf("klog error")
	aws := awslog.New(log)
	aws.Logf(logging.Warn, "sdk %s", "warning")
	aws.Logf(logging.Debug, "sdk debug")
	klog.Flush()
	return buf.String()
}

func TestSetupOneVerbosityForEveryPath(t *testing.T) {
	t.Cleanup(func() {
		klog.ClearLogger()
		var l klog.Level
		_ = l.Set("0")
	})
	for _, tc := range []struct {
		v          int
		want, hide []string
	}{
		{0, []string{"own info", "own error", "klog error", "sdk warning"},
			[]string{"own debug", "own trace", "klog v4", "klog v6", "contextual v4", "sdk debug"}},
		{1, []string{"own info", `"own debug" key="value"`, "klog error"},
			[]string{"own trace", "klog v4", "contextual v4", "sdk debug"}},
		{4, []string{"own trace", "klog v4 watch of *v1.ConfigMap closed with: too old resource version", "contextual v4", "sdk debug"},
			[]string{"klog v6"}},
		{6, []string{"klog v6 GET https://apiserver/api"}, nil},
	} {
		out := logAll(tc.v)
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("-v %d: %q missing from:\n%s", tc.v, w, out)
			}
		}
		for _, h := range tc.hide {
			if strings.Contains(out, h) {
				t.Errorf("-v %d: %q shown:\n%s", tc.v, h, out)
			}
		}
		// Every line is a klog line; no slog level names such as DEBUG+3.
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if !header.MatchString(line) {
				t.Errorf("-v %d: not a klog line: %q", tc.v, line)
			}
		}
		if strings.Contains(out, "DEBUG") || strings.Contains(out, "level=") {
			t.Errorf("-v %d: slog levels in:\n%s", tc.v, out)
		}
	}
}
