package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// resourceInfo is what the CLI needs to know about a kind of object.
type resourceInfo struct {
	GVR        schema.GroupVersionResource
	Kind       string // "" when unknown
	Namespaced bool
}

// resolver maps between kinds and resources; the discovery resolver asks a cluster, tests use
// a fake.
type resolver interface {
	// forKind maps a manifest's apiVersion and kind to its resource. Kinds the cluster does
	// not serve return an error wrapping errNoMatch.
	forKind(ctx context.Context, gvk schema.GroupVersionKind) (resourceInfo, error)
	// forType resolves a command-line resource type: a plural, singular or short name,
	// optionally qualified as resource.group or resource.version.group.
	forType(ctx context.Context, typ string) (resourceInfo, error)
}

// errNoMatch: the resolver does not know the kind or resource.
var errNoMatch = errors.New("no match")

// clusterScopedKinds are the built-in cluster-scoped kinds (and their resources), so the
// guess without discovery gets the scope of common objects right. Everything else is
// guessed namespaced.
var clusterScopedKinds = map[string]string{
	"APIService":                       "apiservices",
	"CertificateSigningRequest":        "certificatesigningrequests",
	"ClusterRole":                      "clusterroles",
	"ClusterRoleBinding":               "clusterrolebindings",
	"ComponentStatus":                  "componentstatuses",
	"CSIDriver":                        "csidrivers",
	"CSINode":                          "csinodes",
	"CustomResourceDefinition":         "customresourcedefinitions",
	"FlowSchema":                       "flowschemas",
	"IngressClass":                     "ingressclasses",
	"MutatingWebhookConfiguration":     "mutatingwebhookconfigurations",
	"Namespace":                        "namespaces",
	"Node":                             "nodes",
	"PersistentVolume":                 "persistentvolumes",
	"PriorityClass":                    "priorityclasses",
	"PriorityLevelConfiguration":       "prioritylevelconfigurations",
	"RuntimeClass":                     "runtimeclasses",
	"StorageClass":                     "storageclasses",
	"ValidatingAdmissionPolicy":        "validatingadmissionpolicies",
	"ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings",
	"ValidatingWebhookConfiguration":   "validatingwebhookconfigurations",
	"VolumeAttachment":                 "volumeattachments",
}

func clusterScopedResource(resource string) bool {
	for _, r := range clusterScopedKinds {
		if r == resource {
			return true
		}
	}
	return false
}

// irregularPlurals are kinds whose resource the suffix rules get wrong.
var irregularPlurals = map[string]string{"endpoints": "endpoints"}

// guessPlural returns the resource of a kind by English suffix rules: lowercase, then
// consonant+y -> ies; s, x, z, ch, sh -> +es; else +s.
func guessPlural(kind string) string {
	k := strings.ToLower(kind)
	if p, ok := irregularPlurals[k]; ok {
		return p
	}
	switch {
	case k == "":
		return ""
	case strings.HasSuffix(k, "y") && len(k) > 1 && !strings.ContainsRune("aeiou", rune(k[len(k)-2])):
		return k[:len(k)-1] + "ies"
	case strings.HasSuffix(k, "s"), strings.HasSuffix(k, "x"), strings.HasSuffix(k, "z"),
		strings.HasSuffix(k, "ch"), strings.HasSuffix(k, "sh"):
		return k + "es"
	}
	return k + "s"
}

// kindResolver maps the kinds of one apply or delete batch: cluster discovery first, then the
// CustomResourceDefinitions of the batch itself (their kinds are not served yet), then a guess
// with a warning.
type kindResolver struct {
	discovery resolver // nil without a reachable cluster
	crds      map[schema.GroupKind]resourceInfo
	warnf     func(format string, args ...any)
}

// newKindResolver learns the kinds defined by the CustomResourceDefinitions among objs.
func newKindResolver(discovery resolver, objs []*unstructured.Unstructured, warnf func(string, ...any)) *kindResolver {
	r := &kindResolver{discovery: discovery, crds: map[schema.GroupKind]resourceInfo{}, warnf: warnf}
	for _, o := range objs {
		if o.GroupVersionKind().GroupKind() != (schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}) {
			continue
		}
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
		plural, _, _ := unstructured.NestedString(o.Object, "spec", "names", "plural")
		scope, _, _ := unstructured.NestedString(o.Object, "spec", "scope")
		if kind == "" || plural == "" {
			continue
		}
		r.crds[schema.GroupKind{Group: group, Kind: kind}] = resourceInfo{
			GVR: schema.GroupVersionResource{Group: group, Resource: plural}, Kind: kind, Namespaced: scope != "Cluster"}
	}
	return r
}

func (r *kindResolver) forKind(ctx context.Context, gvk schema.GroupVersionKind) (resourceInfo, error) {
	if r.discovery != nil {
		info, err := r.discovery.forKind(ctx, gvk)
		if err == nil {
			return info, nil
		}
		if !errors.Is(err, errNoMatch) {
			return resourceInfo{}, err
		}
	}
	if info, ok := r.crds[gvk.GroupKind()]; ok {
		info.GVR.Version = gvk.Version
		return info, nil
	}
	info := resourceInfo{GVR: gvk.GroupVersion().WithResource(guessPlural(gvk.Kind)), Kind: gvk.Kind, Namespaced: true}
	if _, ok := clusterScopedKinds[gvk.Kind]; ok {
		info.Namespaced = false
	}
	why := "no cluster discovery (set --kubeconfig or KUBECONFIG)"
	if r.discovery != nil {
		why = "the cluster does not serve it"
	}
	scope := "namespaced"
	if !info.Namespaced {
		scope = "cluster-scoped"
	}
	r.warnf("%s: guessed resource %q (%s) for kind %s", why, info.GVR.Resource, scope, gvk.GroupKind())
	return info, nil
}

// typeArgs are a command's resource type argument and its --group/--version flags.
type typeArgs struct {
	typ        string
	group      string
	version    string
	groupSet   bool
	versionSet bool
}

// resolvedType is a resource type to address desires with.
type resolvedType struct {
	resourceInfo
	// exactVersion: the user named the version, so `get` matches only that version.
	exactVersion bool
}

var versionRe = regexp.MustCompile(`^v\d+((alpha|beta)\d+)?$`)

// resolveType resolves a command's TYPE: with --version (and --group) as given; else through
// cluster discovery; else from the form resource.version.group (or resource.version for the
// core group). Anything else is a usage error asking for group and version.
func (a *app) resolveType(ctx context.Context, t typeArgs) (resolvedType, error) {
	typ := strings.ToLower(strings.TrimSpace(t.typ))
	if typ == "" {
		return resolvedType{}, usageErrorf("resource type must not be empty")
	}
	resource, rest, _ := strings.Cut(typ, ".")
	if t.groupSet || t.versionSet {
		if t.version == "" {
			return resolvedType{}, usageErrorf("--group needs --version")
		}
		group := rest
		if v, g, ok := strings.Cut(rest, "."); ok && versionRe.MatchString(v) {
			group = g // resource.version.group
		}
		if t.groupSet {
			group = t.group
		}
		return resolvedType{resourceInfo: resourceInfo{GVR: schema.GroupVersionResource{Group: group, Version: t.version, Resource: resource},
			Namespaced: !clusterScopedResource(resource)}, exactVersion: true}, nil
	}
	version, group, _ := strings.Cut(rest, ".")
	if d := a.clusterDiscovery(ctx); d != nil {
		info, err := d.forType(ctx, typ)
		if errors.Is(err, errNoMatch) && versionRe.MatchString(version) && group == "" {
			// resource.version names a core type, which discovery reads as resource.group.
			info, err = d.forType(ctx, resource+"."+version+".")
		}
		if errors.Is(err, errNoMatch) {
			return resolvedType{}, usageErrorf("the server doesn't have a resource type %q", t.typ)
		}
		if err != nil {
			return resolvedType{}, err
		}
		exact := versionRe.MatchString(version) && info.GVR.Version == version && info.GVR.Group == group
		return resolvedType{resourceInfo: info, exactVersion: exact}, nil
	}
	if versionRe.MatchString(version) {
		return resolvedType{resourceInfo: resourceInfo{GVR: schema.GroupVersionResource{Group: group, Version: version, Resource: resource},
			Namespaced: !clusterScopedResource(resource)}, exactVersion: true}, nil
	}
	return resolvedType{}, usageErrorf("cannot resolve resource type %q without cluster discovery: pass --group and --version, "+
		"write it as RESOURCE.VERSION.GROUP (e.g. deployments.v1.apps, or configmaps.v1 for the core group), or set --kubeconfig", t.typ)
}

// typeLabel names a resolved type in messages: the kind when known, else resource.group.
func typeLabel(info resourceInfo) string {
	if info.Kind != "" {
		return info.Kind
	}
	if info.GVR.Group == "" {
		return info.GVR.Resource
	}
	return info.GVR.Resource + "." + info.GVR.Group
}

// objectLabel is "Kind namespace/name" or "Kind name".
func objectLabel(kind, namespace, name string) string {
	if namespace == "" {
		return fmt.Sprintf("%s %s", kind, name)
	}
	return fmt.Sprintf("%s %s/%s", kind, namespace, name)
}
