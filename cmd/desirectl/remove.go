package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kube-applier-aws/kubeapplier/api"
)

func (a *app) newRemoveCommand() *cobra.Command {
	var (
		namespace string
		kinds     string
		ta        typeArgs
	)
	cmd := &cobra.Command{
		Use:     "remove TYPE NAME --kind read|delete|apply|all",
		Aliases: []string{"rm"},
		Short:   "Remove desires about an object, leaving the object as it is",
		Long: `Remove the desires of --kind about TYPE NAME: their spec documents (the applier then removes
their status). The object itself is not touched: a removed ReadDesire stops mirroring it, a
removed DeleteDesire stops deleting it (an object already gone stays gone), a removed
ApplyDesire stops applying it (the object stays as last applied; 'desirectl delete' deletes
objects). 'desirectl get TYPE [NAME]' lists the desires of every kind.

--kind is required: read, delete, apply, a comma-separated list, or all. A kind asked for
that has no desire for the object is a failure (exit 1) after the others were removed.

In a context with folded-deletes (no DeleteDesire tables), --kind delete removes the object's
ApplyDesire while it is of spec.type Delete (the object is then no longer deleted); an
ApplyDesire of the object that applies is left, and counts as not found.`,
		Example: `  desirectl remove configmaps foo -n default --kind read
  desirectl remove deployments.apps web -n shop --kind delete,read`,
		Args: usageArgs(cobra.ExactArgs(2)),
	}
	addObjectNamespaceFlag(cmd, &namespace)
	cmd.Flags().StringVar(&kinds, "kind", "", "desire kinds to remove: read, delete, apply, a comma-separated list, or all (required)")
	addTypeFlags(cmd, &ta)
	a.addRecordsFlag(cmd)
	cmd.RunE = a.records(func(cmd *cobra.Command, args []string) error {
		which, err := parseKinds(kinds)
		if err != nil {
			return err
		}
		st, ds, t, err := a.openTarget(cmd, &ta, args, namespace)
		if err != nil {
			return err
		}
		id := ds.id(t)
		var missing []string
		for _, tables := range st.kinds() {
			ref := desireRef(tables.desireKind(), id)
			missingRef := ref
			var removed bool
			switch {
			case st.folded && tables.desireKind() == api.KindApplyDesire && !which[api.KindApplyDesire] && which[api.KindDeleteDesire]:
				// The folded layout has no DeleteDesire tables: the object's deletion is its
				// ApplyDesire of type Delete, removed only while it is one.
				missingRef += " of spec.type " + api.ApplyTypeDelete
				removed, err = removeFoldedDelete(cmd.Context(), st, id)
			case !which[tables.desireKind()]:
				continue
			default:
				removed, err = tables.deleteSpec(cmd.Context(), id)
			}
			if err != nil {
				return fmt.Errorf("%s (%s): %w", ref, t.label, err)
			}
			if !removed {
				missing = append(missing, missingRef)
				continue
			}
			a.line(outputRecord{Event: "removed", Desire: ref, Object: t.label}, fmt.Sprintf("%s removed (%s)", ref, t.label))
		}
		if len(missing) > 0 {
			return failedErrorf("%s (%s) not found", strings.Join(missing, ", "), t.label)
		}
		return nil
	})
	return cmd
}

// parseKinds reads --kind of remove.
func parseKinds(s string) (map[api.DesireKind]bool, error) {
	if s == "" {
		return nil, usageErrorf("--kind is required: read, delete, apply, a comma-separated list, or all")
	}
	out := map[api.DesireKind]bool{}
	for _, k := range strings.Split(s, ",") {
		k = strings.ToLower(strings.TrimSpace(k))
		if k == "all" {
			for _, dk := range api.DesireKinds {
				out[dk] = true
			}
			continue
		}
		// "ApplyDesire" too: the kind label of the applier's metrics and alerts, pasted.
		dk, ok := desireKindFlag[strings.TrimSuffix(k, "desire")]
		if !ok {
			names := make([]string, 0, len(desireKindFlag))
			for n := range desireKindFlag {
				names = append(names, n)
			}
			sort.Strings(names)
			return nil, usageErrorf("--kind must be %s or all, not %q", strings.Join(names, ", "), k)
		}
		out[dk] = true
	}
	return out, nil
}

// removeFoldedDelete removes the ApplyDesire id while it is of type Delete (the folded
// layout's deletion), at the version read: an apply written in between stays. removed false:
// there is none of type Delete.
func removeFoldedDelete(ctx context.Context, st *store, id string) (removed bool, err error) {
	d, ok, err := st.applies.getSpec(ctx, id)
	if err != nil || !ok {
		return false, err
	}
	if ad, isApply := d.(*api.ApplyDesire); !isApply || !ad.Spec.IsDelete() {
		return false, nil
	}
	if c, ok := st.applies.specs.(versionedDeleter); ok {
		err = c.DeleteIf(ctx, id, d.Meta().Version)
	} else {
		err = st.applies.specs.Delete(ctx, id)
	}
	switch {
	case errors.Is(err, api.ErrNotFound):
		return false, nil
	case errors.Is(err, api.ErrPreconditionFailed):
		return false, fmt.Errorf("written again meanwhile (run remove again to remove it as it is now): %w", err)
	}
	return err == nil, dbError(err)
}

// versionedDeleter is the conditional delete of *api.Desires (DeleteIf).
type versionedDeleter interface {
	DeleteIf(ctx context.Context, id string, version int64) error
}
