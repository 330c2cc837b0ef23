package main

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestResolveType(t *testing.T) {
	gvr := func(g, v, r string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: g, Version: v, Resource: r}
	}
	for _, tc := range []struct {
		name      string
		discovery bool
		args      typeArgs
		want      resolvedType
		wantCode  int // exit code of the error; 0 for none
	}{
		{"plural", true, typeArgs{typ: "configmaps"}, resolvedType{resourceInfo: resourceInfo{gvr("", "v1", "configmaps"), "ConfigMap", true}}, 0},
		{"short name", true, typeArgs{typ: "deploy"}, resolvedType{resourceInfo: resourceInfo{gvr("apps", "v1", "deployments"), "Deployment", true}}, 0},
		{"resource.group", true, typeArgs{typ: "Deployments.apps"}, resolvedType{resourceInfo: resourceInfo{gvr("apps", "v1", "deployments"), "Deployment", true}}, 0},
		{"resource.version.group", true, typeArgs{typ: "deployments.v1.apps"}, resolvedType{resourceInfo: resourceInfo{gvr("apps", "v1", "deployments"), "Deployment", true}, exactVersion: true}, 0},
		{"core resource.version", true, typeArgs{typ: "configmaps.v1"}, resolvedType{resourceInfo: resourceInfo{gvr("", "v1", "configmaps"), "ConfigMap", true}, exactVersion: true}, 0},
		{"cluster-scoped", true, typeArgs{typ: "ns"}, resolvedType{resourceInfo: resourceInfo{gvr("", "v1", "namespaces"), "Namespace", false}}, 0},
		{"unknown", true, typeArgs{typ: "widgets"}, resolvedType{}, exitUsage},
		{"flags skip discovery", true, typeArgs{typ: "widgets", group: "example.com", version: "v2", groupSet: true, versionSet: true},
			resolvedType{resourceInfo: resourceInfo{GVR: gvr("example.com", "v2", "widgets"), Namespaced: true}, exactVersion: true}, 0},
		{"version flag with resource.group", false, typeArgs{typ: "deployments.apps", version: "v1", versionSet: true},
			resolvedType{resourceInfo: resourceInfo{GVR: gvr("apps", "v1", "deployments"), Namespaced: true}, exactVersion: true}, 0},
		{"no discovery, qualified", false, typeArgs{typ: "clusterroles.v1.rbac.authorization.k8s.io"},
			resolvedType{resourceInfo: resourceInfo{GVR: gvr("rbac.authorization.k8s.io", "v1", "clusterroles")}, exactVersion: true}, 0},
		{"no discovery, core", false, typeArgs{typ: "secrets.v1"},
			resolvedType{resourceInfo: resourceInfo{GVR: gvr("", "v1", "secrets"), Namespaced: true}, exactVersion: true}, 0},
		{"no discovery, bare", false, typeArgs{typ: "secrets"}, resolvedType{}, exitUsage},
		{"no discovery, resource.group", false, typeArgs{typ: "deployments.apps"}, resolvedType{}, exitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newApp(nil, nil, &discard{})
			a.setupLogs = testLogs // klog stays on e2eKlog (integration_test.go)
			a.getenv = func(k string) string {
				if k == "KUBECONFIG" && tc.discovery {
					return "/fake"
				}
				return ""
			}
			a.newDiscovery = func(context.Context, string, func(string)) (resolver, error) { return fakeResolver{}, nil }
			got, err := a.resolveType(context.Background(), tc.args)
			if code := exitCode(err, -1); err != nil && code != tc.wantCode || err == nil && tc.wantCode != 0 {
				t.Fatalf("error %v (code %d), want code %d", err, exitCode(err, -1), tc.wantCode)
			}
			if err == nil && got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func TestKindResolverPrefersDiscoveryThenCRDs(t *testing.T) {
	var warnings []string
	warn := func(f string, args ...any) { warnings = append(warnings, f) }
	objs, err := decodeManifests("x", strings.NewReader(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec: {group: example.com, scope: Namespaced, names: {kind: Widget, plural: widgetz}}
`))
	if err != nil {
		t.Fatal(err)
	}
	kr := newKindResolver(fakeResolver{}, []*unstructured.Unstructured{objs[0].obj}, warn)
	for gvk, want := range map[schema.GroupVersionKind]resourceInfo{
		{Version: "v1", Kind: "ConfigMap"}:                    {schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "ConfigMap", true},
		{Group: "example.com", Version: "v1", Kind: "Widget"}: {schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgetz"}, "Widget", true},
		{Group: "x.io", Version: "v1", Kind: "Policy"}:        {schema.GroupVersionResource{Group: "x.io", Version: "v1", Resource: "policies"}, "Policy", true},
	} {
		got, err := kr.forKind(context.Background(), gvk)
		if err != nil || got != want {
			t.Errorf("%v: %+v %v, want %+v", gvk, got, err, want)
		}
	}
	if len(warnings) != 1 {
		t.Fatalf("warnings %v, want one (for the guess)", warnings)
	}
}
