package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/kube-applier-aws/kubeapplier"
)

// TestRemove: remove deletes the desires of the kinds asked for (spec documents only), and
// get --kind lists one kind.
func TestRemove(t *testing.T) {
	for _, tc := range []struct {
		name     string
		setup    []string // desires written first: "read", "delete", "apply"
		args     []string
		wantCode int
		wantOut  string
		wantErr  string
		left     []kubeapplier.DesireKind
	}{
		{"read", []string{"read", "delete"}, []string{"--kind", "read"}, 0,
			"readdesire/" + idFoo + " removed (ConfigMap default/foo)\n", "", []kubeapplier.DesireKind{kubeapplier.KindDeleteDesire}},
		{"list of kinds", []string{"read", "delete"}, []string{"--kind", "delete,read"}, 0,
			"deletedesire/" + idFoo + " removed (ConfigMap default/foo)\nreaddesire/" + idFoo + " removed (ConfigMap default/foo)\n", "", nil},
		{"all, one missing", []string{"apply", "read"}, []string{"--kind", "all"}, exitFailed,
			"applydesire/" + idFoo + " removed (ConfigMap default/foo)\nreaddesire/" + idFoo + " removed (ConfigMap default/foo)\n",
			"error: deletedesire/" + idFoo + " (ConfigMap default/foo) not found\n", nil},
		{"none", nil, []string{"--kind", "read"}, exitFailed, "", "error: readdesire/" + idFoo + " (ConfigMap default/foo) not found\n", nil},
		{"kind required", []string{"read"}, nil, exitUsage, "",
			"error: --kind is required: read, delete, apply, a comma-separated list, or all\n", []kubeapplier.DesireKind{kubeapplier.KindReadDesire}},
		{"bad kind", []string{"read"}, []string{"--kind", "reads"}, exitUsage, "",
			"error: --kind must be apply, delete, read or all, not \"reads\"\n", []kubeapplier.DesireKind{kubeapplier.KindReadDesire}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			file := h.writeFile("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: foo}\n")
			for _, k := range tc.setup {
				switch k {
				case "read":
					h.keptRead("foo")
				case "delete":
					h.mustRun("delete", "configmaps", "foo")
				case "apply":
					h.mustRun("apply", "-f", file)
				}
			}
			out, errOut, code := h.run(append([]string{"remove", "configmaps", "foo"}, tc.args...)...)
			assertExit(t, code, tc.wantCode, errOut)
			if out != tc.wantOut || errOut != tc.wantErr {
				t.Fatalf("stdout:\n%s\nwant:\n%s\nstderr:\n%s\nwant:\n%s", out, tc.wantOut, errOut, tc.wantErr)
			}
			for _, k := range kubeapplier.DesireKinds {
				want := false
				for _, l := range tc.left {
					want = want || l == k
				}
				if got := len(h.specIDs(k)) > 0; got != want {
					t.Errorf("%s left: %v, want %v", k, got, want)
				}
			}
		})
	}
}

func TestGetKindFilter(t *testing.T) {
	h := newHarness(t)
	h.keptRead("foo")
	h.mustRun("delete", "configmaps", "bar")
	out := h.mustRun("get", "configmaps", "--kind", "read")
	if !strings.Contains(out, "ReadDesire") || strings.Contains(out, "DeleteDesire") {
		t.Fatalf("get --kind read:\n%s", out)
	}
	out = h.mustRun("get", "configmaps")
	if !strings.Contains(out, "ReadDesire") || !strings.Contains(out, "DeleteDesire") {
		t.Fatalf("get:\n%s", out)
	}
}

// An apply whose first step (removing the object's DeleteDesire) fails names the
// ApplyDesire it is about first.
func TestApplyErrorNamesItsKind(t *testing.T) {
	h := newHarness(t)
	file := h.writeFile("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: foo}\n")
	h.mustRun("delete", "configmaps", "foo")
	h.db.FailNext("DeleteItem", errors.New("dial tcp 127.0.0.1:1: connect: connection refused"))
	_, errOut, code := h.run("apply", "-f", file)
	assertExit(t, code, exitFailed, errOut)
	want := "error: applydesire/" + idFoo + " (ConfigMap default/foo): removing deletedesire/" + idFoo + " of the same object first: "
	if !strings.HasPrefix(errOut, want) {
		t.Fatalf("stderr %q, want it to start %q", errOut, want)
	}
}

// keptRead runs 'read --keep' of ConfigMap name (default), answered by a fake status.
func (h *harness) keptRead(name string) {
	h.t.Helper()
	idName := id("", "v1", "configmaps", "default", name)
	h.clock.onSleep = func(int) {
		h.writeStatus(kubeapplier.KindReadDesire, idName, h.specVersion(kubeapplier.KindReadDesire, idName),
			outcome{successful: true, reason: kubeapplier.ReasonNoErrors, content: liveFoo})
	}
	h.mustRun("read", "configmaps", name, "--keep")
	h.clock.onSleep = nil
}
