package kubeapplier

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
)

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
			item, err := api.EncodeItem(sampleApply("a1"))
			if err != nil {
				t.Fatal(err)
			}
			item["createTime"] = &types.AttributeValueMemberS{Value: tc.created}
			item["updateTime"] = &types.AttributeValueMemberS{Value: tc.updated}
			spec := &ApplyDesire{}
			if err := api.DecodeItem(item, spec); err != nil {
				t.Fatal(err)
			}
			again, err := api.EncodeItem(spec.DeepCopy())
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
				item, err := api.EncodeItem(d)
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
			stored, err := api.EncodeItem(status)
			if err != nil {
				t.Fatal(err)
			}
			read := &ApplyDesire{}
			if err := api.DecodeItem(stored, read); err != nil {
				t.Fatal(err)
			}
			checkObserved("status read back", read.DeepCopy())
			checkObserved("status written again", controller.StatusDocument(spec, Applied(1, "ok"), false, read, true, testTime))

			// A time set to another instant is not written with the old string.
			moved := spec.DeepCopy()
			moved.UpdateTime = moved.UpdateTime.Add(time.Second)
			out, err := api.EncodeItem(moved)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := out["updateTime"].(*types.AttributeValueMemberS).Value, moved.UpdateTime.Format(time.RFC3339Nano); got != want {
				t.Errorf("moved updateTime = %q, want %q", got, want)
			}
		})
	}
}
