package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// goldenKind returns a new desire of the kind a golden file's name starts with.
func goldenKind(t *testing.T, name string) Desire {
	t.Helper()
	switch {
	case strings.Contains(name, "applydesire"):
		return &ApplyDesire{}
	case strings.Contains(name, "deletedesire"):
		return &DeleteDesire{}
	case strings.Contains(name, "readdesire"):
		return &ReadDesire{}
	}
	t.Fatalf("golden file %s names no kind", name)
	return nil
}

func readGolden(t *testing.T, path string) Item {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	item, err := ItemFromJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	return item
}

// contains reports where want is not in got: every attribute of want, recursively in maps,
// with the same type and value ("" when all are).
func contains(got, want Item, path string) string {
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			return path + k + " missing"
		}
		wm, wok := w.(*types.AttributeValueMemberM)
		gm, gok := g.(*types.AttributeValueMemberM)
		if wok && gok {
			if d := contains(gm.Value, wm.Value, path+k+"."); d != "" {
				return d
			}
			continue
		}
		wj, _ := ItemToJSON(Item{k: w})
		gj, _ := ItemToJSON(Item{k: g})
		if !bytes.Equal(wj, gj) {
			return string(gj) + " != " + string(wj)
		}
	}
	return ""
}

// TestGoldenItems holds the codec to the item layout: every golden item (testdata/golden, in
// DynamoDB JSON) decodes and encodes again unchanged. Items the applier writes (and
// EncodeItem) must come back byte for byte; items written by other tools (the AWS CLI's
// put-item input, boto3's put_item in examples/backend-python) must keep every attribute
// they had. A renamed or retyped attribute in the types fails here.
func TestGoldenItems(t *testing.T) {
	files, err := filepath.Glob("testdata/golden/*.json")
	if err != nil || len(files) < 6 {
		t.Fatalf("golden files %v, %v", files, err)
	}
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			item := readGolden(t, path)
			d := goldenKind(t, name)
			if err := DecodeItem(item, d); err != nil {
				t.Fatal(err)
			}
			got, err := EncodeItem(d)
			if err != nil {
				t.Fatal(err)
			}
			foreign := strings.HasPrefix(name, "awscli-") || strings.HasPrefix(name, "python-")
			gj, _ := ItemToJSON(got)
			wj, _ := ItemToJSON(item)
			switch {
			case foreign:
				if diff := contains(got, item, ""); diff != "" {
					t.Fatalf("re-encoded item lost or changed %s\n got %s\nwant %s", diff, gj, wj)
				}
			case !bytes.Equal(gj, wj):
				t.Fatalf("re-encoded item differs\n got %s\nwant %s", gj, wj)
			}
			// A second decode gives the same desire.
			again := goldenKind(t, name)
			if err := DecodeItem(got, again); err != nil {
				t.Fatal(err)
			}
			a, _ := json.Marshal(d)
			b, _ := json.Marshal(again)
			if !bytes.Equal(a, b) {
				t.Fatalf("decode(encode(decode(x))) differs:\n%s\n%s", a, b)
			}
		})
	}
}

// The status golden item decodes into the fields a backend reads, by name and type.
func TestGoldenStatusFields(t *testing.T) {
	item := readGolden(t, "testdata/golden/applydesire-status.json")
	var d ApplyDesire
	if err := DecodeItem(item, &d); err != nil {
		t.Fatal(err)
	}
	st := item[AttrStatus].(*types.AttributeValueMemberM).Value
	s := func(m Item, k string) string { return m[k].(*types.AttributeValueMemberS).Value }
	tests := []struct{ field, got, want string }{
		{"shard", d.Shard, s(item, AttrShard)},
		{"observedDesireUpdateTime", d.Status.ObservedDesireUpdateTime, s(st, AttrObservedDesireUpdateTime)},
		{"observedDesireCreateTime", d.Status.ObservedDesireCreateTime, s(st, AttrObservedDesireCreateTime)},
		{"appliedUID", d.Status.AppliedUID, s(st, "appliedUID")},
		{"appliedResourceVersion", d.Status.AppliedResourceVersion, s(st, "appliedResourceVersion")},
		{"appliedFieldsDigest", d.Status.AppliedFieldsDigest, s(st, "appliedFieldsDigest")},
		{"conditions[2].type", d.Status.Conditions[2].Type, ConditionReady},
	}
	for _, tt := range tests {
		if tt.got == "" || tt.got != tt.want {
			t.Errorf("%s = %q, want %q", tt.field, tt.got, tt.want)
		}
	}
	if d.ApplierTerm == 0 || d.Status.Condition(ConditionSuccessful) == nil || d.Status.ObservedSpecVersion() != 2 {
		t.Errorf("applierTerm %d, conditions %+v", d.ApplierTerm, d.Status.Conditions)
	}
}

func TestDecodeItemErrors(t *testing.T) {
	tests := []struct {
		name string
		item string
	}{
		{"no documentID", `{"version": {"N": "1"}}`},
		{"documentID a number", `{"documentID": {"N": "1"}}`},
		{"version a string", `{"documentID": {"S": "a"}, "version": {"S": "one"}}`},
		{"kubeContent not JSON", `{"documentID": {"S": "a"}, "spec_kubeContent": {"S": "{"}}`},
		{"kubeContent not a string", `{"documentID": {"S": "a"}, "spec_kubeContent": {"N": "1"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			item, err := ItemFromJSON([]byte(tt.item))
			if err != nil {
				t.Fatal(err)
			}
			if err := DecodeItem(item, &ApplyDesire{}); !errors.Is(err, ErrInvalidItem) {
				t.Fatalf("DecodeItem = %v, want ErrInvalidItem", err)
			}
		})
	}
}

// EncodeItem leaves kubeContent out when empty or null and compacts it otherwise.
func TestEncodeKubeContent(t *testing.T) {
	tests := []struct {
		name, content, want string
	}{
		{"absent", "", ""},
		{"null", "null", ""},
		{"compacted", "{ \"a\" : 1 }", `{"a":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			item, err := EncodeItem(&ApplyDesire{DynamoDBMetadata: DynamoDBMetadata{DocumentID: "x"},
				Spec: ApplyDesireSpec{KubeContent: json.RawMessage(tt.content)}})
			if err != nil {
				t.Fatal(err)
			}
			got, _ := sval(item[AttrSpecKubeContent])
			if got != tt.want {
				t.Fatalf("spec_kubeContent = %q, want %q", got, tt.want)
			}
		})
	}
	if _, err := EncodeItem(&ApplyDesire{Spec: ApplyDesireSpec{KubeContent: json.RawMessage("{")}}); err == nil {
		t.Fatal("invalid kubeContent encoded")
	}
}

func TestItemJSONRoundTrip(t *testing.T) {
	in := `{"b":{"B":"AAE="},"bs":{"BS":["AA=="]},"l":{"L":[{"BOOL":true},{"NULL":true}]},"m":{"M":{"n":{"N":"1.5"}}},"ns":{"NS":["1","2"]},"s":{"S":"x"},"ss":{"SS":["a"]}}`
	item, err := ItemFromJSON([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	out, err := ItemToJSON(item)
	if err != nil || string(out) != in {
		t.Fatalf("ItemToJSON = %s, %v; want %s", out, err, in)
	}
	for _, bad := range []string{`[]`, `{"a":{"X":"1"}}`, `{"a":{"S":"1","N":"1"}}`, `{"a":{"L":[{"Q":1}]}}`} {
		if _, err := ItemFromJSON([]byte(bad)); !errors.Is(err, ErrInvalidItem) {
			t.Errorf("ItemFromJSON(%s) = %v, want ErrInvalidItem", bad, err)
		}
	}
}

func TestCodecRoundTrip(t *testing.T) {
	ltt := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	observed := layoutTime
	cases := []struct {
		name string
		in   Desire
	}{
		{"apply with content and conditions", func() Desire {
			d := layoutApply("a1")
			d.Version, d.CreateTime, d.UpdateTime = 7, layoutTime, layoutTime.Add(time.Millisecond)
			d.Status.AppliedResourceGeneration = 3
			d.Status.ObservedDesireUpdateTime = observed.Format(time.RFC3339Nano)
			d.Status.Conditions = []Condition{{Type: ConditionSuccessful, Status: ConditionTrue, Reason: ReasonNoErrors,
				Message: "ok", ObservedGeneration: 7, LastTransitionTime: ltt}}
			return d
		}()},
		{"apply without content", func() Desire { d := layoutApply("a2"); d.Spec.KubeContent = nil; return d }()},
		{"delete cluster-scoped target", &DeleteDesire{DynamoDBMetadata: DynamoDBMetadata{DocumentID: "d1", Version: 1},
			Spec: DeleteDesireSpec{CommonSpec: CommonSpec{ManagementCluster: "mc01"},
				TargetItem: TargetItem{Version: "v1", Resource: "namespaces", Name: "ns1"}}}},
		{"read with status content", &ReadDesire{DynamoDBMetadata: DynamoDBMetadata{DocumentID: "r1"},
			Spec:   ReadDesireSpec{TargetItem: TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "x"}},
			Status: ReadDesireStatus{KubeContent: json.RawMessage([]byte(layoutConfigMap("x")))}}},
		{"read without status content", &ReadDesire{DynamoDBMetadata: DynamoDBMetadata{DocumentID: "r2"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			item, err := EncodeItem(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			for _, attr := range []string{AttrSpecKubeContent, AttrStatusKubeContent} {
				if s, ok := item[attr].(*types.AttributeValueMemberS); ok && (s.Value == "null" || s.Value == "") {
					t.Fatalf("%s stored as %q, want absent", attr, s.Value)
				}
			}
			out := tc.in.DeepCopyDesire().(Desire)
			out = newLikeDesire(out)
			if err := DecodeItem(item, out); err != nil {
				t.Fatal(err)
			}
			a, _ := json.Marshal(tc.in)
			b, _ := json.Marshal(out)
			if string(a) != string(b) {
				t.Fatalf("round trip differs:\n in=%s\nout=%s", a, b)
			}
			if !out.Meta().UpdateTime.Equal(tc.in.Meta().UpdateTime) || out.Meta().UpdateTime.Nanosecond() != tc.in.Meta().UpdateTime.Nanosecond() {
				t.Fatalf("updateTime %v != %v", out.Meta().UpdateTime, tc.in.Meta().UpdateTime)
			}
		})
	}
}

func newLikeDesire(d Desire) Desire {
	switch d.(type) {
	case *ApplyDesire:
		return &ApplyDesire{}
	case *DeleteDesire:
		return &DeleteDesire{}
	}
	return &ReadDesire{}
}

// The layout backends rely on (../shared README "Item layout").
func TestItemLayout(t *testing.T) {
	d := layoutApply("a1")
	d.Status.Conditions = []Condition{{Type: ConditionSuccessful, Status: ConditionTrue, Reason: ReasonNoErrors, ObservedGeneration: 2}}
	item, err := EncodeItem(d)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := item["documentID"].(*types.AttributeValueMemberS); !ok {
		t.Fatal("documentID is not S")
	}
	if _, ok := item["version"].(*types.AttributeValueMemberN); !ok {
		t.Fatal("version is not N")
	}
	spec := item["spec"].(*types.AttributeValueMemberM).Value
	if spec["managementCluster"].(*types.AttributeValueMemberS).Value != "mc01" || spec["clusterID"].(*types.AttributeValueMemberS).Value != "hc-1" {
		t.Fatalf("spec = %#v", spec)
	}
	if _, ok := spec["kubeContent"]; ok {
		t.Fatal("kubeContent stored inside spec")
	}
	cond := item["status"].(*types.AttributeValueMemberM).Value["conditions"].(*types.AttributeValueMemberL).Value[0].(*types.AttributeValueMemberM).Value
	for _, k := range []string{"type", "status", "reason", "message", "lastTransitionTime", "observedGeneration"} {
		if _, ok := cond[k]; !ok {
			t.Errorf("condition lacks %q: %#v", k, cond)
		}
	}
	if got := item["spec_kubeContent"].(*types.AttributeValueMemberS).Value; got != layoutConfigMap("c1") {
		t.Fatalf("spec_kubeContent = %s", got)
	}
}

func TestDecodeInvalidItems(t *testing.T) {
	good, _ := EncodeItem(layoutApply("a1"))
	cases := []struct {
		name   string
		mutate func(map[string]types.AttributeValue)
		want   string
	}{
		{"no documentID", func(i map[string]types.AttributeValue) { delete(i, "documentID") }, `"documentID" missing`},
		{"version of wrong type", func(i map[string]types.AttributeValue) { i["version"] = &types.AttributeValueMemberS{Value: "x"} }, "a1"},
		{"spec of wrong type", func(i map[string]types.AttributeValue) { i["spec"] = &types.AttributeValueMemberS{Value: "x"} }, "a1"},
		{"kubeContent not JSON", func(i map[string]types.AttributeValue) {
			i["spec_kubeContent"] = &types.AttributeValueMemberS{Value: "{nope"}
		}, "not valid JSON"},
		{"kubeContent of wrong type", func(i map[string]types.AttributeValue) {
			i["spec_kubeContent"] = &types.AttributeValueMemberN{Value: "1"}
		}, "not a string"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			item := map[string]types.AttributeValue{}
			for k, v := range good {
				item[k] = v
			}
			tc.mutate(item)
			err := DecodeItem(item, &ApplyDesire{})
			if !errors.Is(err, ErrInvalidItem) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalidItem containing %q", err, tc.want)
			}
		})
	}
}

// layoutTime, layoutConfigMap and layoutApply are the fixtures of the codec tests moved from
// the applier's package: a write time with nanoseconds, a ConfigMap and an ApplyDesire of it.
var layoutTime = time.Date(2026, 11, 29, 8, 30, 15, 123456789, time.UTC)

func layoutConfigMap(name string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"default"},"data":{"status":"s","name":"n","data":"d"}}`, name)
}

func layoutApply(id string) *ApplyDesire {
	d := &ApplyDesire{}
	d.DocumentID = id
	d.Spec.ManagementCluster, d.Spec.ClusterID = "mc01", "hc-1"
	d.Spec.KubeContent = json.RawMessage([]byte(layoutConfigMap("c1")))
	return d
}
