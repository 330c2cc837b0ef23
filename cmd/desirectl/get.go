package main

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/kube-applier-aws/kubeapplier"
)

// listedDesire is a desire about the requested objects, with its status document (nil when
// there is none yet).
type listedDesire struct {
	kind      kubeapplier.DesireKind
	spec      kubeapplier.Desire
	status    kubeapplier.Desire
	namespace string
	name      string
}

// desireFilter selects desires by target.
type desireFilter struct {
	rt        resolvedType
	namespace string // "" for all namespaces
	name      string // "" for all names
}

func (f desireFilter) matches(group, version, resource, namespace, name string) bool {
	return group == f.rt.GVR.Group && resource == f.rt.GVR.Resource &&
		(!f.rt.exactVersion || version == f.rt.GVR.Version) &&
		(f.namespace == "" || namespace == f.namespace) && (f.name == "" || name == f.name)
}

var kindOrder = map[kubeapplier.DesireKind]int{kubeapplier.KindApplyDesire: 0, kubeapplier.KindDeleteDesire: 1, kubeapplier.KindReadDesire: 2}

func (a *app) newGetCommand() *cobra.Command {
	var (
		namespace string
		output    string
		ta        typeArgs
	)
	cmd := &cobra.Command{
		Use:   "get TYPE [NAME]",
		Short: "List the desires about objects of a type, with their status",
		Long: `List the ApplyDesires, DeleteDesires and ReadDesires whose target is of TYPE (and named NAME,
in namespace --namespace when given; all namespaces otherwise), joined with their status.
An ApplyDesire's target is read from its kubeContent. -o yaml|json prints the documents:
metadata and spec from the specs table, status from the status table. It writes nothing.`,
		Example: `  desirectl get configmaps
  desirectl get cm foo -n default -o wide
  desirectl get deployments.v1.apps -o yaml`,
		Args: usageArgs(cobra.RangeArgs(1, 2)),
	}
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "only desires about objects in this namespace (default all)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: wide, yaml or json (default a table)")
	addTypeFlags(cmd, &ta)
	cmd.RunE = runE(func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		switch output {
		case "", "wide", "yaml", "json":
		default:
			return usageErrorf("--output must be wide, yaml or json, not %q", output)
		}
		st, _, err := a.store(ctx)
		if err != nil {
			return err
		}
		settleTypeArgs(cmd, &ta, args[0])
		rt, err := a.resolveType(ctx, ta)
		if err != nil {
			return err
		}
		f := desireFilter{rt: rt, namespace: namespace}
		if !rt.Namespaced {
			f.namespace = ""
		}
		if len(args) == 2 {
			f.name = args[1]
		}
		found, err := a.listDesires(ctx, st, f)
		if err != nil {
			return err
		}
		if len(found) == 0 {
			if f.name != "" {
				return failedErrorf("no desire found for %s", objectLabel(typeLabel(rt.resourceInfo), f.namespace, f.name))
			}
			a.stderrLine("No resources found.")
			return nil
		}
		if output == "yaml" || output == "json" {
			docs := make([]desireDocument, len(found))
			for i, l := range found {
				docs[i] = documentOf(l)
			}
			return printDocuments(a.stdout, docs, f.name != "", output)
		}
		header := []string{"KIND", "NAMESPACE", "NAME", "SUCCESSFUL", "REASON", "AGE"}
		if output == "wide" {
			header = append(header, "ID", "VERSION", "MESSAGE")
		}
		rows := [][]string{header}
		now := a.clock.Now()
		for _, l := range found {
			m := l.spec.Meta()
			succ, reason, msg := successColumns(l.status, m.Version)
			ns := l.namespace
			if ns == "" {
				ns = "<none>"
			}
			row := []string{string(l.kind), ns, l.name, succ, reason, age(now, m.CreateTime)}
			if output == "wide" {
				row = append(row, m.DocumentID, strconv.FormatInt(m.Version, 10), msg)
			}
			rows = append(rows, row)
		}
		return printTable(a.stdout, rows)
	})
	return cmd
}

func (a *app) stderrLine(s string) { _, _ = a.stderr.Write([]byte(s + "\n")) }

// listDesires scans the three specs tables for desires matching f and joins their status.
// Documents that do not decode are skipped with a warning.
func (a *app) listDesires(ctx context.Context, st *store, f desireFilter) ([]listedDesire, error) {
	var out []listedDesire
	kr := newKindResolver(a.clusterDiscovery(ctx), nil, a.warnf)
	applies, err := listSpecs(ctx, a, st.applies)
	if err != nil {
		return nil, err
	}
	for _, d := range applies {
		obj, err := kubeapplier.ParseKubeContent(d.Spec.KubeContent)
		if err != nil {
			continue // cannot be about any object
		}
		gvk := obj.GroupVersionKind()
		if gvk.Group != f.rt.GVR.Group || (f.rt.exactVersion && gvk.Version != f.rt.GVR.Version) {
			continue
		}
		resource := ""
		if f.rt.Kind != "" {
			if gvk.Kind == f.rt.Kind {
				resource = f.rt.GVR.Resource
			}
		} else {
			info, err := kr.forKind(ctx, gvk)
			if err != nil {
				return nil, err
			}
			resource = info.GVR.Resource
		}
		if f.matches(gvk.Group, gvk.Version, resource, obj.GetNamespace(), obj.GetName()) {
			out = append(out, listedDesire{kind: kubeapplier.KindApplyDesire, spec: d, namespace: obj.GetNamespace(), name: obj.GetName()})
		}
	}
	deletes, err := listSpecs(ctx, a, st.deletes)
	if err != nil {
		return nil, err
	}
	for _, d := range deletes {
		out = appendTargetMatch(out, f, d, d.Spec.TargetItem)
	}
	reads, err := listSpecs(ctx, a, st.reads)
	if err != nil {
		return nil, err
	}
	for _, d := range reads {
		out = appendTargetMatch(out, f, d, d.Spec.TargetItem)
	}
	for i := range out {
		l := &out[i]
		id := l.spec.Meta().DocumentID
		switch l.kind {
		case kubeapplier.KindApplyDesire:
			l.status, err = statusGetter(st.applies, id)(ctx)
		case kubeapplier.KindDeleteDesire:
			l.status, err = statusGetter(st.deletes, id)(ctx)
		default:
			l.status, err = statusGetter(st.reads, id)(ctx)
		}
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(x, y listedDesire) int {
		return cmp.Or(cmp.Compare(x.namespace, y.namespace), cmp.Compare(x.name, y.name),
			cmp.Compare(kindOrder[x.kind], kindOrder[y.kind]), cmp.Compare(x.spec.Meta().DocumentID, y.spec.Meta().DocumentID))
	})
	return out, nil
}

func appendTargetMatch(out []listedDesire, f desireFilter, d kubeapplier.Desire, t kubeapplier.TargetItem) []listedDesire {
	if !f.matches(t.Group, t.Version, t.Resource, t.Namespace, t.Name) {
		return out
	}
	return append(out, listedDesire{kind: d.Kind(), spec: d, namespace: t.Namespace, name: t.Name})
}

// listSpecs scans a specs table; undecodable documents are reported as warnings.
func listSpecs[T kubeapplier.Desire](ctx context.Context, a *app, t kindTables[T]) ([]T, error) {
	ds, err := t.specs.List(ctx)
	if err != nil && !errors.Is(err, kubeapplier.ErrInvalidItem) {
		return nil, dbError(err)
	}
	if err != nil {
		for _, e := range unwrapJoined(err) {
			a.warnf("skipping a %s document: %s", t.kind, oneLine(e.Error()))
		}
	}
	return ds, nil
}

func unwrapJoined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// documentOf is the printed form of a listed desire.
func documentOf(l listedDesire) desireDocument {
	doc := desireDocument{Kind: l.kind, DynamoDBMetadata: *l.spec.Meta()}
	switch d := l.spec.(type) {
	case *kubeapplier.ApplyDesire:
		doc.Spec = d.Spec
	case *kubeapplier.DeleteDesire:
		doc.Spec = d.Spec
	case *kubeapplier.ReadDesire:
		doc.Spec = d.Spec
	}
	switch s := l.status.(type) {
	case *kubeapplier.ApplyDesire:
		doc.Status = s.Status
	case *kubeapplier.DeleteDesire:
		doc.Status = s.Status
	case *kubeapplier.ReadDesire:
		doc.Status = s.Status
	}
	return doc
}
