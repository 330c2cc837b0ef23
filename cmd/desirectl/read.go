package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/kube-applier-aws/kubeapplier"
)

func (a *app) newReadCommand() *cobra.Command {
	var (
		namespace string
		output    string
		timeout   time.Duration
		ta        typeArgs
	)
	cmd := &cobra.Command{
		Use:   "read TYPE NAME",
		Short: "Read an object through a ReadDesire and print it",
		Long: `Create a ReadDesire for TYPE NAME (or reuse the one that exists), wait until the applier has
mirrored the object into its status, and print the object. A missing object is an error
(exit 1). The ReadDesire stays, so later reads are answered at once.`,
		Example: `  desirectl read configmaps foo -n default
  desirectl read deployments.apps web -n shop -o json`,
		Args: usageArgs(cobra.ExactArgs(2)),
	}
	addObjectNamespaceFlag(cmd, &namespace)
	cmd.Flags().StringVarP(&output, "output", "o", "yaml", "output format: yaml or json")
	addTimeoutFlag(cmd, &timeout, "how long to wait for the applier")
	addTypeFlags(cmd, &ta)
	cmd.RunE = runE(func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		if output != "yaml" && output != "json" {
			return usageErrorf("--output must be yaml or json, not %q", output)
		}
		st, ds, t, err := a.openTarget(cmd, &ta, args, namespace)
		if err != nil {
			return err
		}
		id := ds.id(t)
		cur, _, err := st.reads.getSpec(ctx, id)
		if err != nil {
			return err
		}
		spec := cur
		if rd, _ := cur.(*kubeapplier.ReadDesire); rd == nil || rd.Spec.CommonSpec != ds.common || rd.Spec.TargetItem != t.item {
			d := &kubeapplier.ReadDesire{DynamoDBMetadata: kubeapplier.DynamoDBMetadata{DocumentID: id},
				Spec: kubeapplier.ReadDesireSpec{CommonSpec: ds.common, TargetItem: t.item}}
			if spec, _, err = put(ctx, st.reads, d); err != nil {
				return fmt.Errorf("%s (%s): %w", desireRef(kubeapplier.KindReadDesire, id), t.label, err)
			}
		} // else reuse it: the applier keeps its status up to date
		w := newWaitItem(st.reads, spec, t.label)
		if err := a.waitFor(ctx, []*waitItem{w}, successfulTrue, timeout, false); err != nil {
			return err
		}
		rd := w.last.(*kubeapplier.ReadDesire)
		cond := successfulCondition(rd)
		if cond != nil && cond.Reason == kubeapplier.ReasonNotFound {
			return failedErrorf("%s", oneLine(cond.Message))
		}
		if rd.Status.KubeContent == nil || len(rd.Status.KubeContent.Raw) == 0 {
			return failedErrorf("%s: the status of %s has no kubeContent", t.label, desireRef(kubeapplier.KindReadDesire, id))
		}
		return printContent(a, rd.Status.KubeContent.Raw, output)
	})
	return cmd
}

// printContent prints a JSON object as YAML or indented JSON.
func printContent(a *app, raw []byte, output string) error {
	var out []byte
	var err error
	if output == "json" {
		var buf bytes.Buffer
		err = json.Indent(&buf, raw, "", "    ")
		buf.WriteByte('\n')
		out = buf.Bytes()
	} else {
		out, err = yaml.JSONToYAML(raw)
	}
	if err != nil {
		return err
	}
	_, err = a.stdout.Write(out)
	return err
}
