package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/kube-applier-aws/kubeapplier/api"
)

func (a *app) newReadCommand() *cobra.Command {
	var (
		namespace string
		output    string
		keep      bool
		timeout   time.Duration
		ta        typeArgs
		opts      readOptions
	)
	cmd := &cobra.Command{
		Use:   "read TYPE NAME",
		Short: "Read an object through a ReadDesire and print it",
		Long: `Create a ReadDesire for TYPE NAME (or reuse the one that exists), wait until the applier has
mirrored the object into its status, and print the object. A missing object is an error
(exit 1). A ReadDesire that read created is removed afterwards (also after a failure or a
timeout), unless --keep: a kept one is mirrored on by the applier, so later reads are
answered at once ('desirectl remove TYPE NAME --kind read' removes it). A ReadDesire that
existed before is reused and left as it was, when it asks for what this read asks (the same
--fields and --owner; without these flags, its own are kept); else it is written as asked,
and kept.

--fields /data,/status/phase mirrors only those JSON Pointers (RFC 6901; apiVersion, kind,
metadata.name and metadata.namespace always): a smaller status for a large object.`,
		Example: `  desirectl read configmaps foo -n default
  desirectl read deployments.apps web -n shop -o json
  desirectl read deployments.apps web -n shop --fields /status/readyReplicas,/status/conditions`,
		Args: usageArgs(cobra.ExactArgs(2)),
	}
	addObjectNamespaceFlag(cmd, &namespace)
	cmd.Flags().StringVarP(&output, "output", "o", "yaml", "output format: yaml or json")
	addTimeoutFlag(cmd, &timeout, "how long to wait for the applier")
	cmd.Flags().BoolVar(&keep, "keep", false, "keep the ReadDesire that read creates (the applier mirrors the object on)")
	addTypeFlags(cmd, &ta)
	opts.register(cmd)
	cmd.RunE = runE(func(cmd *cobra.Command, args []string) (err error) {
		ctx := cmd.Context()
		if output != "yaml" && output != "json" {
			return usageErrorf("--output must be yaml or json, not %q", output)
		}
		want, err := opts.spec()
		if err != nil {
			return err
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
		d := &api.ReadDesire{DynamoDBMetadata: api.DynamoDBMetadata{DocumentID: id}, Spec: want}
		d.Spec.CommonSpec, d.Spec.Owner, d.Spec.TargetItem = ds.common, want.Owner, t.item
		if cur != nil && !cmd.Flags().Changed(flagFields) && !cmd.Flags().Changed(flagOwner) {
			// No option asked: its options are not this read's to change (another writer's
			// owner or projection would be lost); only what it targets is compared.
			if rd, ok := cur.(*api.ReadDesire); ok {
				d.Spec.Owner, d.Spec.Fields = rd.Spec.Owner, rd.Spec.Fields
				if len(rd.Spec.Fields) > 0 {
					a.warnf("%s mirrors only its spec.fields %s (pass --fields to ask for others)", desireRef(api.KindReadDesire, id), strings.Join(rd.Spec.Fields, ","))
				}
			}
		}
		if cur == nil || !sameSpec(cur, d) {
			var done putResult
			if spec, done, err = put(ctx, st.reads, d, false); err != nil {
				return fmt.Errorf("%s (%s): %w", desireRef(api.KindReadDesire, id), t.label, err)
			}
			if done == putCreated && !keep {
				defer func() { err = errors.Join(err, a.removeReadDesire(st, id, t.label)) }()
			}
		} // else reuse it: the applier keeps its status up to date
		w := newWaitItem(st.reads, spec, t.label)
		if err := a.waitFor(ctx, []*waitItem{w}, successfulTrue, timeout, false); err != nil {
			return err
		}
		rd := w.last.(*api.ReadDesire)
		cond := successfulCondition(rd)
		if cond != nil && cond.Reason == api.ReasonNotFound {
			return failedErrorf("%s", oneLine(cond.Message))
		}
		if rd.Status.KubeContent == nil || len(rd.Status.KubeContent) == 0 {
			return failedErrorf("%s: the status of %s has no kubeContent", t.label, desireRef(api.KindReadDesire, id))
		}
		content, redacted, err := markRedacted(rd.Status.KubeContent)
		if err != nil {
			return failedErrorf("%s: the status of %s: %v", t.label, desireRef(api.KindReadDesire, id), err)
		}
		if len(redacted) > 0 {
			a.warnf("the applier redacted %d values of %s (%s): %s", len(redacted), t.label, strings.Join(redacted, ", "), redactedNote)
		}
		return printContent(a, content, output)
	})
	return cmd
}

// removeReadDesire deletes the ReadDesire that read created, also when the command's
// context ended (Ctrl-C), within its own deadline.
func (a *app) removeReadDesire(st *store, id, label string) error {
	ctx, cancel := context.WithTimeout(context.Background(), removeTimeout)
	defer cancel()
	if _, err := st.reads.deleteSpec(ctx, id); err != nil {
		return fmt.Errorf("removing %s (%s), which read created: %w; remove it with 'desirectl remove' --kind read",
			desireRef(api.KindReadDesire, id), label, err)
	}
	return nil
}

// removeTimeout bounds the removal of a ReadDesire after read.
const removeTimeout = 10 * time.Second

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

// redactedMark is what read prints for a Secret value the applier redacted.
const redactedMark = "<redacted>"

// redactedNote tells the reader why a value is missing and where it is.
const redactedNote = "the applier keeps Secret values out of status tables (its SecretRedaction option); " +
	"they are printed as " + redactedMark + ", read the Secret in the cluster itself"

// markRedacted returns a ReadDesire status's object with each Secret value the applier
// redacted (api.RedactedValue, secrets.go's SecretRedaction, in data and stringData
// or in place of either field) replaced by redactedMark, so no placeholder is printed as if
// it were the value, and the paths of those values ("data.password", "stringData"), sorted.
// Objects other than a core Secret, and Secrets with nothing redacted, come back as they
// are. A value that really is the bytes "REDACTED" cannot be told apart and is marked too.
func markRedacted(raw []byte) ([]byte, []string, error) {
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, nil, fmt.Errorf("kubeContent is no JSON object: %w", err)
	}
	if obj["apiVersion"] != "v1" || obj["kind"] != "Secret" {
		return raw, nil, nil
	}
	var paths []string
	for _, field := range []string{"data", "stringData"} {
		switch v := obj[field].(type) {
		case string:
			if v == api.RedactedValue {
				obj[field] = redactedMark
				paths = append(paths, field)
			}
		case map[string]any:
			for k, val := range v {
				if val == api.RedactedValue {
					v[k] = redactedMark
					paths = append(paths, field+"."+k)
				}
			}
		}
	}
	if len(paths) == 0 {
		return raw, nil, nil
	}
	slices.Sort(paths)
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false) // "<redacted>", not "\u003credacted\u003e"
	if err := enc.Encode(obj); err != nil {
		return nil, nil, err
	}
	return bytes.TrimSpace(out.Bytes()), paths, nil
}
