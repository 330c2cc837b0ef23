package kubeapplier_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kube-applier-aws/kubeapplier"
)

// forbidNamespace returns a wrapper of the ApplyDesire reconciler that refuses, with
// PreCheckFailed, every desire whose object lives in namespace ns, and hands the others to
// the default reconciler (which also reports a kubeContent that does not parse).
func forbidNamespace(ns string) func(kubeapplier.Reconciler[*kubeapplier.ApplyDesire]) kubeapplier.Reconciler[*kubeapplier.ApplyDesire] {
	return func(def kubeapplier.Reconciler[*kubeapplier.ApplyDesire]) kubeapplier.Reconciler[*kubeapplier.ApplyDesire] {
		return kubeapplier.ReconcilerFunc[*kubeapplier.ApplyDesire](func(ctx context.Context, d *kubeapplier.ApplyDesire) kubeapplier.Verdict {
			if obj, err := kubeapplier.ParseKubeContent(d.Spec.KubeContent); err == nil && obj.GetNamespace() == ns {
				return kubeapplier.Refused(kubeapplier.ReasonPreCheckFailed,
					fmt.Sprintf("namespace %s is reserved: desires may not write there", ns))
			}
			return def.Reconcile(ctx, d)
		})
	}
}

// A reconciler wrapper refuses desires for a forbidden namespace and delegates the rest; the
// controller keeps its workqueue, retries, election, metrics and status writes. Pass it as
// Options.Reconcilers; here it wraps a stand-in for the default reconciler to show verdicts.
func ExampleReconcilerWrappers() {
	opts := kubeapplier.Options{ManagementCluster: "mc01", // + RESTConfig etc.: see New
		Reconcilers: kubeapplier.ReconcilerWrappers{Apply: forbidNamespace("kube-system")}}

	def := kubeapplier.ReconcilerFunc[*kubeapplier.ApplyDesire](func(context.Context, *kubeapplier.ApplyDesire) kubeapplier.Verdict {
		return kubeapplier.Applied(1, "applied ConfigMap")
	})
	r := opts.Reconcilers.Apply(def)
	for _, ns := range []string{"kube-system", "team-a"} {
		d := &kubeapplier.ApplyDesire{}
		d.Spec.KubeContent = json.RawMessage([]byte(
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":"` + ns + `"}}`))
		fmt.Printf("%s: %s\n", ns, r.Reconcile(context.Background(), d))
	}
	// Output:
	// kube-system: Successful=False/PreCheckFailed: namespace kube-system is reserved: desires may not write there
	// team-a: Successful=True/NoErrors: applied ConfigMap
}
