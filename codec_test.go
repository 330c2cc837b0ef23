package kubeapplier

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
)

func TestCodecRoundTrip(t *testing.T) {
	ltt := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	observed := testTime
	cases := []struct {
		name string
		in   Desire
	}{
		{"apply with content and conditions", func() Desire {
			d := sampleApply("a1")
			d.Version, d.CreateTime, d.UpdateTime = 7, testTime, testTime.Add(time.Millisecond)
			d.Status.AppliedResourceGeneration = 3
			d.Status.ObservedDesireUpdateTime = observed.Format(time.RFC3339Nano)
			d.Status.Conditions = []api.Condition{{Type: ConditionSuccessful, Status: ConditionTrue, Reason: ReasonNoErrors,
				Message: "ok", ObservedGeneration: 7, LastTransitionTime: ltt}}
			return d
		}()},
		{"apply without content", func() Desire { d := sampleApply("a2"); d.Spec.KubeContent = nil; return d }()},
		{"delete cluster-scoped target", &DeleteDesire{DynamoDBMetadata: DynamoDBMetadata{DocumentID: "d1", Version: 1},
			Spec: DeleteDesireSpec{CommonSpec: CommonSpec{ManagementCluster: "mc01"},
				TargetItem: TargetItem{Version: "v1", Resource: "namespaces", Name: "ns1"}}}},
		{"read with status content", &ReadDesire{DynamoDBMetadata: DynamoDBMetadata{DocumentID: "r1"},
			Spec:   ReadDesireSpec{TargetItem: TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "x"}},
			Status: ReadDesireStatus{KubeContent: json.RawMessage([]byte(cmJSON("x")))}}},
		{"read without status content", &ReadDesire{DynamoDBMetadata: DynamoDBMetadata{DocumentID: "r2"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			item, err := EncodeItem(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			for _, attr := range []string{attrSpecKubeContent, attrStatusKubeContent} {
				if s, ok := item[attr].(*types.AttributeValueMemberS); ok && (s.Value == "null" || s.Value == "") {
					t.Fatalf("%s stored as %q, want absent", attr, s.Value)
				}
			}
			out := tc.in.DeepCopyDesire().(Desire)
			out = newLike(out)
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

func newLike(d Desire) Desire {
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
	d := sampleApply("a1")
	d.Status.Conditions = []api.Condition{{Type: ConditionSuccessful, Status: ConditionTrue, Reason: ReasonNoErrors, ObservedGeneration: 2}}
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
	if got := item["spec_kubeContent"].(*types.AttributeValueMemberS).Value; got != cmJSON("c1") {
		t.Fatalf("spec_kubeContent = %s", got)
	}
}

func TestDecodeInvalidItems(t *testing.T) {
	good, _ := EncodeItem(sampleApply("a1"))
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

// TestTimeSpellingsEchoed: a spec's createTime and updateTime are written back, and echoed into
// a status's observedDesireCreateTime and observedDesireUpdateTime, byte for byte as the spec
// item spells them (a backend compares the strings), also through a status decoded and written
// again; a time set to another instant is written in the codec's spelling.
func TestTimeSpellingsEchoed(t *testing.T) {
	cases := []struct{ name, created, updated string }{
		{"fractional zeros", "2026-01-01T00:00:00.100000Z", "2026-01-01T00:00:01.500000000Z"},
		{"+00:00 offset", "2026-01-01T00:00:00+00:00", "2026-01-01T00:00:01.25+00:00"},
		{"no fraction", "2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z"},
		{"all-zero fraction", "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:01.000000Z"},
		{"another offset", "2026-01-01T02:00:00.10+02:00", "2026-01-01T00:00:01.1-00:00"},
		{"nanoseconds", "2026-01-01T00:00:00.123456789Z", "2026-01-01T00:00:01.987654321Z"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			item, err := EncodeItem(sampleApply("a1"))
			if err != nil {
				t.Fatal(err)
			}
			item["createTime"] = &types.AttributeValueMemberS{Value: tc.created}
			item["updateTime"] = &types.AttributeValueMemberS{Value: tc.updated}
			spec := &ApplyDesire{}
			if err := DecodeItem(item, spec); err != nil {
				t.Fatal(err)
			}
			again, err := EncodeItem(spec.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			for attr, want := range map[string]string{"createTime": tc.created, "updateTime": tc.updated} {
				if got := again[attr].(*types.AttributeValueMemberS).Value; got != want {
					t.Errorf("spec %s re-encoded as %q, want %q", attr, got, want)
				}
			}

			status := controller.StatusDocument(spec.DeepCopy(), Applied(1, "ok"), false, (*ApplyDesire)(nil), false, testTime)
			checkObserved := func(what string, d *ApplyDesire) {
				t.Helper()
				item, err := EncodeItem(d)
				if err != nil {
					t.Fatal(err)
				}
				st := item["status"].(*types.AttributeValueMemberM).Value
				for attr, want := range map[string]string{"observedDesireCreateTime": tc.created, "observedDesireUpdateTime": tc.updated} {
					if got := st[attr].(*types.AttributeValueMemberS).Value; got != want {
						t.Errorf("%s: status.%s = %q, want the spec's %q", what, attr, got, want)
					}
				}
			}
			checkObserved("status written", status)
			// As a status cache or a later re-write holds it: decoded from the table, copied.
			stored, err := EncodeItem(status)
			if err != nil {
				t.Fatal(err)
			}
			read := &ApplyDesire{}
			if err := DecodeItem(stored, read); err != nil {
				t.Fatal(err)
			}
			checkObserved("status read back", read.DeepCopy())
			checkObserved("status written again", controller.StatusDocument(spec, Applied(1, "ok"), false, read, true, testTime))

			// A time set to another instant is not written with the old string.
			moved := spec.DeepCopy()
			moved.UpdateTime = moved.UpdateTime.Add(time.Second)
			out, err := EncodeItem(moved)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := out["updateTime"].(*types.AttributeValueMemberS).Value, moved.UpdateTime.Format(time.RFC3339Nano); got != want {
				t.Errorf("moved updateTime = %q, want %q", got, want)
			}
		})
	}
}
