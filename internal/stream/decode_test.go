package stream

import (
	"strings"
	"testing"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// 5. Records whose images are partial or undecodable: a REMOVE with only Keys deletes, a bad
// kubeContent is cached as Invalid, an image without documentID is dropped.
func TestStreamInformerPartialAndInvalidRecords(t *testing.T) {
	badJSON := func(t *testing.T) map[string]ddbtypes.AttributeValue {
		item := stItem(t, "doc-b", 2)
		item[api.AttrSpecKubeContent] = &ddbtypes.AttributeValueMemberS{Value: `{"kind":"ConfigMap",`}
		return item
	}
	badVersion := func(t *testing.T) map[string]ddbtypes.AttributeValue {
		item := stItem(t, "doc-b", 2)
		item[api.AttrVersion] = &ddbtypes.AttributeValueMemberS{Value: "two"}
		return item
	}
	noID := func(t *testing.T) map[string]ddbtypes.AttributeValue {
		item := stItem(t, "doc-n", 1)
		delete(item, api.AttrDocumentID)
		return item
	}
	key := func(id string) map[string]ddbtypes.AttributeValue {
		return map[string]ddbtypes.AttributeValue{api.AttrDocumentID: &ddbtypes.AttributeValueMemberS{Value: id}}
	}
	cases := []struct {
		name          string
		op            streamtypes.OperationType
		keys, oldImg  func(t *testing.T) map[string]ddbtypes.AttributeValue
		newImg        func(t *testing.T) map[string]ddbtypes.AttributeValue
		wantEvents    []stEvent // before the sentinel's
		wantStore     map[string]int64
		wantInvalidIn string // substring of doc-b's Invalid; "" when doc-b must be valid
	}{{
		name:       "REMOVE with Keys only",
		op:         streamtypes.OperationTypeRemove,
		keys:       func(*testing.T) map[string]ddbtypes.AttributeValue { return key("doc-a") },
		wantEvents: []stEvent{{Type: "delete", ID: "doc-a", Version: 0}},
		wantStore:  map[string]int64{"doc-b": 1, "doc-s": 1},
	}, {
		name:       "REMOVE with OldImage",
		op:         streamtypes.OperationTypeRemove,
		keys:       func(*testing.T) map[string]ddbtypes.AttributeValue { return key("doc-a") },
		oldImg:     func(t *testing.T) map[string]ddbtypes.AttributeValue { return stItem(t, "doc-a", 1) },
		wantEvents: []stEvent{{Type: "delete", ID: "doc-a", Version: 1}},
		wantStore:  map[string]int64{"doc-b": 1, "doc-s": 1},
	}, {
		name:          "MODIFY with kubeContent that is not JSON",
		op:            streamtypes.OperationTypeModify,
		keys:          func(*testing.T) map[string]ddbtypes.AttributeValue { return key("doc-b") },
		oldImg:        func(t *testing.T) map[string]ddbtypes.AttributeValue { return stItem(t, "doc-b", 1) },
		newImg:        badJSON,
		wantEvents:    []stEvent{{Type: "update", ID: "doc-b", Version: 2}},
		wantStore:     map[string]int64{"doc-a": 1, "doc-b": 2, "doc-s": 1},
		wantInvalidIn: "spec_kubeContent is not valid JSON",
	}, {
		name:          "MODIFY with a version that is not a number",
		op:            streamtypes.OperationTypeModify,
		keys:          func(*testing.T) map[string]ddbtypes.AttributeValue { return key("doc-b") },
		oldImg:        func(t *testing.T) map[string]ddbtypes.AttributeValue { return stItem(t, "doc-b", 1) },
		newImg:        badVersion,
		wantEvents:    []stEvent{{Type: "update", ID: "doc-b", Version: 0}},
		wantStore:     map[string]int64{"doc-a": 1, "doc-b": 0, "doc-s": 1},
		wantInvalidIn: "invalid desire item",
	}, {
		name:      "INSERT without documentID is dropped",
		op:        streamtypes.OperationTypeInsert,
		newImg:    noID,
		wantStore: map[string]int64{"doc-a": 1, "doc-b": 1, "doc-s": 1},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newStreamDB()
			arn := f.AddTable(stTable, stNAOI, stShard0)
			f.PutRaw(stTable, stItem(t, "doc-a", 1))
			f.PutRaw(stTable, stItem(t, "doc-b", 1))
			h := startInformer(t, f)
			img := func(fn func(*testing.T) map[string]ddbtypes.AttributeValue) map[string]ddbtypes.AttributeValue {
				if fn == nil {
					return nil
				}
				return fn(t)
			}
			f.AppendRecord(arn, stShard0, tc.op, img(tc.keys), img(tc.oldImg), img(tc.newImg))
			f.Put(stTable, stShard0, stItem(t, "doc-s", 1)) // sentinel: read after the record under test

			want := []stEvent{
				{Type: "add", ID: "doc-a", Version: 1, Initial: true},
				{Type: "add", ID: "doc-b", Version: 1, Initial: true},
			}
			want = append(append(want, tc.wantEvents...), stEvent{Type: "add", ID: "doc-s", Version: 1})
			h.rec.waitEvents(t, want)
			h.waitStore(t, tc.wantStore)

			if _, ok := tc.wantStore["doc-b"]; !ok {
				return
			}
			b, err := h.lister.Get("doc-b")
			if err != nil {
				t.Fatalf("Lister.Get(doc-b): %v", err)
			}
			switch {
			case tc.wantInvalidIn == "" && b.Meta().Invalid != "":
				t.Errorf("doc-b Invalid = %q, want valid", b.Meta().Invalid)
			case tc.wantInvalidIn != "" && !strings.Contains(b.Meta().Invalid, tc.wantInvalidIn):
				t.Errorf("doc-b Invalid = %q, want it to contain %q", b.Meta().Invalid, tc.wantInvalidIn)
			case tc.wantInvalidIn != "" && b.Spec.KubeContent != nil:
				t.Errorf("invalid doc-b kept kubeContent %s", b.Spec.KubeContent)
			}
		})
	}
}
