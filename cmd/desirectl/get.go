package main

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// listedDesire is a desire about the requested objects, with its status document (nil when
// there is none yet).
type listedDesire struct {
	kind      api.DesireKind
	tables    desireTables
	spec      api.Desire
	status    api.Desire
	namespace string
	name      string
	typ       string // the target's type: resource or resource.group
}

// desireFilter selects desires by target.
type desireFilter struct {
	rt        resolvedType
	allTypes  bool   // every type of object: rt is unset
	namespace string // "" for all namespaces
	name      string // "" for all names
}

func (f desireFilter) matches(group, version, resource, namespace, name string) bool {
	return (f.allTypes || group == f.rt.GVR.Group && resource == f.rt.GVR.Resource &&
		(!f.rt.exactVersion || version == f.rt.GVR.Version)) &&
		(f.namespace == "" || namespace == f.namespace) && (f.name == "" || name == f.name)
}

// degraded reports whether a desire's status says Degraded=True: the applier failed at its
// job for it (what the KubeApplierDesiresDegraded alert counts), whichever spec version the
// status answers.
func degraded(status api.Desire) bool {
	return status != nil && status.StatusCommon().IsTrue(api.ConditionDegraded)
}

var kindOrder = map[api.DesireKind]int{api.KindApplyDesire: 0, api.KindDeleteDesire: 1, api.KindReadDesire: 2}

func (a *app) newGetCommand() *cobra.Command {
	var (
		namespace string
		output    string
		kinds     string
		allKinds  bool
		degr      bool
		ta        typeArgs
	)
	cmd := &cobra.Command{
		Use:   "get (TYPE [NAME] | --all-kinds)",
		Short: "List the desires about objects of a type, with their status",
		Long: `List the ApplyDesires, DeleteDesires and ReadDesires whose target is of TYPE (and named NAME,
in namespace --namespace when given; all namespaces otherwise), joined with their status.
An ApplyDesire's target is read from its kubeContent. -o yaml|json prints the documents:
metadata and spec from the specs table, status from the status table. --kind read (or
delete, apply, a comma-separated list) lists only those kinds, e.g. the ReadDesires left by
'read --keep'; 'desirectl remove' removes desires. --all-kinds lists the desires about
objects of every type instead of TYPE, with a TYPE column. -o wide adds the ID, VERSION and
MESSAGE columns, and OPTIONS (the desire options the spec sets) and FEEDBACK (an ApplyDesire
status's feedback values) when a listed desire has any. --degraded lists only the desires whose
status says Degraded=True (the applier fails at its job for them: the
KubeApplierDesiresDegraded alert). It writes nothing.`,
		Example: `  desirectl get configmaps
  desirectl get cm foo -n default -o wide
  desirectl get deployments.v1.apps -o yaml
  desirectl get --all-kinds --degraded -o wide`,
		Args: usageArgs(cobra.RangeArgs(0, 2)),
	}
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "only desires about objects in this namespace (default all)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: wide, yaml or json (default a table)")
	cmd.Flags().StringVar(&kinds, "kind", "all", "desire kinds to list: read, delete, apply, a comma-separated list, or all")
	cmd.Flags().BoolVar(&allKinds, "all-kinds", false, "list the desires about objects of every type (no TYPE argument)")
	cmd.Flags().BoolVar(&degr, "degraded", false, "only desires whose status says Degraded=True")
	addTypeFlags(cmd, &ta)
	cmd.RunE = runE(func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		switch output {
		case "", "wide", "yaml", "json":
		default:
			return usageErrorf("--output must be wide, yaml or json, not %q", output)
		}
		which, err := parseKinds(kinds)
		if err != nil {
			return err
		}
		switch {
		case allKinds && len(args) > 0:
			return usageErrorf("give either TYPE [NAME] or --all-kinds, not both")
		case !allKinds && len(args) == 0:
			return usageErrorf("get needs TYPE [NAME] or --all-kinds; see 'desirectl get --help'")
		}
		st, _, err := a.store(ctx)
		if err != nil {
			return err
		}
		f := desireFilter{allTypes: allKinds, namespace: namespace}
		if !allKinds {
			settleTypeArgs(cmd, &ta, args[0])
			if f.rt, err = a.resolveType(ctx, ta); err != nil {
				return err
			}
			if !f.rt.Namespaced {
				f.namespace = ""
			}
			if len(args) == 2 {
				f.name = args[1]
			}
		}
		found, err := a.listDesires(ctx, st, f)
		if err != nil {
			return err
		}
		found = slices.DeleteFunc(found, func(l listedDesire) bool { return !kindAsked(which, l) || degr && !degraded(l.status) })
		if len(found) == 0 {
			if f.name != "" {
				return failedErrorf("no desire found for %s", objectLabel(typeLabel(f.rt.resourceInfo), f.namespace, f.name))
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
		header := []string{"KIND", "NAMESPACE", "NAME", "SUCCESSFUL", "REASON", "READY", "AGE"}
		if allKinds {
			header = slices.Insert(header, 1, "TYPE")
		}
		// OPTIONS and FEEDBACK only when a listed desire has options or feedback: a listing
		// of desires without options prints as it did before options existed.
		withOptions := output == "wide" && slices.ContainsFunc(found, func(l listedDesire) bool {
			return optionsSummary(l.spec) != "-" || feedbackSummary(l.status) != "-"
		})
		if output == "wide" {
			header = append(header, "ID", "VERSION", "MESSAGE")
			if withOptions {
				header = slices.Insert(header, len(header)-1, "OPTIONS", "FEEDBACK")
			}
		}
		rows := [][]string{header}
		now := a.clock.Now()
		for _, l := range found {
			m := l.spec.Meta()
			succ, reason, msg := successColumns(l.status, m)
			ns := l.namespace
			if ns == "" {
				ns = "<none>"
			}
			ready, kind := "-", string(l.kind)
			if ad, ok := l.spec.(*api.ApplyDesire); ok && ad.Spec.IsDelete() {
				kind += "/" + api.ApplyTypeDelete // a folded Delete: no Ready
			} else if l.kind == api.KindApplyDesire {
				ready = readyColumn(l.status, m)
			}
			row := []string{kind, ns, l.name, succ, reason, ready, age(now, m.CreateTime)}
			if allKinds {
				row = slices.Insert(row, 1, l.typ)
			}
			if output == "wide" {
				row = append(row, m.DocumentID, strconv.FormatInt(m.Version, 10), msg)
				if withOptions {
					row = slices.Insert(row, len(row)-1, optionsSummary(l.spec), feedbackSummary(l.status))
				}
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
	for _, tables := range st.kinds() {
		ds, err := tables.listSpecs(ctx)
		if err != nil && !errors.Is(err, api.ErrInvalidItem) {
			return nil, err
		}
		if err != nil {
			for _, e := range unwrapJoined(err) {
				a.warnf("skipping a %s document: %s", tables.desireKind(), oneLine(e.Error()))
			}
		}
		for _, d := range ds {
			t, ok, err := targetOf(ctx, kr, d, f)
			if err != nil {
				return nil, err
			}
			if ok && f.matches(t.Group, t.Version, t.Resource, t.Namespace, t.Name) {
				typ := t.Resource
				if t.Group != "" {
					typ += "." + t.Group
				}
				out = append(out, listedDesire{kind: tables.desireKind(), tables: tables, spec: d, namespace: t.Namespace, name: t.Name, typ: typ})
			}
		}
	}
	for i := range out {
		l := &out[i]
		var err error
		if l.status, err = l.tables.getStatus(ctx, l.spec.Meta().DocumentID); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(x, y listedDesire) int {
		return cmp.Or(cmp.Compare(x.namespace, y.namespace), cmp.Compare(x.name, y.name), cmp.Compare(x.typ, y.typ),
			cmp.Compare(kindOrder[x.kind], kindOrder[y.kind]), cmp.Compare(x.spec.Meta().DocumentID, y.spec.Meta().DocumentID))
	})
	return out, nil
}

// targetOf returns the object a desire is about, as far as f needs it: an ApplyDesire's is
// read from its kubeContent, and its resource resolved only when the group and version could
// match f (false: it cannot be about f's objects).
func targetOf(ctx context.Context, kr *kindResolver, d api.Desire, f desireFilter) (api.TargetItem, bool, error) {
	switch d := d.(type) {
	case *api.DeleteDesire:
		return d.Spec.TargetItem, true, nil
	case *api.ReadDesire:
		return d.Spec.TargetItem, true, nil
	case *api.ApplyDesire:
		if d.Spec.IsDelete() && d.Spec.TargetItem != nil {
			return *d.Spec.TargetItem, true, nil // a folded Delete names its object
		}
		obj, err := parseKubeContent(d.Spec.KubeContent)
		if err != nil {
			return api.TargetItem{}, false, nil // cannot be about any object
		}
		gvk := obj.GroupVersionKind()
		if !f.allTypes && (gvk.Group != f.rt.GVR.Group || (f.rt.exactVersion && gvk.Version != f.rt.GVR.Version)) {
			return api.TargetItem{}, false, nil
		}
		t := api.TargetItem{Group: gvk.Group, Version: gvk.Version, Namespace: obj.GetNamespace(), Name: obj.GetName()}
		if f.allTypes {
			// Every type: the resource names the row. An apiserver that does not answer (the
			// very incident this listing may serve) costs the name's accuracy, not the list.
			info, err := kr.forKind(ctx, gvk)
			if err != nil {
				info.GVR.Resource = guessPlural(gvk.Kind)
			}
			t.Resource = info.GVR.Resource
			return t, true, nil
		}
		if f.rt.Kind != "" {
			if gvk.Kind == f.rt.Kind {
				t.Resource = f.rt.GVR.Resource
			}
			return t, true, nil
		}
		info, err := kr.forKind(ctx, gvk)
		if err != nil {
			return api.TargetItem{}, false, err
		}
		t.Resource = info.GVR.Resource
		return t, true, nil
	}
	return api.TargetItem{}, false, nil
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
	doc.Spec, _ = specAndStatus(l.spec)
	_, doc.Status = specAndStatus(l.status)
	return doc
}

// specAndStatus returns a desire's spec and status; nil for a nil desire.
func specAndStatus(d api.Desire) (spec, status any) {
	switch d := d.(type) {
	case *api.ApplyDesire:
		return d.Spec, d.Status
	case *api.DeleteDesire:
		return d.Spec, d.Status
	case *api.ReadDesire:
		return d.Spec, d.Status
	}
	return nil, nil
}

// kindAsked reports whether l is of a kind in which; an ApplyDesire of type Delete (the
// folded layout's deletion) is a delete too.
func kindAsked(which map[api.DesireKind]bool, l listedDesire) bool {
	if ad, ok := l.spec.(*api.ApplyDesire); ok && ad.Spec.IsDelete() && which[api.KindDeleteDesire] {
		return true
	}
	return which[l.kind]
}
