package api

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// upstreamDelete is a folded Delete as the forks of rosa-hyperfleet-kube-applier write it
// (commit c71c7549 "Refactor/remove delete desire"): type Delete, a targetItem, no kubeContent.
func upstreamDelete() Item {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	return Item{
		AttrDocumentID: s("0b5f6a51-6c1b-5b8e-8f6c-4c1f0e7d2a10"), AttrVersion: &types.AttributeValueMemberN{Value: "2"},
		AttrCreateTime: s("2026-12-04T10:00:00Z"), AttrUpdateTime: s("2026-12-04T10:00:01Z"),
		AttrSpec: &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"managementCluster": s("mc01"), "clusterID": s("hc1"), "type": s(ApplyTypeDelete),
			"targetItem": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
				"group": s("apps"), "version": s("v1"), "resource": s("deployments"), "namespace": s("shop"), "name": s("web")}},
		}},
	}
}

// TestFoldedDeleteCodec: both upstream shapes decode with nothing unknown, and encode back to
// the same spec map (type and serverSideApply kept as written; nothing added).
func TestFoldedDeleteCodec(t *testing.T) {
	ssa := upstreamDelete()
	spec := ssa[AttrSpec].(*types.AttributeValueMemberM).Value
	ssa[AttrSpec] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
		"managementCluster": spec["managementCluster"], "type": &types.AttributeValueMemberS{Value: ApplyTypeServerSideApply},
		"nodePoolName":    &types.AttributeValueMemberS{Value: "np-1"},
		"targetItem":      spec["targetItem"],
		"serverSideApply": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}},
	}}
	ssa[AttrSpecKubeContent] = &types.AttributeValueMemberS{Value: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop"}}`}
	for _, tc := range []struct {
		name     string
		item     Item
		isDelete bool
	}{
		{"Delete", upstreamDelete(), true},
		{"ServerSideApply with targetItem and serverSideApply {}", ssa, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d ApplyDesire
			if err := DecodeItem(tc.item, &d); err != nil {
				t.Fatal(err)
			}
			if u := d.Spec.UnknownAttributes(); len(u) > 0 {
				t.Fatalf("unknown attributes %v", u)
			}
			if err := CheckOptions(&d); err != nil {
				t.Fatalf("CheckOptions = %v", err)
			}
			if d.Spec.IsDelete() != tc.isDelete {
				t.Fatalf("IsDelete = %v", d.Spec.IsDelete())
			}
			out, err := EncodeItem(&d)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(out[AttrSpec], tc.item[AttrSpec]) {
				t.Fatalf("spec encoded as %#v, want %#v", out[AttrSpec], tc.item[AttrSpec])
			}
			if _, has := out[AttrSpecKubeContent]; has != !tc.isDelete {
				t.Fatalf("spec_kubeContent present = %v", has)
			}
			c := d.DeepCopy()
			if tc.isDelete {
				c.Spec.TargetItem.Name = "other"
				if d.Spec.TargetItem.Name != "web" {
					t.Fatal("the copy shares targetItem")
				}
				dd, ok := d.AsDeleteDesire()
				if !ok || dd.Spec.TargetItem.Name != "web" || dd.DocumentID != d.DocumentID || dd.Spec.ManagementCluster != "mc01" {
					t.Fatalf("AsDeleteDesire = %+v, %v", dd, ok)
				}
			} else if _, ok := d.AsDeleteDesire(); ok {
				t.Fatal("AsDeleteDesire of a ServerSideApply")
			}
		})
	}
}

// TestFoldedDeleteUnknownInside: an attribute inside serverSideApply or the targetItem of an
// ApplyDesire is refused by its path, as inside any option's map.
func TestFoldedDeleteUnknownInside(t *testing.T) {
	item := upstreamDelete()
	spec := item[AttrSpec].(*types.AttributeValueMemberM).Value
	spec["serverSideApply"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
		"kubeContent": &types.AttributeValueMemberS{Value: "{}"}}}
	spec["targetItem"].(*types.AttributeValueMemberM).Value["uid"] = &types.AttributeValueMemberS{Value: "u"}
	var d ApplyDesire
	if err := DecodeItem(item, &d); err != nil {
		t.Fatal(err)
	}
	if got, want := d.Spec.UnknownAttributes(), []string{"serverSideApply.kubeContent", "targetItem.uid"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("UnknownAttributes = %v, want %v", got, want)
	}
}

// TestCheckApplyType: each fault of the folded shape is refused with ErrInvalidOption and a
// message naming it.
func TestCheckApplyType(t *testing.T) {
	target := &TargetItem{Version: "v1", Resource: "configmaps", Namespace: "ns", Name: "x"}
	content := json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"ns"}}`)
	no := false
	del := func(change func(*ApplyDesireSpec)) Desire {
		s := ApplyDesireSpec{Type: ApplyTypeDelete, TargetItem: target}
		change(&s)
		return &ApplyDesire{Spec: s}
	}
	for _, tc := range []struct {
		name string
		d    Desire
		want string // "" for nil
	}{
		{"Delete", del(func(*ApplyDesireSpec) {}), ""},
		{"Delete, Foreground", del(func(s *ApplyDesireSpec) { s.PropagationPolicy = PropagationForeground }), ""},
		{"an unknown type", &ApplyDesire{Spec: ApplyDesireSpec{Type: "Patch"}},
			`spec.type is "Patch", a value this applier does not know (it knows ServerSideApply, Delete)`},
		{"a type in lower case", &ApplyDesire{Spec: ApplyDesireSpec{Type: "delete"}}, `spec.type is "delete"`},
		{"Delete with kubeContent", del(func(s *ApplyDesireSpec) { s.KubeContent = content }),
			"spec.type is Delete but the item holds spec_kubeContent: a Delete deletes spec.targetItem and applies nothing"},
		{"Delete without targetItem", del(func(s *ApplyDesireSpec) { s.TargetItem = nil }),
			"spec.type is Delete but spec.targetItem is missing or incomplete"},
		{"Delete, targetItem without resource", del(func(s *ApplyDesireSpec) { s.TargetItem = &TargetItem{Version: "v1", Name: "x"} }),
			"spec.targetItem is missing or incomplete"},
		{"Delete with applyPolicy", del(func(s *ApplyDesireSpec) { s.ApplyPolicy = ApplyPolicyCreateOnly }),
			"spec.applyPolicy is set but spec.type is Delete: it belongs to type ServerSideApply"},
		{"Delete with forceConflicts", del(func(s *ApplyDesireSpec) { s.ForceConflicts = &no }), "spec.forceConflicts is set"},
		{"Delete with serverSideApply", del(func(s *ApplyDesireSpec) { s.ServerSideApply = &ServerSideApplySpec{} }), "spec.serverSideApply is set"},
		{"Delete, unknown propagation", del(func(s *ApplyDesireSpec) { s.PropagationPolicy = "Cascade" }), `spec.propagationPolicy is "Cascade"`},
		{"ServerSideApply with propagationPolicy", &ApplyDesire{Spec: ApplyDesireSpec{KubeContent: content, PropagationPolicy: PropagationOrphan}},
			"spec.propagationPolicy is set but spec.type is ServerSideApply: it is an option of type Delete only"},
		{"ServerSideApply, targetItem agrees", &ApplyDesire{Spec: ApplyDesireSpec{Type: ApplyTypeServerSideApply, KubeContent: content, TargetItem: target}}, ""},
		{"ServerSideApply, targetItem names another object", &ApplyDesire{Spec: ApplyDesireSpec{KubeContent: content,
			TargetItem: &TargetItem{Version: "v1", Resource: "configmaps", Namespace: "ns", Name: "y"}}},
			"spec.targetItem names configmaps/v1 ns/y but kubeContent is v1 ConfigMap ns/x: they must name one object"},
		{"ServerSideApply, targetItem of another version", &ApplyDesire{Spec: ApplyDesireSpec{KubeContent: content,
			TargetItem: &TargetItem{Version: "v2", Resource: "configmaps", Namespace: "ns", Name: "x"}}}, "they must name one object"},
		// Without content: the apply's own refusal ("kubeContent is empty"), as before types.
		{"ServerSideApply without content", &ApplyDesire{Spec: ApplyDesireSpec{Type: ApplyTypeServerSideApply}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckOptions(tc.d)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("CheckOptions = %v, want nil", err)
			case tc.want == "":
			case !errors.Is(err, ErrInvalidOption):
				t.Fatalf("CheckOptions = %v, want ErrInvalidOption", err)
			case !strings.Contains(err.Error(), tc.want):
				t.Fatalf("CheckOptions = %q, want it to say %q", err, tc.want)
			}
		})
	}
}

// TestCreateFoldedDelete: the client writes a folded Delete without kubeContent, and refuses
// one with kubeContent before any call.
func TestCreateFoldedDelete(t *testing.T) {
	ctx := context.Background()
	db := newFakeDB()
	specs := newTestClient(db).ApplyDesires()
	d := &ApplyDesire{DynamoDBMetadata: DynamoDBMetadata{DocumentID: "0b5f6a51-6c1b-5b8e-8f6c-4c1f0e7d2a10"},
		Spec: ApplyDesireSpec{Type: ApplyTypeDelete, TargetItem: &TargetItem{Version: "v1", Resource: "configmaps", Namespace: "ns", Name: "x"}}}
	stored, err := specs.Create(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	got, err := specs.Get(ctx, stored.DocumentID)
	if err != nil || !got.Spec.IsDelete() || got.Spec.TargetItem.Name != "x" || got.Spec.KubeContent != nil {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	got.Spec.KubeContent = json.RawMessage(`{"kind":"ConfigMap"}`)
	if _, err := specs.Replace(ctx, got); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("Replace of a Delete with kubeContent = %v, want ErrInvalidOption", err)
	}
	if db.puts != 1 {
		t.Fatalf("%d puts, want 1", db.puts)
	}
}

// TestFoldedLayout: the folded layout names and creates four tables (no DeleteDesire table),
// and refuses an override of a DeleteDesire table.
func TestFoldedLayout(t *testing.T) {
	l := TableLayout{Format: "{cluster}-{table}-{kind}", FoldedDeletes: true}
	if got := l.Kinds(); !reflect.DeepEqual(got, []DesireKind{KindApplyDesire, KindReadDesire}) {
		t.Fatalf("Kinds = %v", got)
	}
	if err := l.Validate("mc01"); err != nil {
		t.Fatalf("Validate = %v", err)
	}
	a := &adminRecorder{created: map[string]*dynamodb.CreateTableInput{}, indexes: map[string][]types.GlobalSecondaryIndexDescription{}}
	made, err := EnsureLayoutTables(context.Background(), a, l, "mc01")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"mc01-specs-applydesires", "mc01-specs-readdesires", "mc01-status-applydesires", "mc01-status-readdesires"}
	if !reflect.DeepEqual(made, want) {
		t.Fatalf("created %v, want %v", made, want)
	}
	l.Tables = map[string]string{"specs-deletedesires": "x-deletes"}
	if err := l.Validate("mc01"); !errors.Is(err, ErrInvalidLayout) || !strings.Contains(err.Error(), "has no DeleteDesire tables") {
		t.Fatalf("Validate with a DeleteDesire override = %v", err)
	}
	if got := (TableLayout{}).Kinds(); !reflect.DeepEqual(got, DesireKinds) {
		t.Fatalf("Kinds of the default layout = %v", got)
	}
}
