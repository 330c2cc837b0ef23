package api

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// SpecIndexName is the specs tables' GSI an index-poll applier (kubeapplier.IndexPollSource)
// queries instead of the tables' streams, as upstream's forks do: hash key AttrShard (S,
// StatusShard's rule: "0".."3", "0" for an ID that is no UUID), range key `updateTime` (S),
// keys only projected (documentID, shard, updateTime: the applier reads every item it reports
// with a consistent GetItem). Client writes AttrShard on every spec it puts, so its specs are
// in the index; a spec item without it is found by the applier's periodic Scan only.
const SpecIndexName = "updateTime-index"

// WithSpecIndex makes EnsureTables give every specs table the GSI SpecIndexName, adding it to
// a specs table that exists without it (the client needs UpdateTable then). The streams stay:
// an applier may use either change source.
func WithSpecIndex() TableOption { return func(o *tableOptions) { o.specIndex = true } }

// specIndex is SpecIndexName's definition. KEYS_ONLY follows upstream's poller, which reads
// only documentID and updateTime from the index: an index entry costs ~100 bytes whatever the
// size of the spec.
func specIndex() types.GlobalSecondaryIndex {
	return types.GlobalSecondaryIndex{
		IndexName: aws.String(SpecIndexName),
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(AttrShard), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(AttrUpdateTime), KeyType: types.KeyTypeRange},
		},
		Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
	}
}
