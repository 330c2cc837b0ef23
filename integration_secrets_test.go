package kubeapplier

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestIntegrationSecretValuesNeverInStatus: the real apiserver's refusals of Secrets whose
// stringData holds a nested map, a list, a number or a boolean quote the value; no status
// message carries any of it.
func TestIntegrationSecretValuesNeverInStatus(t *testing.T) {
	e := startE2E(t, nil)
	values := map[string]string{
		"nested-map": `{"inner":{"deeper":"Zq7x-nested-secret"}}`,
		"list":       `["Zq7x-first",{"k":"Zq7x-in-list"}]`,
		"number":     `987654321`,
		"escaped":    `{"json":"{\"password\":\"Zq7x-escaped\"}"}`,
	}
	for id, v := range values {
		e.putApply(id, fmt.Sprintf(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":%q,"namespace":%q},"stringData":{"token":%s}}`, id, e.ns, v))
	}
	for id := range values {
		st := waitCondition(e, e.specs.ApplyDesireStatus(), id, 1, ConditionFalse, "", 30*time.Second)
		for _, c := range st.Status.Conditions {
			for _, leak := range []string{"Zq7x", "987654321", "deeper", "password"} {
				if strings.Contains(c.Message, leak) {
					t.Errorf("%s: %s message reveals %q: %s", id, c.Type, leak, c.Message)
				}
			}
		}
		t.Logf("%s: %s", id, condition(st, ConditionSuccessful).Message)
	}
}
