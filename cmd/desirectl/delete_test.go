package main

import (
	"context"
	"strings"
	"testing"

	"github.com/kube-applier-aws/kubeapplier"
)

func TestDelete(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    func(h *harness) []string
		targets []kubeapplier.TargetItem
		labels  []string
	}{
		{"type name", func(*harness) []string { return []string{"configmaps", "foo"} },
			[]kubeapplier.TargetItem{{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "foo"}},
			[]string{"ConfigMap default/foo"}},
		{"qualified type with namespace", func(*harness) []string { return []string{"deployments.apps", "web", "-n", "shop"} },
			[]kubeapplier.TargetItem{{Group: "apps", Version: "v1", Resource: "deployments", Namespace: "shop", Name: "web"}},
			[]string{"Deployment shop/web"}},
		{"cluster-scoped ignores namespace", func(*harness) []string { return []string{"ns", "shop", "-n", "x"} },
			[]kubeapplier.TargetItem{{Version: "v1", Resource: "namespaces", Name: "shop"}},
			[]string{"Namespace shop"}},
		{"file", func(h *harness) []string { return []string{"-f", h.writeFile("objs.yaml", multiDoc)} },
			[]kubeapplier.TargetItem{
				{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "foo"},
				{Group: "apps", Version: "v1", Resource: "deployments", Namespace: "shop", Name: "web"},
				{Version: "v1", Resource: "namespaces", Name: "shop"}},
			[]string{"ConfigMap default/foo", "Deployment shop/web", "Namespace shop"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			out := h.mustRun(append([]string{"delete"}, tc.args(h)...)...)
			var want string
			tbl := specs[*kubeapplier.DeleteDesire](h, kubeapplier.KindDeleteDesire)
			for i, target := range tc.targets {
				did := kubeapplier.DesireID(testCluster, target)
				want += "deletedesire/" + did + " created (" + tc.labels[i] + ")\n"
				d, err := tbl.Get(context.Background(), did)
				if err != nil {
					t.Fatal(err)
				}
				if d.Version != 1 || d.Spec != (kubeapplier.DeleteDesireSpec{CommonSpec: testCommon, TargetItem: target}) {
					t.Fatalf("DeleteDesire %s: version %d spec %+v", did, d.Version, d.Spec)
				}
			}
			if out != want {
				t.Fatalf("stdout:\n%s\nwant:\n%s", out, want)
			}
			// Deleting again finds the desire as it would write it: nothing is written.
			writes := h.db.Writes()
			out = h.mustRun(append([]string{"delete"}, tc.args(h)...)...)
			if want := strings.ReplaceAll(want, " created (", " unchanged ("); out != want || h.db.Writes() != writes {
				t.Fatalf("second delete: %d writes, stdout:\n%s\nwant:\n%s", h.db.Writes()-writes, out, want)
			}
			if v := h.specVersion(kubeapplier.KindDeleteDesire, kubeapplier.DesireID(testCluster, tc.targets[0])); v != 1 {
				t.Fatalf("version %d after a second delete", v)
			}
		})
	}
}

func TestDeleteWait(t *testing.T) {
	h := newHarness(t)
	h.clock.onSleep = func(n int) {
		switch n {
		case 1:
			h.writeStatus(kubeapplier.KindDeleteDesire, idFoo, 1, outcome{reason: kubeapplier.ReasonWaitingForDeletion, message: "waiting for finalizers: x"})
		case 2:
			h.writeStatus(kubeapplier.KindDeleteDesire, idFoo, 1, outcome{successful: true, reason: kubeapplier.ReasonNoErrors, message: "gone"})
		}
	}
	out, errOut, code := h.run("delete", "configmaps", "foo", "--wait")
	assertExit(t, code, 0, errOut)
	if want := "deletedesire/" + idFoo + " created (ConfigMap default/foo)\ndeletedesire/" + idFoo + " condition met\n"; out != want {
		t.Fatalf("stdout:\n%s\nwant:\n%s", out, want)
	}
	if h.clock.sleeps != 2 {
		t.Fatalf("%d polls", h.clock.sleeps)
	}
}

func TestDeleteUsage(t *testing.T) {
	for _, args := range [][]string{
		{"delete"},
		{"delete", "configmaps"},
		{"delete", "configmaps", "foo", "-f", "x.yaml"},
		{"delete", "a", "b", "c"},
	} {
		h := newHarness(t)
		_, errOut, code := h.run(args...)
		assertExit(t, code, exitUsage, errOut)
	}
}

func TestDeleteRemovesTheApplyDesire(t *testing.T) {
	h := newHarness(t)
	h.mustRun("apply", "-f", h.writeFile("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: foo\n  namespace: default\n"))
	id := kubeapplier.DesireID(testCluster, kubeapplier.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "foo"})
	out := h.mustRun("delete", "configmaps", "foo")
	want := "applydesire/" + id + " deleted (ConfigMap default/foo)\ndeletedesire/" + id + " created (ConfigMap default/foo)\n"
	if out != want {
		t.Fatalf("stdout:\n%s\nwant:\n%s", out, want)
	}
	if _, err := specs[*kubeapplier.ApplyDesire](h, kubeapplier.KindApplyDesire).Get(context.Background(), id); !kubeapplier.IsNotFoundError(err) {
		t.Fatalf("ApplyDesire still there: %v", err)
	}
}
