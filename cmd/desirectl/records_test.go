package main

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/kube-applier-aws/kubeapplier"
)

// Every runnable command takes -o (a command group only prints help).
func TestEveryCommandTakesOutput(t *testing.T) {
	a := newApp(strings.NewReader(""), io.Discard, io.Discard)
	a.setupLogs = testLogs // klog stays on e2eKlog (integration_test.go)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			if sub.HasSubCommands() {
				walk(sub)
				continue
			}
			if sub.Flags().Lookup("output") == nil {
				t.Errorf("%s has no -o/--output", sub.CommandPath())
			}
		}
	}
	walk(a.newRootCommand())
}

// TestOutputRecords: the commands that print lines print, with -o json or yaml, one list of
// records instead (also when the command fails afterwards).
func TestOutputRecords(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(h *harness)
		args  []string
		code  int
		want  []outputRecord
	}{
		{"apply", nil, []string{"apply", "-f", "cm.yaml"}, 0,
			[]outputRecord{{Event: "created", Desire: "applydesire/" + idFoo, Object: "ConfigMap default/foo"}}},
		{"delete replaces the apply", func(h *harness) { h.mustRun("apply", "-f", h.dir+"/cm.yaml") }, []string{"delete", "configmaps", "foo"}, 0,
			[]outputRecord{{Event: "deleted", Desire: "applydesire/" + idFoo, Object: "ConfigMap default/foo"},
				{Event: "created", Desire: "deletedesire/" + idFoo, Object: "ConfigMap default/foo"}}},
		{"apply --wait", func(h *harness) {
			h.clock.onSleep = func(int) {
				h.writeStatus(kubeapplier.KindApplyDesire, idFoo, h.specVersion(kubeapplier.KindApplyDesire, idFoo), okOutcome)
			}
		}, []string{"apply", "-f", "cm.yaml", "--wait"}, 0,
			[]outputRecord{{Event: "created", Desire: "applydesire/" + idFoo, Object: "ConfigMap default/foo"},
				{Event: "condition met", Desire: "applydesire/" + idFoo, Object: "ConfigMap default/foo", Detail: "Successful=True"}}},
		{"remove, partly failing", func(h *harness) { h.keptRead("foo") }, []string{"remove", "configmaps", "foo", "--kind", "read,delete"}, exitFailed,
			[]outputRecord{{Event: "removed", Desire: "readdesire/" + idFoo, Object: "ConfigMap default/foo"}}},
		{"use-context", nil, []string{"config", "use-context", "test"}, 0, []outputRecord{{Event: "switched", Context: "test"}}},
		{"current-context", nil, []string{"config", "current-context"}, 0, []outputRecord{{Event: "current", Context: "test"}}},
		{"set-context", nil, []string{"config", "set-context", "other", "--management-cluster", "mc9"}, 0, []outputRecord{{Event: "created", Context: "other"}}},
	} {
		for _, format := range []string{"json", "yaml"} {
			t.Run(tc.name+"/"+format, func(t *testing.T) {
				h := newHarness(t)
				h.writeFile("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: foo}\n")
				if tc.setup != nil {
					tc.setup(h)
				}
				args := append([]string{}, tc.args...)
				for i, a := range args {
					if a == "cm.yaml" {
						args[i] = h.dir + "/cm.yaml"
					}
				}
				out, errOut, code := h.run(append(args, "-o", format)...)
				assertExit(t, code, tc.code, errOut)
				data := []byte(out)
				if format == "yaml" {
					var err error
					if data, err = yaml.YAMLToJSON(data); err != nil {
						t.Fatalf("not YAML: %v\n%s", err, out)
					}
				}
				var got []outputRecord
				if err := json.Unmarshal(data, &got); err != nil {
					t.Fatalf("not a list of records: %v\n%s", err, out)
				}
				if len(got) != len(tc.want) {
					t.Fatalf("records %+v, want %+v", got, tc.want)
				}
				for i := range got {
					if got[i] != tc.want[i] {
						t.Fatalf("record %d: %+v, want %+v", i, got[i], tc.want[i])
					}
				}
			})
		}
	}
}

func TestOutputStructuredOthers(t *testing.T) {
	h := newHarness(t)
	out := h.mustRun("config", "get-contexts", "-o", "yaml")
	if !strings.Contains(out, "current-context: test\n") || !strings.Contains(out, "management-cluster: "+testMC) {
		t.Fatalf("get-contexts -o yaml:\n%s", out)
	}
	if _, errOut, code := h.run("apply", "-f", "x.yaml", "-o", "wide"); code != exitUsage || errOut != "error: --output must be json or yaml, not \"wide\"\n" {
		t.Fatalf("apply -o wide: exit %d, %q", code, errOut)
	}
}
