package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kube-applier-aws/kubeapplier"
)

// waitFlags are the --wait and --timeout flags of apply and delete.
type waitFlags struct {
	wait    bool
	timeout time.Duration
}

func (w *waitFlags) register(cmd *cobra.Command, what string) {
	cmd.Flags().BoolVar(&w.wait, "wait", false, "wait until every desire is "+what+" (Successful=True at the version written)")
	cmd.Flags().DurationVar(&w.timeout, "timeout", defaultTimeout, "how long --wait waits")
}

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
is replaced (its version goes up by one), a missing one created.`,
		Example: `  desirectl apply -f configmap.yaml
  desirectl apply -f manifests/ --wait --timeout 2m
  kubectl create configmap foo --from-literal=a=b --dry-run=client -o yaml | desirectl apply -f -`,
		Args: usageArgs(cobra.NoArgs),
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "file, directory or - (stdin) with the objects")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "namespace of namespaced objects that name none (default \"default\")")
	wf.register(cmd, "applied")
	cmd.RunE = runE(func(cmd *cobra.Command, _ []string) error {
		ctx := cmd.Context()
		ms, err := readManifests(file, a.stdin)
		if err != nil {
			return err
		}
		st, s, err := a.store(ctx)
		if err != nil {
			return err
		}
		ds, err := s.forDesires()
		if err != nil {
			return err
		}
		targets, err := a.manifestTargets(ctx, ms, namespace)
		if err != nil {
			return err
		}
		desires := make([]*kubeapplier.ApplyDesire, len(targets))
		for i, t := range targets {
			content, err := json.Marshal(t.obj.Object)
			if err != nil {
				return usageErrorf("%s: %v", ms[i].source, err)
			}
			desires[i] = &kubeapplier.ApplyDesire{
				DynamoDBMetadata: kubeapplier.DynamoDBMetadata{DocumentID: ds.id(t)},
				Spec:             kubeapplier.ApplyDesireSpec{CommonSpec: ds.common, KubeContent: &runtime.RawExtension{Raw: content}},
			}
		}
		var waits []*waitItem
		for i, d := range desires {
			stored, created, err := put(ctx, st.applies, d)
			if err != nil {
				return fmt.Errorf("%s (%s): %w", desireRef(kubeapplier.KindApplyDesire, d.DocumentID), targets[i].label, err)
			}
			a.printWritten(kubeapplier.KindApplyDesire, stored.DocumentID, targets[i].label, created)
			waits = append(waits, &waitItem{kind: kubeapplier.KindApplyDesire, id: stored.DocumentID, label: targets[i].label,
				version: stored.Version, status: statusGetter(st.applies, stored.DocumentID)})
		}
		if !wf.wait {
			return nil
		}
		return a.waitFor(ctx, waits, successfulTrue, wf.timeout, true)
	})
	return cmd
}

// printWritten prints kubectl's line for a written desire.
func (a *app) printWritten(kind kubeapplier.DesireKind, id, label string, created bool) {
	verb := "configured"
	if created {
		verb = "created"
	}
	fmt.Fprintf(a.stdout, "%s %s (%s)\n", desireRef(kind, id), verb, label)
}
