package main

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// defaultNamespace is used for namespaced objects that name none, as kubectl does.
const defaultNamespace = "default"

// target is one object a desire is about.
type target struct {
	item  api.TargetItem
	label string                     // "ConfigMap default/foo"
	obj   *unstructured.Unstructured // the manifest object (namespace settled); nil for TYPE NAME
}

// manifestTargets resolves the targets of -f objects. A namespaced object without a namespace
// gets --namespace, else "default"; one whose namespace differs from --namespace is an error;
// a cluster-scoped object's namespace is dropped with a warning.
func (a *app) manifestTargets(ctx context.Context, ms []manifest, namespace string) ([]target, error) {
	objs := make([]*unstructured.Unstructured, len(ms))
	for i, m := range ms {
		objs[i] = m.obj
	}
	kr := newKindResolver(a.clusterDiscovery(ctx), objs, a.warnf)
	out := make([]target, 0, len(ms))
	for _, m := range ms {
		o := m.obj
		gvk := o.GroupVersionKind()
		info, err := kr.forKind(ctx, gvk)
		if err != nil {
			return nil, err
		}
		ns := o.GetNamespace()
		switch {
		case !info.Namespaced:
			if ns != "" {
				a.warnf("%s: %s is cluster-scoped; ignoring metadata.namespace %q", m.source, objectLabel(gvk.Kind, "", o.GetName()), ns)
				ns = ""
				unstructured.RemoveNestedField(o.Object, "metadata", "namespace")
			}
		case ns == "":
			ns = namespace
			if ns == "" {
				ns = defaultNamespace
			}
			o.SetNamespace(ns)
		case namespace != "" && ns != namespace:
			return nil, usageErrorf("%s: the namespace from the object %q does not match --namespace %q", m.source, ns, namespace)
		}
		out = append(out, target{
			item: api.TargetItem{Group: gvk.Group, Version: gvk.Version, Resource: info.GVR.Resource,
				Namespace: ns, Name: o.GetName()},
			label: objectLabel(gvk.Kind, ns, o.GetName()),
			obj:   o,
		})
	}
	return out, nil
}

// typeTarget resolves TYPE NAME [-n NS]: a namespaced type defaults to "default", a
// cluster-scoped one ignores --namespace.
func (a *app) typeTarget(ctx context.Context, ta typeArgs, name, namespace string) (target, error) {
	rt, err := a.resolveType(ctx, ta)
	if err != nil {
		return target{}, err
	}
	if name == "" {
		return target{}, usageErrorf("name must not be empty")
	}
	ns := ""
	if rt.Namespaced {
		ns = namespace
		if ns == "" {
			ns = defaultNamespace
		}
	}
	return target{
		item: api.TargetItem{Group: rt.GVR.Group, Version: rt.GVR.Version, Resource: rt.GVR.Resource,
			Namespace: ns, Name: name},
		label: objectLabel(typeLabel(rt.resourceInfo), ns, name),
	}, nil
}

// desireSettings are what every written desire needs from the settings.
type desireSettings struct {
	taskKey string
	common  api.CommonSpec
}

func (s settings) forDesires() (desireSettings, error) {
	tk, err := s.desireTaskKey()
	if err != nil {
		return desireSettings{}, err
	}
	return desireSettings{taskKey: tk, common: api.CommonSpec{ManagementCluster: s.ManagementCluster, ClusterID: s.ClusterID}}, nil
}

func (d desireSettings) id(t target) string { return api.DesireID(d.taskKey, t.item) }

// desireStore connects to the tables of the effective settings, for commands that address
// desires by their ID.
func (a *app) desireStore(ctx context.Context) (*store, desireSettings, error) {
	st, s, err := a.store(ctx)
	if err != nil {
		return nil, desireSettings{}, err
	}
	ds, err := s.forDesires()
	return st, ds, err
}

// openTarget connects to the tables of the effective settings and resolves TYPE NAME
// (args[0], args[1]) to its target: what read and wait do before anything else.
func (a *app) openTarget(cmd *cobra.Command, ta *typeArgs, args []string, namespace string) (*store, desireSettings, target, error) {
	ctx := cmd.Context()
	st, ds, err := a.desireStore(ctx)
	if err != nil {
		return nil, desireSettings{}, target{}, err
	}
	settleTypeArgs(cmd, ta, args[0])
	t, err := a.typeTarget(ctx, *ta, args[1], namespace)
	return st, ds, t, err
}
