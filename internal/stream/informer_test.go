package stream

import (
	"testing"
	"time"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// TestInformerCachesDesiresByDocumentID: the informer's cache holds the table's desires keyed
// by documentID, its ListWatch names its table, and the ListWatch reads that cache (what it
// asks before it reports the stream caught up).
func TestInformerCachesDesiresByDocumentID(t *testing.T) {
	f := newStreamDB()
	f.AddTable(stTable, stNAOI, stShard0)
	f.PutRaw(stTable, stItem(t, "doc-a", 2))
	inf, lw := NewInformer[*api.ApplyDesire](f, f, stTable, api.KindApplyDesire, testOptions(), nil)
	if lw.Table() != stTable {
		t.Fatalf("Table() = %q, want %q", lw.Table(), stTable)
	}
	runInformer(t, inf)
	f.Put(stTable, stShard0, stItem(t, "doc-b", 1))
	waitFor(t, 10*time.Second, "doc-b through the stream", func() bool {
		_, ok, _ := inf.GetIndexer().GetByKey("doc-b")
		return ok
	})
	for id, version := range map[string]int64{"doc-a": 2, "doc-b": 1} {
		obj, ok, err := inf.GetIndexer().GetByKey(id)
		d, isApply := As[*api.ApplyDesire](obj)
		if err != nil || !ok || !isApply || d.DocumentID != id || d.Version != version {
			t.Errorf("cache under %s: %v (%v, %v)", id, obj, ok, err)
		}
		if got, ok := lw.stored(id); !ok || got.Meta().Version != version {
			t.Errorf("the ListWatch's view of the cache under %s: %v, %v", id, got, ok)
		}
	}
	if _, ok := lw.stored("doc-missing"); ok {
		t.Error("the ListWatch sees a desire the cache does not hold")
	}
}
