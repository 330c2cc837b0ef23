package main

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// desireKindFlag maps --kind values to desire kinds.
var desireKindFlag = map[string]api.DesireKind{
	"apply": api.KindApplyDesire, "delete": api.KindDeleteDesire, "read": api.KindReadDesire,
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
		Short: "Wait until a desire's status has a condition for its current spec",
		Long: `Wait until the status of the desire about TYPE NAME has the condition of --for, observed for
the spec document as it is now (its version and updateTime). Waiting for Successful=True stops
early, with exit 1, when the applier reports Successful=False for a reason it will not retry on
its own.

Which desire: the object's ApplyDesire or DeleteDesire (apply and delete remove each other, so
there is one of them), else its ReadDesire; the one used is named in every line printed. When
an object has both an ApplyDesire and a DeleteDesire (written by another tool), --kind must
choose. --kind apply|delete|read waits for that kind only; in a context with folded-deletes,
--kind delete is the object's ApplyDesire while it is of spec.type Delete.

--for=watermark=TIME (RFC 3339, no TYPE NAME) waits instead until the heartbeat's watermark of
the --kind (default apply) reaches TIME: every spec of that kind whose updateTime is at or
before TIME has a status answering it.`,
		Example: `  desirectl wait configmaps foo -n default --for=condition=Successful --timeout=60s
  desirectl wait configmaps foo --kind read --for=condition=Successful
  desirectl wait --for=watermark=2026-12-01T10:00:00Z --kind apply`,
		Args: usageArgs(func(cmd *cobra.Command, args []string) error {
			if f, _ := cmd.Flags().GetString("for"); strings.HasPrefix(f, "watermark=") {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.ExactArgs(2)(cmd, args)
		}),
	}
	addObjectNamespaceFlag(cmd, &namespace)
	cmd.Flags().StringVar(&forCond, "for", "condition="+api.ConditionSuccessful, "condition=TYPE[=STATUS] to wait for; STATUS defaults to True")
	cmd.Flags().StringVar(&kind, "kind", "", "desire kind: apply, delete or read (default the ApplyDesire or DeleteDesire that exists, else the ReadDesire)")
	addTimeoutFlag(cmd, &timeout, "how long to wait")
	addTypeFlags(cmd, &ta)
	a.addRecordsFlag(cmd)
	cmd.RunE = a.records(func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		if at, ok := strings.CutPrefix(forCond, "watermark="); ok {
			return a.runWaitWatermark(ctx, at, kind, timeout)
		}
		want, err := parseFor(forCond)
		if err != nil {
			return err
		}
		var only api.DesireKind
		if kind != "" {
			var ok bool
			if only, ok = desireKindFlag[strings.ToLower(kind)]; !ok {
				return usageErrorf("--kind must be apply, delete or read, not %q", kind)
			}
		}
		st, ds, t, err := a.openTarget(cmd, &ta, args, namespace)
		if err != nil {
			return err
		}
		w, err := findWaitItem(ctx, st, ds.id(t), t.label, only)
		if err != nil {
			return err
		}
		return a.waitFor(ctx, []*waitItem{w}, want, timeout, true)
	})
	return cmd
}

// findWaitItem reads the spec document id of kind only, or, when only is "", of the kind
// wait chooses: the ApplyDesire or the DeleteDesire, else the ReadDesire. A missing desire is
// a not-found failure; an ApplyDesire beside a DeleteDesire is a usage error (choose --kind).
func findWaitItem(ctx context.Context, st *store, id, label string, only api.DesireKind) (*waitItem, error) {
	if st.folded && only == api.KindDeleteDesire {
		// The folded layout has no DeleteDesire table: the deletion is the ApplyDesire of
		// type Delete.
		d, ok, err := st.applies.getSpec(ctx, id)
		if err != nil {
			return nil, err
		}
		if ad, isApply := d.(*api.ApplyDesire); !ok || !isApply || !ad.Spec.IsDelete() {
			return nil, failedErrorf("%s of spec.type %s (%s) not found", desireRef(api.KindApplyDesire, id), api.ApplyTypeDelete, label)
		}
		return newWaitItem(st.applies, d, label), nil
	}
	found := map[api.DesireKind]*waitItem{}
	for _, tables := range st.kinds() {
		if only != "" && tables.desireKind() != only {
			continue
		}
		d, ok, err := tables.getSpec(ctx, id)
		if err != nil {
			return nil, err
		}
		if ok {
			found[tables.desireKind()] = newWaitItem(tables, d, label)
		}
	}
	apply, del := found[api.KindApplyDesire], found[api.KindDeleteDesire]
	switch {
	case apply != nil && del != nil:
		return nil, usageErrorf("%s has both an ApplyDesire and a DeleteDesire (ID %s): choose one with --kind apply or --kind delete", label, id)
	case apply != nil:
		return apply, nil
	case del != nil:
		return del, nil
	case found[api.KindReadDesire] != nil:
		return found[api.KindReadDesire], nil
	case only != "":
		return nil, failedErrorf("%s (%s) not found", desireRef(only, id), label)
	}
	return nil, failedErrorf("no desire found for %s (ID %s)", label, id)
}
