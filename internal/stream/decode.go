package stream

import (
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/go-logr/logr"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// Decode decodes item as a watch delivers it; a bad item becomes a desire holding only its metadata and the
// reason in Invalid, so the controllers report it instead of dropping it. Only an item
// without a documentID is dropped (it has no key to report on).
func Decode[T api.Desire](item map[string]types.AttributeValue, log logr.Logger) (T, bool) {
	d := api.NewDesire[T]()
	err := api.DecodeItem(item, d)
	if err == nil {
		return d, true
	}
	if _, ok := item[api.AttrDocumentID].(*types.AttributeValueMemberS); !ok {
		log.Error(err, "dropping item without documentID")
		return d, false
	}
	d = api.NewDesire[T]()
	m := d.Meta()
	m.DocumentID, m.Invalid = api.IDOf(item), err.Error()
	if n, ok := item[api.AttrVersion].(*types.AttributeValueMemberN); ok {
		m.Version, _ = strconv.ParseInt(n.Value, 10, 64)
	}
	if s, ok := item[api.AttrUpdateTime].(*types.AttributeValueMemberS); ok {
		m.UpdateTime, _ = time.Parse(time.RFC3339Nano, s.Value)
	}
	if s, ok := item[api.AttrCreateTime].(*types.AttributeValueMemberS); ok {
		m.CreateTime, _ = time.Parse(time.RFC3339Nano, s.Value)
	}
	m.KeepTimeSpellings(item)
	return d, true
}
