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
the applier's status answers the spec just written.`,
		Example: `  desirectl apply -f configmap.yaml
  desirectl apply -f manifests/ --wait --timeout 2m
  kubectl create configmap foo --from-literal=a=b --dry-run=client -o yaml | desirectl apply -f -`,
		Args: usageArgs(cobra.NoArgs),
	}
	addFileFlag(cmd, &file, "the objects")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "namespace of namespaced objects that name none (default \"default\")")
	wf.register(cmd, "applied")
	a.addRecordsFlag(cmd)
	cmd.RunE = a.records(func(cmd *cobra.Command, _ []string) error {
		ctx := cmd.Context()
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
		waits, err := writeDesires(ctx, a, st.applies, st.deletes, ds, targets, func(id string, t target) (*api.ApplyDesire, error) {
			content, err := json.Marshal(t.obj.Object)
			if err != nil {
				return nil, usageErrorf("%s: %v", t.label, err)
			}
			return &api.ApplyDesire{
				DynamoDBMetadata: api.DynamoDBMetadata{DocumentID: id},
				Spec:             api.ApplyDesireSpec{CommonSpec: ds.common, KubeContent: json.RawMessage(content)},
			}, nil
		})
		if err != nil {
			return err
		}
		return wf.waitIfAsked(ctx, a, waits)
	})
	return cmd
}
