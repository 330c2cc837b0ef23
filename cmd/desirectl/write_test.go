package main

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
)

// R1: a stored ApplyDesire that does not decode (e.g. a backend wrote a broken kubeContent)
// blocks `desirectl delete` of the object: write.go now Gets (decodes) the opposite spec
// before deleting it, where it used to delete it unconditionally.
func TestDeleteOverUndecodableApplyDesire(t *testing.T) {
	h := newHarness(t)
	file := h.writeFile("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: foo}\ndata: {a: '1'}\n")
	h.mustRun("apply", "-f", file)
	d := h.applySpec(idFoo)
	item, err := api.EncodeItem(d)
	if err != nil {
		t.Fatal(err)
	}
	item["spec_kubeContent"] = &types.AttributeValueMemberS{Value: `{"apiVersion":"v1","kind":"ConfigMap"`} // truncated
	h.db.PutRaw(tableName(api.SpecsTable, kubeapplier.KindApplyDesire), item)
	out, errOut, code := h.run("delete", "-f", file)
	if code != 0 {
		t.Fatalf("delete over a broken ApplyDesire: exit %d, stdout %q stderr %q", code, out, errOut)
	}
}

// R2: after the applier answered version N with a verdict it retries only on a new spec
// (e.g. Refused by an admission webhook since fixed), `desirectl apply --wait` of the same
// manifest no longer writes a new version: it prints "unchanged" and fails at once with the
// old verdict; nothing but editing the manifest or waiting for the resync retries it.
func TestReapplyAfterAFailedVerdictWritesAgain(t *testing.T) {
	h := newHarness(t)
	file := h.writeFile("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: foo}\ndata: {a: '1'}\n")
	h.mustRun("apply", "-f", file)
	h.writeStatus(kubeapplier.KindApplyDesire, idFoo, 1, outcome{reason: kubeapplier.ReasonPreCheckFailed, message: "admission webhook denied the request"})
	out, errOut, code := h.run("apply", "-f", file, "--wait", "--timeout", "5s")
	t.Logf("stdout %q stderr %q exit %d version %d", out, errOut, code, h.specVersion(kubeapplier.KindApplyDesire, idFoo))
	if strings.Contains(out, "unchanged") || h.specVersion(kubeapplier.KindApplyDesire, idFoo) != 2 {
		t.Fatalf("re-apply after a permanent failure wrote no new version: the applier never retries")
	}
	_ = context.Background()
}

// A spec a newer backend wrote with options this desirectl does not know is never rewritten
// (apply of the same or of an edited manifest, read, delete): EncodeItem would drop them, and
// a newer "suspend: true" would become a write.
func TestNoRewriteOverSpecAttributesOfANewerBackend(t *testing.T) {
	h := newHarness(t)
	file := h.writeFile("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: foo}\ndata: {a: '1'}\n")
	h.mustRun("apply", "-f", file)
	item, err := api.EncodeItem(h.applySpec(idFoo))
	if err != nil {
		t.Fatal(err)
	}
	item["spec"].(*types.AttributeValueMemberM).Value["suspend"] = &types.AttributeValueMemberBOOL{Value: true}
	table := tableName(api.SpecsTable, kubeapplier.KindApplyDesire)
	h.db.PutRaw(table, item)
	edited := h.writeFile("cm2.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: foo}\ndata: {a: '2'}\n")
	for _, f := range []string{file, edited} {
		out, errOut, code := h.run("apply", "-f", f)
		if code == 0 || !strings.Contains(errOut, "suspend") {
			t.Errorf("apply -f %s over a spec with suspend: exit %d, stdout %q stderr %q; want a failure naming suspend", f, code, out, errOut)
		}
		got := h.db.Item(table, idFoo)
		spec, _ := got["spec"].(*types.AttributeValueMemberM)
		if spec == nil || spec.Value["suspend"] == nil || h.specVersion(kubeapplier.KindApplyDesire, idFoo) != 1 {
			t.Fatalf("apply -f %s rewrote the spec: %v", f, got)
		}
	}
}
