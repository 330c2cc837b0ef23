package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
)

// On the local stack with a running applier: apply of an unchanged manifest writes nothing
// (the spec keeps its version, the applier writes no status), and read of a Secret prints
// the values the applier redacted as <redacted>.
func TestIntegrationApplyUnchangedReadSecret(t *testing.T) {
	s := newE2EStack(t, "u")
	ctx := t.Context()
	runbookApplier(t, s, &syncBuffer{}, prometheus.NewRegistry())
	s.useContext(ctx, t)

	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: same\ndata:\n  a: \"1\"\n  b: \"2\"\n"
	out := s.mustRun(ctx, t, cm, "apply", "-f", "-", "-n", s.ns, "--wait", "--timeout", "60s")
	m := writtenID.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("apply: %q", out)
	}
	id := m[2]
	specs := tables.New[*kubeapplier.ApplyDesire](s.db, api.TableName(s.prefix, e2eCluster, api.SpecsTable, kubeapplier.KindApplyDesire))
	statuses := tables.New[*kubeapplier.ApplyDesire](s.db, api.TableName(s.prefix, e2eCluster, api.StatusTable, kubeapplier.KindApplyDesire))
	status, err := statuses.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	// The same object, written otherwise: unchanged, and --wait is answered by the status
	// already there.
	out = s.mustRun(ctx, t, "kind: ConfigMap\napiVersion: v1\ndata: {b: \"2\", a: \"1\"}\nmetadata: {name: same}\n",
		"apply", "-f", "-", "-n", s.ns, "--wait", "--timeout", "60s")
	if !strings.Contains(out, "applydesire/"+id+" unchanged (ConfigMap "+s.ns+"/same)\n") || !strings.Contains(out, " condition met\n") {
		t.Fatalf("second apply: %q", out)
	}
	time.Sleep(2 * time.Second) // a reconcile the second apply caused would have written by now
	spec, err := specs.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	after, err := statuses.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Version != 1 || after.Version != status.Version || !after.UpdateTime.Equal(status.UpdateTime) {
		t.Fatalf("after an unchanged apply: spec version %d (want 1), status version %d at %s (was %d at %s)",
			spec.Version, after.Version, after.UpdateTime, status.Version, status.UpdateTime)
	}
	s.mustRun(ctx, t, "", "remove", "configmaps", "same", "-n", s.ns, "--kind", "apply")

	// A Secret read through a ReadDesire: its values are redacted by the applier, and read
	// says so.
	kc, err := kubernetes.NewForConfig(s.restCfg)
	if err != nil {
		t.Fatal(err)
	}
	kctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := kc.CoreV1().Secrets(s.ns).Create(kctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"},
		Data: map[string][]byte{"password": []byte("hunter2-secret")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := s.run(ctx, t, "", "read", "secrets", "creds", "-n", s.ns, "--timeout", "60s")
	if code != 0 {
		t.Fatalf("read: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "  password: <redacted>\n") || strings.Contains(out, api.RedactedValue) ||
		strings.Contains(out, "aHVudGVyMi1zZWNyZXQ=") {
		t.Fatalf("read of a Secret:\n%s", out)
	}
	if want := "warning: the applier redacted 1 values of Secret " + s.ns + "/creds (data.password): "; !strings.HasPrefix(errOut, want) {
		t.Fatalf("stderr %q, want it to start %q", errOut, want)
	}
}
