package tables

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/dynamofake"
)

func TestStatusWritesCarryShard(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		id    string
		write func(ResourceCRUD[*api.ApplyDesire], *api.ApplyDesire) error
		want  string // "" for no shard attribute
	}{
		{"create", "7b1fdb4e-decf-5d4c-a307-6718bada47d7", func(tb ResourceCRUD[*api.ApplyDesire], d *api.ApplyDesire) error {
			_, err := tb.Create(ctx, d)
			return err
		}, "2"},
		{"replace", "EF461CCD-F3C9-5C36-95FC-3187F1CC60BA", func(tb ResourceCRUD[*api.ApplyDesire], d *api.ApplyDesire) error {
			c, err := tb.Create(ctx, d)
			if err == nil {
				_, err = tb.Replace(ctx, c)
			}
			return err
		}, "1"},
		{"fenced replace", "00000003", func(tb ResourceCRUD[*api.ApplyDesire], d *api.ApplyDesire) error {
			c, err := tb.Create(ctx, d)
			if err == nil {
				_, err = tb.(*Table[*api.ApplyDesire]).FencedBy(3).Replace(ctx, c)
			}
			return err
		}, "3"},
		{"not a UUID: shard 0 (every status is in the status check's index)", "task-1", func(tb ResourceCRUD[*api.ApplyDesire], d *api.ApplyDesire) error {
			_, err := tb.Create(ctx, d)
			return err
		}, "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := dynamofake.New()
			client := NewClient(db, "", "mc01")
			if err := tt.write(client.ApplyDesireStatus(), sampleApply(tt.id)); err != nil {
				t.Fatal(err)
			}
			item := db.Item(api.TableName("", "mc01", api.StatusTable, api.KindApplyDesire), tt.id)
			got, has := item[api.AttrShard].(*types.AttributeValueMemberS)
			switch {
			case tt.want == "" && item[api.AttrShard] != nil:
				t.Fatalf("shard = %#v, want none", item[api.AttrShard])
			case tt.want != "" && (!has || got.Value != tt.want):
				t.Fatalf("shard = %#v, want S %s", item[api.AttrShard], tt.want)
			}
			if _, ok := item[api.AttrUpdateTime].(*types.AttributeValueMemberS); !ok {
				t.Fatalf("updateTime is %#v, want S (the index's sort key)", item[api.AttrUpdateTime])
			}
			// Specs are never written by the applier, but a specs table client adds no shard.
			spec := New[*api.ApplyDesire](db, "specs")
			if _, err := spec.Create(ctx, sampleApply(tt.id)); err != nil {
				t.Fatal(err)
			}
			if s := db.Item("specs", tt.id)[api.AttrShard]; s != nil {
				t.Fatalf("a specs item got shard %#v", s)
			}
		})
	}
}
