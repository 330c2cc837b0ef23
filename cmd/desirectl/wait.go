package main

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kube-applier-aws/kubeapplier"
)

// desireKindFlag maps --kind values to desire kinds.
var desireKindFlag = map[string]kubeapplier.DesireKind{
	"apply": kubeapplier.KindApplyDesire, "delete": kubeapplier.KindDeleteDesire, "read": kubeapplier.KindReadDesire,
}

func (a *app) newWaitCommand() *cobra.Command {
	var (
		namespace string
		forCond   string
		kind      string
		timeout   time.Duration
		ta        typeArgs
	)
	cmd := &cobra.Command{
		Use:   "wait TYPE NAME --for=condition=Successful",
		Short: "Wait until a desire's status has a condition at its current spec version",
		Long: `Wait until the status of the desire about TYPE NAME has the condition of --for, observed at
the spec document's current version. Waiting for Successful=True stops early, with exit 1,
when the applier reports Successful=False for a reason it will not retry on its own.`,
		Example: `  desirectl wait configmaps foo -n default --for=condition=Successful --timeout=60s
  desirectl wait configmaps foo --kind delete --for=condition=Successful`,
		Args: usageArgs(cobra.ExactArgs(2)),
	}
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "namespace of the object (default \"default\" for namespaced types)")
	cmd.Flags().StringVar(&forCond, "for", "condition="+kubeapplier.ConditionSuccessful, "condition=TYPE[=STATUS] to wait for; STATUS defaults to True")
	cmd.Flags().StringVar(&kind, "kind", "apply", "desire kind: apply, delete or read")
	cmd.Flags().DurationVar(&timeout, "timeout", defaultTimeout, "how long to wait")
	addTypeFlags(cmd, &ta)
	cmd.RunE = runE(func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		want, err := parseFor(forCond)
		if err != nil {
			return err
		}
		dk, ok := desireKindFlag[strings.ToLower(kind)]
		if !ok {
			return usageErrorf("--kind must be apply, delete or read, not %q", kind)
		}
		st, ds, t, err := a.openTarget(cmd, &ta, args, namespace)
		if err != nil {
			return err
		}
		id := ds.id(t)
		var w *waitItem
		switch dk {
		case kubeapplier.KindApplyDesire:
			w, err = waitItemFor(ctx, st.applies, id, t.label)
		case kubeapplier.KindDeleteDesire:
			w, err = waitItemFor(ctx, st.deletes, id, t.label)
		default:
			w, err = waitItemFor(ctx, st.reads, id, t.label)
		}
		if err != nil {
			return err
		}
		return a.waitFor(ctx, []*waitItem{w}, want, timeout, true)
	})
	return cmd
}

// waitItemFor reads the spec document id to wait for its current version; a missing one is
// a not-found failure.
func waitItemFor[T kubeapplier.Desire](ctx context.Context, t kindTables[T], id, label string) (*waitItem, error) {
	d, found, err := getSpec(ctx, t, id)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, failedErrorf("%s (%s) not found", desireRef(t.kind, id), label)
	}
	return &waitItem{kind: t.kind, id: id, label: label, version: d.Meta().Version, status: statusGetter(t, id)}, nil
}
