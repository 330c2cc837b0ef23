package tables

import (
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// withShard sets item's `shard` attribute (S, the decimal shard number, api.StatusShard) from
// its documentID, "0" when the ID is no UUID: every status is then in the indexes, the
// applier's status check included (a status missing from it would read as deleted). Reserved
// documents (the heartbeat) get none: they are no status, and in no index. It returns the
// shard set, "" for none.
func withShard(item map[string]types.AttributeValue) string {
	id, ok := item[api.AttrDocumentID].(*types.AttributeValueMemberS)
	if !ok || api.IsReservedID(id.Value) {
		return ""
	}
	s, _ := api.StatusShard(id.Value)
	v := strconv.Itoa(s)
	item[api.AttrShard] = &types.AttributeValueMemberS{Value: v}
	return v
}

// setShard sets d's Shard (the `shard` attribute its item was written with).
func setShard(d api.Desire, shard string) {
	switch x := any(d).(type) {
	case *api.ApplyDesire:
		x.Shard = shard
	case *api.DeleteDesire:
		x.Shard = shard
	case *api.ReadDesire:
		x.Shard = shard
	}
}
