package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
)

// discoveryTimeout bounds each discovery request.
const discoveryTimeout = 10 * time.Second

// discoveryResolver maps kinds and resource types through the cluster's discovery API, with
// short names (cm, deploy, ...) expanded the way kubectl does.
type discoveryResolver struct {
	mapper meta.RESTMapper
}

// newDiscoveryResolver connects to the cluster of kubeconfig (a path, or a $KUBECONFIG-style
// list) and checks that it answers.
func newDiscoveryResolver(ctx context.Context, kubeconfig string, warn func(string)) (resolver, error) {
	rules := &clientcmd.ClientConfigLoadingRules{Precedence: filepath.SplitList(kubeconfig)}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg.Timeout = discoveryTimeout
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if _, err := disc.ServerVersionWithContext(ctx); err != nil {
		return nil, err
	}
	cached := memory.NewMemCacheClient(disc)
	mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(cached), cached, warn)
	return &discoveryResolver{mapper: mapper}, nil
}

func (r *discoveryResolver) forKind(_ context.Context, gvk schema.GroupVersionKind) (resourceInfo, error) {
	m, err := r.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		if meta.IsNoMatchError(err) {
			return resourceInfo{}, fmt.Errorf("%w: %w", errNoMatch, err)
		}
		return resourceInfo{}, fmt.Errorf("discovery of %s: %w", gvk, err)
	}
	return infoOf(m), nil
}

func (r *discoveryResolver) forType(_ context.Context, typ string) (resourceInfo, error) {
	fully, gr := schema.ParseResourceArg(typ)
	var (
		gvr schema.GroupVersionResource
		err error
	)
	if fully != nil {
		gvr, err = r.mapper.ResourceFor(*fully) // resource.version.group
	}
	if fully == nil || err != nil {
		gvr, err = r.mapper.ResourceFor(gr.WithVersion("")) // resource or resource.group
	}
	if err != nil {
		if meta.IsNoMatchError(err) {
			return resourceInfo{}, fmt.Errorf("%w: %w", errNoMatch, err)
		}
		return resourceInfo{}, fmt.Errorf("discovery of %q: %w", typ, err)
	}
	gvk, err := r.mapper.KindFor(gvr)
	if err != nil {
		return resourceInfo{}, fmt.Errorf("discovery of %q: %w", typ, err)
	}
	m, err := r.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return resourceInfo{}, fmt.Errorf("discovery of %q: %w", typ, err)
	}
	return infoOf(m), nil
}

func infoOf(m *meta.RESTMapping) resourceInfo {
	return resourceInfo{GVR: m.Resource, Kind: m.GroupVersionKind.Kind, Namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace}
}
