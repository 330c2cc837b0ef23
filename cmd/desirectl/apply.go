package main

import (
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/kube-applier-aws/kubeapplier/api"
)

func (a *app) newApplyCommand() *cobra.Command {
	var (
		file      string
		namespace string
		wf        waitFlags
		opts      applyOptions
	)
	cmd := &cobra.Command{
		Use:   "apply -f FILE|DIR|-",
		Short: "Write one ApplyDesire per object (create or replace)",
		Long: `Write one ApplyDesire per object of the input: multi-document YAML or JSON, a directory's
*.yaml, *.yml and *.json files in name order, or - for stdin. The desire's ID is derived from
the task key and the object's group, version, resource, namespace and name; an existing desire
is replaced (its version goes up by one), a missing one created, and one stored as it would be
written is left as it is ("unchanged": nothing is written, so the applier has nothing to do
again; the object's content is compared as JSON). A DeleteDesire for the same
object is deleted first, as delete deletes the ApplyDesire: the object is not deleted and
re-created in turn.

--wait needs a kube-applier-aws running for the context's management cluster: it waits until
the applier's status answers the spec just written.

The desire options (docs/contract.md "Desire options") are flags, and hold for every object
of the input: --apply-policy, --force-conflicts=false, --ignore-fields, --yield-to-manager,
--feedback, --health-*, --owner. They are part of what apply writes: applying again without a
flag removes its option (a new version), and the same manifest with the same flags is
unchanged. A flag at its default writes nothing. Values an applier would refuse are refused
before anything is written (exit 2).`,
		Example: `  desirectl apply -f configmap.yaml
  desirectl apply -f manifests/ --wait --timeout 2m
  kubectl create configmap foo --from-literal=a=b --dry-run=client -o yaml | desirectl apply -f -
  desirectl apply -f deployment.yaml --ignore-fields OnTargetPresent=/spec/replicas --yield-to-manager hpa-controller
  desirectl apply -f deployment.yaml --apply-policy ReadOnly --feedback ready=.status.readyReplicas \
      --health-current 'self.status.readyReplicas == self.spec.replicas'`,
		Args: usageArgs(cobra.NoArgs),
	}
	addFileFlag(cmd, &file, "the objects")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "namespace of namespaced objects that name none (default \"default\")")
	wf.register(cmd, "applied")
	opts.register(cmd)
	a.addRecordsFlag(cmd)
	cmd.RunE = a.records(func(cmd *cobra.Command, _ []string) error {
		ctx := cmd.Context()
		spec, err := opts.spec()
		if err != nil {
			return err
		}
		ms, err := readManifests(file, a.stdin)
		if err != nil {
			return err
		}
		st, ds, err := a.desireStore(ctx)
		if err != nil {
			return err
		}
		targets, err := a.manifestTargets(ctx, ms, namespace)
		if err != nil {
			return err
		}
		waits, err := writeDesires(ctx, a, st.applies, st.opposite(api.KindApplyDesire), ds, targets, func(id string, t target) (*api.ApplyDesire, error) {
			content, err := json.Marshal(t.obj.Object)
			if err != nil {
				return nil, usageErrorf("%s: %v", t.label, err)
			}
			d := &api.ApplyDesire{DynamoDBMetadata: api.DynamoDBMetadata{DocumentID: id}, Spec: spec}
			d.Spec.CommonSpec, d.Spec.Owner, d.Spec.KubeContent = ds.common, spec.Owner, json.RawMessage(content)
			return d, nil
		})
		if err != nil {
			return err
		}
		return wf.waitIfAsked(ctx, a, waits)
	})
	return cmd
}
