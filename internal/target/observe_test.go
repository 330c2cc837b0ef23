package target

import (
	"context"
	"testing"
	"time"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/testenv"
)

// TestObserveDropsTheRecordAndSeesTheObject: Observe answers from the synced watch (absent,
// then present once another writer created the object), and drops the desire's apply record,
// so a later Check knows no apply to compare with.
func TestObserveDropsTheRecordAndSeesTheObject(t *testing.T) {
	f, d := reviewApplied(t)
	tgt := api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "cm"}
	if _, exists, known := f.dw.Observe(d.id, tgt, MetadataOnly); !known || !exists {
		t.Fatalf("Observe of the applied object: exists %v known %v", exists, known)
	}
	if dec := f.dw.Check(d.id, d.Meta(), tgt, "ConfigMap default/cm", MetadataOnly); !dec.Unknown {
		t.Fatalf("Check after Observe: %+v, want Unknown (the record dropped)", dec)
	}
	other := api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "later"}
	if _, exists, known := f.dw.Observe(d.id, other, MetadataOnly); !known || exists {
		t.Fatalf("Observe of an absent object: exists %v known %v", exists, known)
	}
	obj := unstructuredObj("v1", "ConfigMap", "default", "later", map[string]any{"data": map[string]any{"k": "v"}})
	if _, err := f.kube.Apply(context.Background(), cmGVR, obj, "kubectl"); err != nil {
		t.Fatal(err)
	}
	testenv.WaitUntil(t, 5*time.Second, "the watch sees the new object", func() bool {
		st, exists, known := f.dw.Observe(d.id, other, MetadataOnly)
		return known && exists && st.ResourceVersion() != ""
	})
}
