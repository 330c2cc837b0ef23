package kubeapplier

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// TestIntegrationReadFields: on the real stack, a ReadDesire of a ConfigMap with spec.fields
// ["/data/a"] mirrors only data.a (and the object's apiVersion, kind, name, namespace); a
// change of data.b writes no status (its version and updateTime stay), a change of data.a is
// mirrored; a Secret's selected value is redacted as the whole Secret's would be.
func TestIntegrationReadFields(t *testing.T) {
	e := startE2E(t, nil)
	ctx := context.Background()
	e.createConfigMap("rf", map[string]string{"a": "1", "b": "1"})
	target := TargetItem{Version: "v1", Resource: "configmaps", Namespace: e.ns, Name: "rf"}
	rd := &ReadDesire{}
	rd.DocumentID, rd.Spec.ManagementCluster, rd.Spec.TargetItem, rd.Spec.Fields = "rf-a", "mc01", target, []string{"/data/a"}
	if _, err := e.readS.Create(ctx, rd); err != nil {
		t.Fatal(err)
	}
	// A witness mirrors the whole object: once it shows a change, the shared watch has
	// delivered it to the projected desire too.
	e.createRead("rf-all", target)
	projected := func(a string) string {
		return fmt.Sprintf(`{"apiVersion":"v1","data":{"a":%q},"kind":"ConfigMap","metadata":{"name":"rf","namespace":%q}}`, a, e.ns)
	}
	status := func(id string) *ReadDesire {
		st, err := e.specs.ReadDesireStatus().Get(ctx, id)
		if err != nil {
			return nil
		}
		return st
	}
	waitContent := func(id, want string, exact bool) *ReadDesire {
		t.Helper()
		var st *ReadDesire
		waitFor(t, 15*time.Second, id+" mirrors "+want, func() bool {
			st = status(id)
			if st == nil || st.Status.KubeContent == nil {
				return false
			}
			if exact {
				return string(st.Status.KubeContent) == want
			}
			return strings.Contains(string(st.Status.KubeContent), want)
		}, func() string {
			if st == nil {
				return "no status"
			}
			return string(st.Status.KubeContent)
		})
		return st
	}
	patch := func(data string) {
		t.Helper()
		if _, err := e.dyn.Resource(cmGVR).Namespace(e.ns).Patch(ctx, "rf", "application/merge-patch+json", []byte(`{"data":`+data+`}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	st := waitContent("rf-a", projected("1"), true)
	if c := condition(st, ConditionSuccessful); c.Status != ConditionTrue || !strings.HasSuffix(c.Message, "mirrored: 1 of 1 spec.fields present") {
		t.Fatalf("Successful: %+v", c)
	}
	waitContent("rf-all", `"b":"1"`, false)

	// data.b changes: the witness follows, the projection's status is not written.
	patch(`{"b":"2"}`)
	waitContent("rf-all", `"b":"2"`, false)
	time.Sleep(1500 * time.Millisecond) // the projected desire's reconcile of the same event
	if again := status("rf-a"); again == nil || again.Version != st.Version || !again.UpdateTime.Equal(st.UpdateTime) ||
		string(again.Status.KubeContent) != projected("1") {
		t.Fatalf("a change of data.b rewrote the projected status: version %d -> %v", st.Version, again)
	}

	// data.a changes: mirrored.
	patch(`{"a":"2"}`)
	st2 := waitContent("rf-a", projected("2"), true)
	if st2.Version == st.Version || !st2.UpdateTime.After(st.UpdateTime) {
		t.Fatalf("a change of data.a: version %d -> %d, updateTime %s -> %s", st.Version, st2.Version, st.UpdateTime, st2.UpdateTime)
	}

	// A Secret: its selected value redacted.
	sec := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "rf-secret", "namespace": e.ns}, "data": map[string]any{"x": "aHVudGVyMg==", "y": "YWRtaW4="}}}
	if _, err := e.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace(e.ns).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	srd := &ReadDesire{}
	srd.DocumentID, srd.Spec.ManagementCluster, srd.Spec.Fields = "rf-secret", "mc01", []string{"/data/x"}
	srd.Spec.TargetItem = TargetItem{Version: "v1", Resource: "secrets", Namespace: e.ns, Name: "rf-secret"}
	if _, err := e.readS.Create(ctx, srd); err != nil {
		t.Fatal(err)
	}
	waitContent("rf-secret", fmt.Sprintf(`{"apiVersion":"v1","data":{"x":%q},"kind":"Secret","metadata":{"name":"rf-secret","namespace":%q}}`, api.RedactedValue, e.ns), true)
}
