package main

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
)

// On the local stack with a running applier: apply with option flags stores them in the spec
// (read back from DynamoDB Local, as the applier reads them), the applier answers that spec,
// the same manifest with the same flags is unchanged (the decoded options compare equal to
// the flags'), get -o yaml prints them, a change of options alone is a new version, and a
// value the applier would refuse is refused before any write. What each option does to the
// object is the option's own integration test (integration_<option>_test.go in the root).
func TestIntegrationApplyOptions(t *testing.T) {
	s := newE2EStack(t, "o")
	ctx := t.Context()
	runbookApplier(t, s, &syncBuffer{}, prometheus.NewRegistry())
	s.useContext(ctx, t)

	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: opts\ndata:\n  a: \"1\"\n  b: \"2\"\n"
	opts := []string{"--owner", "team-o", "--force-conflicts=false", "--ignore-fields", "OnTargetChange=/data/b",
		"--yield-to-manager", "someone-else", "--feedback", "a=.data.a", "--apply-policy", "ServerSideApply"}
	args := append([]string{"apply", "-f", "-", "-n", s.ns, "--wait", "--timeout", "60s"}, opts...)
	out := s.mustRun(ctx, t, cm, args...)
	m := writtenID.FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, " condition met\n") {
		t.Fatalf("apply: %q", out)
	}
	id := m[2]
	specs := tables.New[*kubeapplier.ApplyDesire](s.db, api.TableName(s.prefix, e2eCluster, api.SpecsTable, kubeapplier.KindApplyDesire))
	spec, err := specs.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	sp := spec.Spec
	if sp.Owner != "team-o" || sp.ForcesConflicts() || sp.ApplyPolicy != "" || len(sp.IgnoreFields) != 1 ||
		sp.IgnoreFields[0].Condition != api.IgnoreOnTargetChange || len(sp.YieldToManagers) != 1 ||
		sp.StatusFeedback == nil || len(sp.StatusFeedback.JSONPaths) != 1 || len(sp.UnknownAttributes()) != 0 {
		t.Fatalf("stored spec options %+v", sp)
	}

	// The same flags again: unchanged, version 1.
	out = s.mustRun(ctx, t, cm, args...)
	if !strings.Contains(out, "applydesire/"+id+" unchanged (ConfigMap "+s.ns+"/opts)\n") {
		t.Fatalf("second apply: %q", out)
	}
	out = s.mustRun(ctx, t, "", "get", "configmaps", "opts", "-n", s.ns, "-o", "yaml")
	for _, want := range []string{"owner: team-o", "forceConflicts: false", "condition: OnTargetChange", "- someone-else", "path: .data.a"} {
		if !strings.Contains(out, want) {
			t.Fatalf("get -o yaml lacks %q:\n%s", want, out)
		}
	}

	// A bad value: exit 2, nothing written.
	_, errOut, code := s.run(ctx, t, cm, "apply", "-f", "-", "-n", s.ns, "--apply-policy", "Replace")
	if code != exitUsage || !strings.Contains(errOut, `spec.applyPolicy is "Replace"`) {
		t.Fatalf("apply --apply-policy Replace: exit %d, %q", code, errOut)
	}
	time.Sleep(500 * time.Millisecond)
	if spec, err = specs.Get(ctx, id); err != nil || spec.Version != 1 {
		t.Fatalf("after the refused apply: %+v, %v", spec, err)
	}

	// The options dropped: a new version, answered.
	out = s.mustRun(ctx, t, cm, "apply", "-f", "-", "-n", s.ns, "--wait", "--timeout", "60s")
	if !strings.Contains(out, "applydesire/"+id+" configured (ConfigMap "+s.ns+"/opts)\n") || !strings.Contains(out, " condition met\n") {
		t.Fatalf("apply without options: %q", out)
	}
	if spec, err = specs.Get(ctx, id); err != nil || spec.Version != 2 || spec.Spec.Owner != "" || spec.Spec.StatusFeedback != nil {
		t.Fatalf("after the apply without options: %+v, %v", spec, err)
	}
	s.mustRun(ctx, t, "", "remove", "configmaps", "opts", "-n", s.ns, "--kind", "apply")
}
