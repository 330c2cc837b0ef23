package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kube-applier-aws/kubeapplier"
)

// addTypeFlags registers --group and --version, which resolve TYPE without discovery.
func addTypeFlags(cmd *cobra.Command, ta *typeArgs) {
	cmd.Flags().StringVar(&ta.group, "group", "", "API group of TYPE (\"\" for the core group); with --version, skips discovery")
	cmd.Flags().StringVar(&ta.version, "version", "", "API version of TYPE, e.g. v1; skips discovery")
}

// settleTypeArgs records which of --group/--version were given.
func settleTypeArgs(cmd *cobra.Command, ta *typeArgs, typ string) {
	ta.typ = typ
	ta.groupSet = cmd.Flags().Changed("group")
	ta.versionSet = cmd.Flags().Changed("version")
}

func (a *app) newDeleteCommand() *cobra.Command {
	var (
		file      string
		namespace string
		ta        typeArgs
		wf        waitFlags
	)
	cmd := &cobra.Command{
		Use:   "delete (TYPE NAME | -f FILE|DIR|-)",
		Short: "Write a DeleteDesire for an object (create or replace)",
		Long: `Write a DeleteDesire for TYPE NAME, or one per object of -f input. The desire's ID is derived
from the task key and the target, like an ApplyDesire's: the same object gets the same ID in
all three desire kinds. The DeleteDesire is Successful once the object is gone. An ApplyDesire
for the same object is deleted too, so its periodic re-apply cannot bring the object back.`,
		Example: `  desirectl delete configmaps foo -n default --wait
  desirectl delete deployments.apps web -n shop
  desirectl delete -f manifests/`,
		Args: usageArgs(cobra.MaximumNArgs(2)),
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "file, directory or - (stdin) with the objects to delete")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "namespace of the object (default \"default\" for namespaced types)")
	addTypeFlags(cmd, &ta)
	wf.register(cmd, "deleted")
	cmd.RunE = runE(func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		var ms []manifest
		switch {
		case file != "" && len(args) > 0:
			return usageErrorf("give either TYPE NAME or -f, not both")
		case file != "":
			var err error
			if ms, err = readManifests(file, a.stdin); err != nil {
				return err
			}
		case len(args) != 2:
			return usageErrorf("delete needs TYPE NAME or -f FILE; see 'desirectl delete --help'")
		}
		st, s, err := a.store(ctx)
		if err != nil {
			return err
		}
		ds, err := s.forDesires()
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
		var waits []*waitItem
		for _, t := range targets {
			d := &kubeapplier.DeleteDesire{DynamoDBMetadata: kubeapplier.DynamoDBMetadata{DocumentID: ds.id(t)},
				Spec: kubeapplier.DeleteDesireSpec{CommonSpec: ds.common, TargetItem: t.item}}
			stored, created, err := put(ctx, st.deletes, d)
			if err != nil {
				return fmt.Errorf("%s (%s): %w", desireRef(kubeapplier.KindDeleteDesire, d.DocumentID), t.label, err)
			}
			a.printWritten(kubeapplier.KindDeleteDesire, stored.DocumentID, t.label, created)
			// An ApplyDesire left for the same object would bring it back at its next re-apply.
			switch err := st.applies.specs.Delete(ctx, d.DocumentID); {
			case err == nil:
				fmt.Fprintf(a.stdout, "%s deleted (%s)\n", desireRef(kubeapplier.KindApplyDesire, d.DocumentID), t.label)
			case !kubeapplier.IsNotFoundError(err):
				return fmt.Errorf("%s (%s): %w", desireRef(kubeapplier.KindApplyDesire, d.DocumentID), t.label, dbError(err))
			}
			waits = append(waits, &waitItem{kind: kubeapplier.KindDeleteDesire, id: stored.DocumentID, label: t.label,
				version: stored.Version, status: statusGetter(st.deletes, stored.DocumentID)})
		}
		if !wf.wait {
			return nil
		}
		return a.waitFor(ctx, waits, successfulTrue, wf.timeout, true)
	})
	return cmd
}
