package api

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestObjectKey: the key of each content, read by DecodeItem and by ObjectKey on a desire
// built in code, which must agree.
func TestObjectKey(t *testing.T) {
	cases := []struct{ content, want string }{
		{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"default"}}`, "/ConfigMap/default/a"},
		{`{"apiVersion":"apps/v1beta1","kind":"Deployment","metadata":{"name":"w","namespace":"n"}}`, "apps/Deployment/n/w"},
		{`{"kind":"Deployment","metadata":{"namespace":"n","name":"w"},"apiVersion":"apps/v1"}`, "apps/Deployment/n/w"},
		{`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"n"}}`, "/Namespace//n"},
		{`{"apiVersion":"/v1","kind":"Namespace","metadata":{"name":"n"}}`, "/Namespace//n"},
		{`{"kind":"ConfigMap"}`, ""},
		{`{"apiVersion":"v1","metadata":{"name":"no-kind","namespace":"n"}}`, ""},
		{`{"apiVersion":"a/b/c","kind":"ConfigMap","metadata":{"name":"bad-version","namespace":"n"}}`, ""},
		{`{"apiVersion":"v1","kind":5,"metadata":{"name":"typed"}}`, ""},
		{`[1,2]`, ""},
		{`"a string"`, ""},
	}
	for _, tc := range cases {
		built := &ApplyDesire{Spec: ApplyDesireSpec{KubeContent: json.RawMessage(tc.content)}}
		if got := built.ObjectKey(); got != tc.want {
			t.Errorf("built: ObjectKey(%s) = %q, want %q", tc.content, got, tc.want)
		}
		var decoded ApplyDesire
		item := Item{AttrDocumentID: &types.AttributeValueMemberS{Value: "d"}, AttrSpecKubeContent: &types.AttributeValueMemberS{Value: tc.content}}
		if err := DecodeItem(item, &decoded); err != nil {
			t.Fatalf("DecodeItem(%s): %v", tc.content, err)
		}
		if decoded.object.key != tc.want || !decoded.object.keys(decoded.Spec.KubeContent) {
			t.Errorf("DecodeItem(%s) kept key %q (of its content: %v), want %q", tc.content, decoded.object.key, decoded.object.keys(decoded.Spec.KubeContent), tc.want)
		}
		if got := decoded.ObjectKey(); got != tc.want {
			t.Errorf("decoded: ObjectKey(%s) = %q, want %q", tc.content, got, tc.want)
		}
	}
	if got := (&ApplyDesire{}).ObjectKey(); got != "" {
		t.Errorf("no content: ObjectKey = %q, want none", got)
	}
}

// TestObjectKeyFollowsTheContent: the key DecodeItem kept is not used once the content is
// replaced, and a deep copy keeps it for its own copy of the content.
func TestObjectKeyFollowsTheContent(t *testing.T) {
	var d ApplyDesire
	item := Item{AttrDocumentID: &types.AttributeValueMemberS{Value: "d"},
		AttrSpecKubeContent: &types.AttributeValueMemberS{Value: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`}}
	if err := DecodeItem(item, &d); err != nil {
		t.Fatal(err)
	}
	c := d.DeepCopy()
	if got := c.ObjectKey(); got != "/ConfigMap//a" || !c.object.keys(c.Spec.KubeContent) {
		t.Errorf("deep copy: ObjectKey = %q (kept: %v), want /ConfigMap//a from its own content", got, c.object.keys(c.Spec.KubeContent))
	}
	d.Spec.KubeContent = json.RawMessage(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"b"}}`)
	if got := d.ObjectKey(); got != "/Secret//b" {
		t.Errorf("replaced content: ObjectKey = %q, want /Secret//b", got)
	}
	// Edited in place, at the same length (json.RawMessage.UnmarshalJSON reuses the slice):
	// the key follows the bytes.
	var e ApplyDesire
	if err := DecodeItem(item, &e); err != nil {
		t.Fatal(err)
	}
	before := &e.Spec.KubeContent[0]
	if err := json.Unmarshal([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"z"}}`), &e.Spec.KubeContent); err != nil {
		t.Fatal(err)
	}
	if &e.Spec.KubeContent[0] != before {
		t.Fatal("the test meant an edit in place: the content moved")
	}
	if got := e.ObjectKey(); got != "/ConfigMap//z" {
		t.Errorf("content edited in place: ObjectKey = %q, want /ConfigMap//z", got)
	}
}

// TestDecodeItemRefusesContentThatIsNotJSON: the pass that reads the key still refuses
// content that is not JSON, as ContentOf does.
func TestDecodeItemRefusesContentThatIsNotJSON(t *testing.T) {
	for _, content := range []string{`not json`, `{"kind":"ConfigMap"`, `{"a":1} trailing`} {
		var d ApplyDesire
		item := Item{AttrDocumentID: &types.AttributeValueMemberS{Value: "d"}, AttrSpecKubeContent: &types.AttributeValueMemberS{Value: content}}
		if err := DecodeItem(item, &d); !errors.Is(err, ErrInvalidItem) {
			t.Errorf("DecodeItem(%s) = %v, want ErrInvalidItem", content, err)
		}
		if _, err := ContentOf(item, AttrSpecKubeContent); err == nil {
			t.Errorf("ContentOf(%s) accepted it", content)
		}
	}
}
