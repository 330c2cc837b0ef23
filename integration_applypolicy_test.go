package kubeapplier

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// writeConfigMapAs server-side applies ConfigMap name with data as manager (a kubectl-like
// client; force: it takes fields another manager holds).
func (e *e2e) writeConfigMapAs(manager, name string, data map[string]string) *unstructured.Unstructured {
	e.t.Helper()
	var u unstructured.Unstructured
	_ = json.Unmarshal([]byte(e.configMap(name, data)), &u.Object)
	live, err := e.dyn.Resource(cmGVR).Namespace(e.ns).Apply(context.Background(), name, &u, metav1.ApplyOptions{FieldManager: manager, Force: true})
	if err != nil {
		e.t.Fatal(err)
	}
	return live
}

// configMapData returns data[key] of ConfigMap name.
func (e *e2e) configMapData(name, key string) string {
	e.t.Helper()
	live, err := e.getConfigMap(name)
	if err != nil {
		e.t.Fatal(err)
	}
	v, _, _ := unstructured.NestedString(live.Object, "data", key)
	return v
}

// hasManager reports whether ConfigMap name has a managedFields entry of manager.
func (e *e2e) hasManager(name, manager string) bool {
	e.t.Helper()
	live, err := e.getConfigMap(name)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, mf := range live.GetManagedFields() {
		if mf.Manager == manager {
			return true
		}
	}
	return false
}

// TestIntegrationApplyPolicyCreateOnly: a CreateOnly desire creates its absent object; then a
// changed desire and a change of the object by another writer are left as found, and the
// status never claims content applied.
func TestIntegrationApplyPolicyCreateOnly(t *testing.T) {
	e := startE2E(t, nil)
	createOnly := func(s *ApplyDesireSpec) { s.ApplyPolicy = api.ApplyPolicyCreateOnly }
	e.putApplyWith("co", e.configMap("created-only", map[string]string{"a": "1"}), createOnly)
	st := waitCondition(e, e.specs.ApplyDesireStatus(), "co", 1, ConditionTrue, ReasonNoErrors, 15*time.Second)
	want := "created ConfigMap " + e.ns + "/created-only (applyPolicy CreateOnly: never updated, drift not repaired)"
	if c := condition(st, ConditionSuccessful); c.Message != want {
		t.Fatalf("message %q, want %q", c.Message, want)
	}
	if st.Status.AppliedFieldsDigest != "" || st.Status.AppliedUID != "" {
		t.Fatalf("a CreateOnly status claims content applied: %+v", st.Status)
	}
	if got := e.configMapData("created-only", "a"); got != "1" {
		t.Fatalf("data.a = %q, want 1", got)
	}

	e.writeConfigMapAs("kubectl-edit", "created-only", map[string]string{"a": "edited"})
	e.putApplyWith("co", e.configMap("created-only", map[string]string{"a": "2"}), createOnly)
	st = waitCondition(e, e.specs.ApplyDesireStatus(), "co", 2, ConditionTrue, ReasonNoErrors, 15*time.Second)
	want = "ConfigMap " + e.ns + "/created-only exists: left as found (applyPolicy CreateOnly)"
	if c := condition(st, ConditionSuccessful); c.Message != want {
		t.Fatalf("message %q, want %q", c.Message, want)
	}
	time.Sleep(time.Second) // a repair, were there one, would follow the watch's event
	if got := e.configMapData("created-only", "a"); got != "edited" {
		t.Fatalf("data.a = %q: the CreateOnly desire wrote over another writer's change", got)
	}
}

// TestIntegrationApplyPolicyReadOnly: a ReadOnly desire of an absent object is
// Successful=False/TargetAbsent (not Degraded); once a kubectl-like client creates the object
// it is Successful=True within seconds (the target's watch), Ready reported, and the applier
// never wrote: no managedFields entry of its field manager, no applied fields in the status.
func TestIntegrationApplyPolicyReadOnly(t *testing.T) {
	e := startE2E(t, nil)
	readOnly := func(s *ApplyDesireSpec) { s.ApplyPolicy = api.ApplyPolicyReadOnly }
	e.putApplyWith("ro", e.configMap("read-only", map[string]string{"a": "desired"}), readOnly)
	st := waitCondition(e, e.specs.ApplyDesireStatus(), "ro", 1, ConditionFalse, ReasonTargetAbsent, 15*time.Second)
	want := "ConfigMap " + e.ns + "/read-only does not exist; applyPolicy ReadOnly never creates it"
	if c := condition(st, ConditionSuccessful); c.Message != want {
		t.Fatalf("message %q, want %q", c.Message, want)
	}
	if c := condition(st, ConditionDegraded); c.Status == ConditionTrue {
		t.Fatalf("TargetAbsent is Degraded: %+v", c)
	}
	if _, err := e.getConfigMap("read-only"); err == nil {
		t.Fatal("a ReadOnly desire created its object")
	}

	e.writeConfigMapAs("kubectl-create", "read-only", map[string]string{"a": "theirs"})
	st = waitCondition(e, e.specs.ApplyDesireStatus(), "ro", 1, ConditionTrue, ReasonNoErrors, 10*time.Second)
	want = "ConfigMap " + e.ns + "/read-only exists: not written (applyPolicy ReadOnly)"
	if c := condition(st, ConditionSuccessful); c.Message != want {
		t.Fatalf("message %q, want %q", c.Message, want)
	}
	if c := condition(st, ConditionReady); c.Status != ConditionTrue {
		t.Fatalf("Ready %+v, want True", c)
	}
	if st.Status.AppliedFieldsDigest != "" || st.Status.AppliedUID != "" {
		t.Fatalf("a ReadOnly status claims content applied: %+v", st.Status)
	}
	if e.hasManager("read-only", DefaultFieldManager) || e.configMapData("read-only", "a") != "theirs" {
		t.Fatal("the applier wrote the ReadOnly desire's object")
	}
}

// TestIntegrationForceConflictsFalse: an ApplyDesire with forceConflicts false against a field
// another manager owns is Successful=False/ApplyConflict naming the manager and the field, the
// object unchanged; when the other manager gives the field up, the target's watch brings the
// desire back and it is applied.
func TestIntegrationForceConflictsFalse(t *testing.T) {
	e := startE2E(t, nil)
	e.writeConfigMapAs("other-team", "contested", map[string]string{"owner": "theirs", "keep": "k"})
	unforced := func(s *ApplyDesireSpec) { no := false; s.ForceConflicts = &no }
	e.putApplyWith("fc", e.configMap("contested", map[string]string{"owner": "ours"}), unforced)
	st := waitCondition(e, e.specs.ApplyDesireStatus(), "fc", 1, ConditionFalse, ReasonApplyConflict, 15*time.Second)
	c := condition(st, ConditionSuccessful)
	if !strings.Contains(c.Message, `field managers "other-team" over .data.owner`) ||
		!strings.HasSuffix(c.Message, "(spec.forceConflicts is false: their fields are not taken)") {
		t.Fatalf("message %q", c.Message)
	}
	if d := condition(st, ConditionDegraded); d.Status == ConditionTrue {
		t.Fatalf("ApplyConflict is Degraded: %+v", d)
	}
	if got := e.configMapData("contested", "owner"); got != "theirs" || e.hasManager("contested", DefaultFieldManager) {
		t.Fatalf("data.owner = %q (or the applier holds an entry): the unforced apply took the field", got)
	}

	// The other manager gives data.owner up (its apply no longer holds it).
	e.writeConfigMapAs("other-team", "contested", map[string]string{"keep": "k"})
	waitCondition(e, e.specs.ApplyDesireStatus(), "fc", 1, ConditionTrue, ReasonNoErrors, 10*time.Second)
	if got := e.configMapData("contested", "owner"); got != "ours" {
		t.Fatalf("data.owner = %q, want ours", got)
	}
}
