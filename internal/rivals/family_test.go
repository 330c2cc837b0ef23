package rivals

import (
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/kube-applier-aws/kubeapplier/api"
)

func TestObjectKey(t *testing.T) {
	cases := map[string]string{
		cm("a"): "/ConfigMap/default/a",
		`{"apiVersion":"apps/v1beta1","kind":"Deployment","metadata":{"name":"w","namespace":"n"}}`: "apps/Deployment/n/w",
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"w","namespace":"n"}}`:      "apps/Deployment/n/w",
		`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"n"}}`:                            "/Namespace//n",
		`{"kind":"ConfigMap"}`: "",
		`not json`:             "",
		`{"apiVersion":"v1","metadata":{"name":"no-kind","namespace":"n"}}`:                           "",
		`{"apiVersion":"a/b/c","kind":"ConfigMap","metadata":{"name":"bad-version","namespace":"n"}}`: "",
	}
	for content, want := range cases {
		if got := ObjectKey(applyDesire("x", content, t0)); got != want {
			t.Errorf("ObjectKey(%s) = %q, want %q", content, got, want)
		}
	}
	bad := applyDesire("x", cm("a"), t0)
	bad.Invalid = "undecodable"
	if got := ObjectKey(bad); got != "" {
		t.Errorf("ObjectKey(undecodable) = %q, want none", got)
	}
}

// TestIndexersShareFamilies: an ApplyDesire and a DeleteDesire of one object are found under
// the same familyIndex key, whatever the version or kind/resource spelling; ReadDesires and
// desires naming no object are not indexed.
func TestIndexersShareFamilies(t *testing.T) {
	ad := applyDesire("a", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"w","namespace":"n"}}`, t0)
	dd := deleteDesire("d", "deployments", "w")
	dd.Spec.TargetItem.Group, dd.Spec.TargetItem.Namespace = "apps", "n"
	applies := indexer(t, api.KindApplyDesire, ad, applyDesire("none", `{"kind":"ConfigMap"}`, t0))
	noResource := deleteDesire("no-resource", "", "w")
	noResource.Spec.TargetItem.Group, noResource.Spec.TargetItem.Namespace = "apps", "other"
	deletes := indexer(t, api.KindDeleteDesire, dd, noResource, &api.DeleteDesire{DynamoDBMetadata: api.DynamoDBMetadata{DocumentID: "unnamed"}})
	if got, want := applies.ListIndexFuncValues(familyIndex), deletes.ListIndexFuncValues(familyIndex); !slices.Equal(got, []string{"apps/n/w"}) || !slices.Equal(got, want) {
		t.Fatalf("families: applies %v, deletes %v; want [apps/n/w] in both", got, want)
	}
	if Indexers(api.KindReadDesire) != nil {
		t.Fatal("ReadDesires are indexed")
	}
}

// BenchmarkDecodeAndObjectKey: one ApplyDesire of 1 KiB decoded, and its key read three
// times, as its informer's index and the rules read it for one event.
func BenchmarkDecodeAndObjectKey(b *testing.B) {
	pad := strings.Repeat("abcdefghijklmnopqrstuvwxyz", 40)[:1000]
	item := api.Item{api.AttrDocumentID: &types.AttributeValueMemberS{Value: "d"},
		api.AttrSpecKubeContent: &types.AttributeValueMemberS{Value: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n"},"data":{"k":"` + pad + `"}}`}}
	for b.Loop() {
		var d api.ApplyDesire
		if err := api.DecodeItem(item, &d); err != nil {
			b.Fatal(err)
		}
		for range 3 {
			if ObjectKey(&d) != "/ConfigMap/n/a" {
				b.Fatal("no key")
			}
		}
	}
}
