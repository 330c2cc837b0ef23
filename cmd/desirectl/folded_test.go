package main

import (
	"os"
	"strings"
	"testing"

	"github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
)

// TestDeleteFolded: in a context with folded-deletes, delete turns the object's ApplyDesire
// into one of type Delete (same ID, a new version; no DeleteDesire table is touched), get
// shows it as ApplyDesire/Delete, and apply turns it back.
func TestDeleteFolded(t *testing.T) {
	h := newHarness(t)
	h.mustRun("config", "set-context", "test", "--folded-deletes")
	// Any call on a DeleteDesire table fails: the folded layout has none.
	h.db.SetMissing(tableName(api.SpecsTable, kubeapplier.KindDeleteDesire))
	h.db.SetMissing(tableName(api.StatusTable, kubeapplier.KindDeleteDesire))
	if cfg, err := os.ReadFile(h.configPath); err != nil || !strings.Contains(string(cfg), "folded-deletes: true") {
		t.Fatalf("config file (%v):\n%s", err, cfg)
	}
	target := kubeapplier.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "foo"}
	id := kubeapplier.DesireID(testCluster, target)
	cm := h.writeFile("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: foo\n  namespace: default\n")
	h.mustRun("apply", "-f", cm)
	out := h.mustRun("delete", "configmaps", "foo", "--propagation-policy", "Foreground")
	if want := "applydesire/" + id + " configured (ConfigMap default/foo)\n"; out != want {
		t.Fatalf("stdout:\n%s\nwant:\n%s", out, want)
	}
	d := h.applySpec(id)
	if !d.Spec.IsDelete() || d.Version != 2 || d.Spec.KubeContent != nil || d.Spec.TargetItem == nil || *d.Spec.TargetItem != target ||
		d.Spec.PropagationPolicy != api.PropagationForeground {
		t.Fatalf("ApplyDesire after delete: version %d spec %+v", d.Version, d.Spec)
	}
	h.writeStatus(kubeapplier.KindApplyDesire, id, 2, outcome{successful: true, reason: kubeapplier.ReasonNoErrors, message: "gone"})
	out = h.mustRun("get", "configmaps")
	if !strings.Contains(out, "ApplyDesire/Delete") || !strings.Contains(out, "foo") {
		t.Fatalf("get:\n%s", out)
	}
	h.mustRun("apply", "-f", cm)
	if d := h.applySpec(id); d.Spec.IsDelete() || d.Version != 3 || d.Spec.TargetItem != nil || d.Spec.KubeContent == nil {
		t.Fatalf("ApplyDesire after apply: version %d spec %+v", d.Version, d.Spec)
	}
}
