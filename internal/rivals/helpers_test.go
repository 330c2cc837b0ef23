package rivals

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/stream"
)

var t0 = time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)

func cm(name string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"default"}}`, name)
}

// applyDesire is an ApplyDesire of mc01 created at created.
func applyDesire(id, content string, created time.Time) *api.ApplyDesire {
	d := &api.ApplyDesire{}
	d.DocumentID, d.CreateTime = id, created
	d.Spec.ManagementCluster = "mc01"
	d.Spec.KubeContent = json.RawMessage(content)
	return d
}

func deleteDesire(id, resource, name string) *api.DeleteDesire {
	d := &api.DeleteDesire{}
	d.DocumentID = id
	d.Spec.ManagementCluster = "mc01"
	d.Spec.TargetItem = api.TargetItem{Version: "v1", Resource: resource, Namespace: "default", Name: name}
	return d
}

// indexer is an informer's indexer of kind holding ds, as the stream informer stores them.
func indexer[T api.Desire](t *testing.T, kind api.DesireKind, ds ...T) cache.Indexer {
	t.Helper()
	idx := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, Indexers(kind))
	for _, d := range ds {
		if err := idx.Add(stream.Wrap(d)); err != nil {
			t.Fatal(err)
		}
	}
	return idx
}

// specs is a specs table as a consistent read sees it: the desires it holds by documentID,
// err for every read, or, per documentID, scripted answers given in order first.
type specs[T api.Desire] struct {
	held   map[string]T
	err    error
	script map[string][]answer[T]
	reads  int
}

type answer[T api.Desire] struct {
	d   T
	err error
}

func (s *specs[T]) Get(_ context.Context, id string) (T, error) {
	s.reads++
	var none T
	if s.err != nil {
		return none, s.err
	}
	if next := s.script[id]; len(next) > 0 {
		s.script[id] = next[1:]
		return next[0].d, next[0].err
	}
	d, ok := s.held[id]
	if !ok {
		return none, fmt.Errorf("%w: %s", api.ErrNotFound, id)
	}
	return d, nil
}

// withSpecAttribute returns d as DecodeItem reads it from an item whose spec also holds name:
// a desire a newer backend wrote with an option this applier does not know.
func withSpecAttribute[T api.Desire](t *testing.T, d T, name string) T {
	t.Helper()
	item, err := api.EncodeItem(d)
	if err != nil {
		t.Fatal(err)
	}
	item[api.AttrSpec].(*types.AttributeValueMemberM).Value[name] = &types.AttributeValueMemberS{Value: "x"}
	out := api.NewDesire[T]()
	if err := api.DecodeItem(item, out); err != nil {
		t.Fatal(err)
	}
	return out
}
