package main

import (
	"os"
	"strings"
	"testing"
	"time"

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

// TestWaitFoldedOtherType: in the folded layout a later version of an ApplyDesire may be of
// the other type (delete wrote a Delete, then an apply turned it back, or the reverse). Its
// status, whatever it says, answers nothing of the wait for the earlier type: a wait on a
// Delete is never met by an apply's Successful=True (the object is there), nor the reverse;
// such a wait fails (the desire no longer asks for it). A later version of the same type, a
// status without its spec (left out for size), or the status of an earlier version of the
// other type (not answered yet), is judged as before.
func TestWaitFoldedOtherType(t *testing.T) {
	meta := kubeapplier.DynamoDBMetadata{DocumentID: "x", Version: 2, CreateTime: testStart, UpdateTime: testStart}
	target := kubeapplier.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "foo"}
	del := &kubeapplier.ApplyDesire{DynamoDBMetadata: meta}
	del.Spec.ManagementCluster, del.Spec.Type, del.Spec.TargetItem = testCluster, api.ApplyTypeDelete, &target
	ssa := &kubeapplier.ApplyDesire{DynamoDBMetadata: meta}
	ssa.Spec.ManagementCluster, ssa.Spec.KubeContent = testCluster, []byte(`{"apiVersion":"v1","kind":"ConfigMap"}`)
	// status is the applier's status document of spec as of version (its spec copied, no
	// kubeContent); stripped leaves the spec out.
	status := func(spec *kubeapplier.ApplyDesire, version int64, stripped bool) kubeapplier.Desire {
		d := &kubeapplier.ApplyDesire{}
		if !stripped {
			d.Spec = spec.Spec
			d.Spec.KubeContent = nil
		}
		d.DynamoDBMetadata = kubeapplier.DynamoDBMetadata{DocumentID: "x", Version: version, CreateTime: testStart, UpdateTime: testStart.Add(time.Duration(version) * time.Minute)}
		okOutcome.set(d)
		return d
	}
	for _, tc := range []struct {
		name   string
		waited *kubeapplier.ApplyDesire
		status kubeapplier.Desire
		want   waitState
	}{
		{"a Delete, its own success", del, status(del, 2, false), waitMet},
		{"a Delete, a later Delete's success", del, status(del, 3, false), waitMet},
		{"a Delete, a later apply's success", del, status(ssa, 3, false), waitFailed},
		{"an apply, a later Delete's success", ssa, status(del, 3, false), waitFailed},
		{"an apply, a later apply's success", ssa, status(ssa, 3, false), waitMet},
		{"a Delete, a later status without its spec", del, status(ssa, 3, true), waitMet},
		{"a Delete, the earlier apply's status: not answered yet", del, status(ssa, 1, false), waitPending},
		{"an apply, the earlier Delete's status: not answered yet", ssa, status(del, 1, false), waitPending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWaitItem(nil, tc.waited, "ConfigMap default/foo")
			if got := w.evaluate(tc.status, successfulTrue); got != tc.want {
				t.Fatalf("evaluate = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRemoveFolded: in the folded layout a deletion is the object's ApplyDesire of type
// Delete, so remove --kind delete removes that ApplyDesire (the object is no longer deleted),
// and fails (exit 1, nothing removed) when the object's ApplyDesire is an apply: it never
// reports success for a kind that has no tables without removing anything.
func TestRemoveFolded(t *testing.T) {
	target := kubeapplier.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "foo"}
	id := kubeapplier.DesireID(testCluster, target)
	for _, tc := range []struct {
		name     string
		setup    []string // "apply", "delete", in order
		kind     string
		wantCode int
		wantOut  string
		wantErr  string
		left     bool // the ApplyDesire is still there
	}{
		{"a folded Delete", []string{"apply", "delete"}, "delete", 0,
			"applydesire/" + id + " removed (ConfigMap default/foo)\n", "", false},
		{"an apply, --kind delete", []string{"apply"}, "delete", exitFailed,
			"", "error: applydesire/" + id + " of spec.type Delete (ConfigMap default/foo) not found\n", true},
		{"nothing, --kind delete", nil, "delete", exitFailed,
			"", "error: applydesire/" + id + " of spec.type Delete (ConfigMap default/foo) not found\n", false},
		{"a folded Delete, --kind apply", []string{"apply", "delete"}, "apply", 0,
			"applydesire/" + id + " removed (ConfigMap default/foo)\n", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.mustRun("config", "set-context", "test", "--folded-deletes")
			h.db.SetMissing(tableName(api.SpecsTable, kubeapplier.KindDeleteDesire))
			h.db.SetMissing(tableName(api.StatusTable, kubeapplier.KindDeleteDesire))
			cm := h.writeFile("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: foo\n  namespace: default\n")
			for _, s := range tc.setup {
				if s == "apply" {
					h.mustRun("apply", "-f", cm)
				} else {
					h.mustRun("delete", "configmaps", "foo")
				}
			}
			out, errOut, code := h.run("remove", "configmaps", "foo", "-n", "default", "--kind", tc.kind)
			assertExit(t, code, tc.wantCode, errOut)
			if out != tc.wantOut || errOut != tc.wantErr {
				t.Fatalf("stdout:\n%s\nwant:\n%s\nstderr:\n%s\nwant:\n%s", out, tc.wantOut, errOut, tc.wantErr)
			}
			if left := len(h.specIDs(kubeapplier.KindApplyDesire)) > 0; left != tc.left {
				t.Fatalf("ApplyDesire left: %v, want %v", left, tc.left)
			}
		})
	}
}

// TestKindDeleteFolded: in the folded layout --kind delete names the ApplyDesires of type
// Delete (there is no DeleteDesire table): get lists them, wait waits on them; an ApplyDesire
// that applies is no delete.
func TestKindDeleteFolded(t *testing.T) {
	target := kubeapplier.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "foo"}
	id := kubeapplier.DesireID(testCluster, target)
	for _, tc := range []struct {
		name     string
		deleted  bool // delete written after the apply
		args     []string
		wantCode int
		wantOut  string // contained in stdout
		wantErr  string // contained in stderr
	}{
		{"get, a folded Delete", true, []string{"get", "configmaps", "--kind", "delete"}, 0, "ApplyDesire/Delete", ""},
		{"get, an apply", false, []string{"get", "configmaps", "--kind", "delete"}, 0, "", "No resources found."},
		{"wait, a folded Delete", true, []string{"wait", "configmaps", "foo", "-n", "default", "--kind", "delete", "--timeout", "1s"}, 0,
			"applydesire/" + id + " condition met", ""},
		{"wait, an apply", false, []string{"wait", "configmaps", "foo", "-n", "default", "--kind", "delete", "--timeout", "1s"}, exitFailed,
			"", "applydesire/" + id + " of spec.type Delete (ConfigMap default/foo) not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.mustRun("config", "set-context", "test", "--folded-deletes")
			h.db.SetMissing(tableName(api.SpecsTable, kubeapplier.KindDeleteDesire))
			h.db.SetMissing(tableName(api.StatusTable, kubeapplier.KindDeleteDesire))
			cm := h.writeFile("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: foo\n  namespace: default\n")
			h.mustRun("apply", "-f", cm)
			version := int64(1)
			if tc.deleted {
				h.mustRun("delete", "configmaps", "foo")
				version = 2
			}
			h.writeStatus(kubeapplier.KindApplyDesire, id, version, okOutcome)
			out, errOut, code := h.run(tc.args...)
			assertExit(t, code, tc.wantCode, errOut)
			if !strings.Contains(out, tc.wantOut) || !strings.Contains(errOut, tc.wantErr) {
				t.Fatalf("stdout:\n%s\nwant it to contain %q\nstderr:\n%s\nwant it to contain %q", out, tc.wantOut, errOut, tc.wantErr)
			}
		})
	}
}
