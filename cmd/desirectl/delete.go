package main

import (
	"github.com/spf13/cobra"

	"github.com/kube-applier-aws/kubeapplier/api"
)

func (a *app) newDeleteCommand() *cobra.Command {
	var (
		file      string
		namespace string
		ta        typeArgs
		wf        waitFlags
		opts      deleteOptions
	)
	cmd := &cobra.Command{
		Use:   "delete (TYPE NAME | -f FILE|DIR|-)",
		Short: "Write a DeleteDesire for an object (create or replace)",
		Long: `Write a DeleteDesire for TYPE NAME, or one per object of -f input. The desire's ID is derived
from the task key and the target, like an ApplyDesire's: the same object gets the same ID in
all three desire kinds. The DeleteDesire is Successful once the object is gone. An ApplyDesire
for the same object is deleted first, so its periodic re-apply cannot bring the object back
(apply likewise deletes a DeleteDesire).

--propagation-policy Foreground keeps the object until the garbage collector has deleted its
dependents (the status names those left), Orphan keeps the dependents; --owner sets
spec.owner. A flag at its default writes nothing.

In a context with folded-deletes (the folded layout: no DeleteDesire tables), delete writes
the object's ApplyDesire with spec.type Delete and its targetItem instead (the same ID: an
ApplyDesire of the object becomes the Delete; apply turns it back).

--wait needs a kube-applier-aws running for the context's management cluster.`,
		Example: `  desirectl delete configmaps foo -n default --wait
  desirectl delete deployments.apps web -n shop
  desirectl delete -f manifests/
  desirectl delete deployments.apps web -n shop --propagation-policy Foreground --wait`,
		Args: usageArgs(cobra.MaximumNArgs(2)),
	}
	addFileFlag(cmd, &file, "the objects to delete")
	addObjectNamespaceFlag(cmd, &namespace)
	addTypeFlags(cmd, &ta)
	wf.register(cmd, "deleted")
	opts.register(cmd)
	a.addRecordsFlag(cmd)
	cmd.RunE = a.records(func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		spec, err := opts.spec()
		if err != nil {
			return err
		}
		var ms []manifest
		switch {
		case file != "" && len(args) > 0:
			return usageErrorf("give either TYPE NAME or -f, not both")
		case file != "":
			if ms, err = readManifests(file, a.stdin); err != nil {
				return err
			}
		case len(args) != 2:
			return usageErrorf("delete needs TYPE NAME or -f FILE; see 'desirectl delete --help'")
		}
		st, ds, err := a.desireStore(ctx)
		if err != nil {
			return err
		}
		var targets []target
		if file != "" {
			targets, err = a.manifestTargets(ctx, ms, namespace)
		} else {
			settleTypeArgs(cmd, &ta, args[0])
			var t target
			t, err = a.typeTarget(ctx, ta, args[1], namespace)
			targets = []target{t}
		}
		if err != nil {
			return err
		}
		if st.folded {
			// The folded layout: the ApplyDesire of the object becomes a Delete (docs/contract.md
			// "The folded Delete"), at the same ID.
			waits, err := writeDesires(ctx, a, st.applies, st.opposite(api.KindDeleteDesire), ds, targets, func(id string, t target) (*api.ApplyDesire, error) {
				item := t.item
				d := &api.ApplyDesire{DynamoDBMetadata: api.DynamoDBMetadata{DocumentID: id}}
				d.Spec.CommonSpec, d.Spec.Owner = ds.common, spec.Owner
				d.Spec.Type, d.Spec.TargetItem, d.Spec.PropagationPolicy = api.ApplyTypeDelete, &item, spec.PropagationPolicy
				return d, nil
			})
			if err != nil {
				return err
			}
			return wf.waitIfAsked(ctx, a, waits)
		}
		waits, err := writeDesires(ctx, a, st.deletes, st.opposite(api.KindDeleteDesire), ds, targets, func(id string, t target) (*api.DeleteDesire, error) {
			d := &api.DeleteDesire{DynamoDBMetadata: api.DynamoDBMetadata{DocumentID: id}, Spec: spec}
			d.Spec.CommonSpec, d.Spec.Owner, d.Spec.TargetItem = ds.common, spec.Owner, t.item
			return d, nil
		})
		if err != nil {
			return err
		}
		return wf.waitIfAsked(ctx, a, waits)
	})
	return cmd
}
