package main

import (
	"strings"
	"testing"
	"time"

	"github.com/kube-applier-aws/kubeapplier"
)

func TestUsageErrorsExit2(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		setup   func(h *harness)
		wantErr string
	}{
		{"unknown command", []string{"patch"}, nil, `error: unknown command "patch" for "desirectl"` + "\n"},
		{"unknown flag", []string{"get", "cm", "--bogus"}, nil, "error: unknown flag: --bogus\n"},
		{"missing type", []string{"get"}, nil, "error: get needs TYPE [NAME] or --all-kinds; see 'desirectl get --help'\n"},
		{"bad output", []string{"get", "cm", "-o", "xml"}, nil, "error: --output must be wide, yaml or json, not \"xml\"\n"},
		{"read bad output", []string{"read", "cm", "foo", "-o", "wide"}, nil, "error: --output must be yaml or json, not \"wide\"\n"},
		{"apply without -f", []string{"apply"}, nil, "error: -f is required\n"},
		{"apply missing file", []string{"apply", "-f", "/nonexistent.yaml"}, nil, "error: stat /nonexistent.yaml: no such file or directory\n"},
		{"apply with args", []string{"apply", "x"}, nil, "error: unknown command \"x\" for \"desirectl apply\"; see 'desirectl apply --help'\n"},
		{"no context", []string{"get", "cm"}, func(h *harness) { h.mustRun("config", "delete-context", "test") },
			"error: no management cluster: create a context with 'desirectl config set-context NAME --management-cluster MC ...' and 'desirectl config use-context NAME', or pass --management-cluster\n"},
		{"no task key", []string{"delete", "cm", "foo"}, func(h *harness) {
			h.mustRun("config", "set-context", "bare", "--management-cluster", testMC)
			h.mustRun("config", "use-context", "bare")
		}, "error: no task key: set --task-key or --cluster-id, or the context's task-key or cluster-id\n"},
		{"unknown type", []string{"delete", "widgets", "w"}, nil, "error: the server doesn't have a resource type \"widgets\"\n"},
		{"bad config file", []string{"get", "cm"}, func(h *harness) { h.writeFile("config.yaml", "contexts: 3\n") }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			if tc.setup != nil {
				tc.setup(h)
			}
			out, errOut, code := h.run(tc.args...)
			assertExit(t, code, exitUsage, errOut)
			if tc.wantErr != "" && errOut != tc.wantErr {
				t.Fatalf("stderr %q, want %q", errOut, tc.wantErr)
			}
			if strings.Count(errOut, "\n") != 1 || out != "" {
				t.Fatalf("stdout %q stderr %q: want one error line only", out, errOut)
			}
		})
	}
}

func TestHelpDocumentsExitCodes(t *testing.T) {
	h := newHarness(t)
	out := h.mustRun("--help")
	for _, want := range []string{"Exit codes:", "  0  success", "  1  the operation failed", "  2  usage or configuration error"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q", want)
		}
	}
	for _, cmd := range []string{"apply", "get", "read", "delete", "wait", "config"} {
		if !strings.Contains(out, "\n  "+cmd+" ") {
			t.Errorf("help lacks command %s", cmd)
		}
	}
}

func TestGuessPlural(t *testing.T) {
	for kind, want := range map[string]string{
		"ConfigMap": "configmaps", "NetworkPolicy": "networkpolicies", "Ingress": "ingresses", "Box": "boxes",
		"Patch": "patches", "Mesh": "meshes", "Gateway": "gateways", "Endpoints": "endpoints", "Quiz": "quizes",
		"Prometheus": "prometheuses", "Deployment": "deployments",
	} {
		if got := guessPlural(kind); got != want {
			t.Errorf("guessPlural(%s) = %s, want %s", kind, got, want)
		}
	}
}

func TestParseFor(t *testing.T) {
	for in, want := range map[string]conditionWant{
		"condition=Successful":       successfulTrue,
		"condition=successful=true":  successfulTrue,
		"condition=Degraded=False":   {kubeapplier.ConditionDegraded, kubeapplier.ConditionFalse},
		"condition=Custom=Unknown":   {"Custom", kubeapplier.ConditionUnknown},
		"condition=Successful=false": {kubeapplier.ConditionSuccessful, kubeapplier.ConditionFalse},
	} {
		got, err := parseFor(in)
		if err != nil || got != want {
			t.Errorf("parseFor(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "delete", "condition=", "condition=Successful=maybe"} {
		if _, err := parseFor(in); exitCode(err, 0) != exitUsage {
			t.Errorf("parseFor(%q): %v, want a usage error", in, err)
		}
	}
}

func TestEvaluate(t *testing.T) {
	spec := &kubeapplier.DynamoDBMetadata{DocumentID: "x", Version: 2, UpdateTime: testStart}
	// status is a status document computed at version for the spec written at updated.
	status := func(version int64, updated time.Time, o outcome) kubeapplier.Desire {
		d := &kubeapplier.ApplyDesire{}
		d.Version, d.UpdateTime = version, updated
		o.set(d)
		return d
	}
	at := func(version int64, o outcome) kubeapplier.Desire { return status(version, testStart, o) }
	withoutUpdateTime := at(2, okOutcome)
	withoutUpdateTime.StatusCommon().ObservedDesireUpdateTime = ""
	notServed := kubeapplier.ErrKindNotServed.Error() + ": kind example.com/v1, Kind=Gizmo is not known to the cluster"
	for _, tc := range []struct {
		name string
		d    kubeapplier.Desire
		want waitState
	}{
		{"no status", nil, waitPending},
		{"stale success", at(1, okOutcome), waitPending},
		{"success", at(2, okOutcome), waitMet},
		{"newer success", status(3, testStart.Add(time.Minute), okOutcome), waitMet},
		// The spec was deleted and written again: version 2 of the new one, while the status
		// still answers version 3 of the old one.
		{"success of an earlier incarnation", status(3, testStart.Add(-time.Hour), okOutcome), waitPending},
		{"failure of an earlier incarnation", status(2, testStart.Add(-time.Hour), outcome{reason: kubeapplier.ReasonPreCheckFailed}), waitPending},
		{"status without observedDesireUpdateTime", withoutUpdateTime, waitMet},
		{"precheck", at(2, outcome{reason: kubeapplier.ReasonPreCheckFailed, message: "bad"}), waitFailed},
		// The verdict's reason decides, never its message.
		{"precheck naming an unserved kind", at(2, outcome{reason: kubeapplier.ReasonPreCheckFailed, message: notServed}), waitFailed},
		{"kind not served", at(2, outcome{reason: kubeapplier.ReasonKindNotServed, message: notServed}), waitPending},
		{"degraded", at(2, outcome{degraded: true, reason: kubeapplier.ReasonKubeAPIError}), waitPending},
		{"degraded precheck", at(2, outcome{degraded: true, reason: kubeapplier.ReasonPreCheckFailed}), waitPending},
		{"kube error", at(2, outcome{reason: kubeapplier.ReasonKubeAPIError}), waitFailed},
		{"content too large", at(2, outcome{reason: kubeapplier.ReasonContentTooLarge}), waitFailed},
		{"waiting for deletion", at(2, outcome{reason: kubeapplier.ReasonWaitingForDeletion}), waitPending},
	} {
		if got := evaluate(tc.d, spec, successfulTrue); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// --version prints one line: the program, the module version and the build's commit (the
// commit itself is checked on a real build by cmd/kube-applier-aws's TestBinaries).
func TestVersion(t *testing.T) {
	h := newHarness(t)
	out := h.mustRun("--version")
	if !strings.HasPrefix(out, "desirectl version ") || !strings.Contains(out, "(github.com/kube-applier-aws/kubeapplier, commit ") ||
		strings.Count(out, "\n") != 1 {
		t.Fatalf("--version printed %q", out)
	}
}
