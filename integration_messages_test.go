package kubeapplier

import (
	"strings"
	"testing"
	"time"

	"github.com/kube-applier-aws/kubeapplier/internal/controller"
)

// TestIntegrationLongNameMessage: an ApplyDesire whose ConfigMap has a 300,000-character name
// is refused by the real apiserver, which quotes the name; the status message leads with what
// failed, keeps the apiserver's reason and stays within 1 KiB.
func TestIntegrationLongNameMessage(t *testing.T) {
	e := startE2E(t, nil)
	name := strings.Repeat("a", 300000)
	e.putApply("long", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+name+`","namespace":"`+e.ns+`"}}`)
	st := waitCondition(e, e.specs.ApplyDesireStatus(), "long", 1, ConditionFalse, ReasonKubeAPIError, 30*time.Second)
	msg := condition(st, ConditionSuccessful).Message
	t.Logf("%d bytes: %s", len(msg), msg)
	if len(msg) > controller.MaxMessageBytes || !strings.HasPrefix(msg, "server-side apply of ConfigMap "+e.ns+"/aaaa") ||
		!strings.Contains(msg, "(300000 bytes)") || !strings.Contains(msg, "must be no more than 253 characters") {
		t.Fatalf("message of %d bytes: %s", len(msg), msg)
	}
}
