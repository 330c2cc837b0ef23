package awslog

import (
	"strings"
	"testing"

	"github.com/aws/smithy-go/logging"
	"github.com/go-logr/logr/funcr"
)

// TestWarningsAreInfoDebugIsV4: the SDK's warnings reach the logger as info lines, its debug
// output only from V(4).
func TestWarningsAreInfoDebugIsV4(t *testing.T) {
	for _, tc := range []struct {
		verbosity int
		want      []string
		hide      []string
	}{
		{0, []string{`aws-sdk "level"=0 "msg"="checksum missing"`}, []string{"request body"}},
		{4, []string{"checksum missing", `"level"=4 "msg"="request body"`}, nil},
	} {
		var out []string
		log := funcr.New(func(prefix, args string) { out = append(out, prefix+" "+args) }, funcr.Options{Verbosity: tc.verbosity})
		l := New(log)
		l.Logf(logging.Warn, "checksum %s", "missing")
		l.Logf(logging.Debug, "request body")
		all := strings.Join(out, "\n")
		for _, w := range tc.want {
			if !strings.Contains(all, w) {
				t.Errorf("v%d: %q missing from %s", tc.verbosity, w, all)
			}
		}
		for _, h := range tc.hide {
			if strings.Contains(all, h) {
				t.Errorf("v%d: %q shown: %s", tc.verbosity, h, all)
			}
		}
	}
}
