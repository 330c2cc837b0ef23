package kubeapplier

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// Attribute names of the item layout (docs/contract.md "Tables and item format"; api.Attr*).
const (
	attrDocumentID        = api.AttrDocumentID
	attrVersion           = api.AttrVersion
	attrSpec              = api.AttrSpec
	attrStatus            = api.AttrStatus
	attrConditions        = api.AttrConditions
	attrSpecKubeContent   = api.AttrSpecKubeContent
	attrStatusKubeContent = api.AttrStatusKubeContent
	// attrApplierTerm is the leadership term of the applier that wrote a status (fencing).
	attrApplierTerm = api.AttrApplierTerm
)

// MaxItemSize is DynamoDB's item size limit: 400 KB = 409,600 bytes, attribute names included
// (api.MaxItemSize).
const MaxItemSize = api.MaxItemSize

// EncodeItem returns the DynamoDB item for d (api.EncodeItem): the attributevalue codec for
// the typed fields, conditions as a list of maps inside `status`, and kubeContent as compact
// JSON in its own top-level attribute (absent when empty).
func EncodeItem(d Desire) (map[string]types.AttributeValue, error) { return api.EncodeItem(d) }

// DecodeItem fills d from a DynamoDB item written by EncodeItem or by a backend using the same
// layout (api.DecodeItem). Errors wrap ErrInvalidItem.
func DecodeItem(item map[string]types.AttributeValue, d Desire) error { return api.DecodeItem(item, d) }

// idOf returns the item's documentID, or "<no documentID>" (api.IDOf).
func idOf(item map[string]types.AttributeValue) string { return api.IDOf(item) }

// newDesire returns a new zero desire of the same kind as T (api.NewDesire).
func newDesire[T Desire]() T { return api.NewDesire[T]() }

// ItemSize (only the root's tests use it: drop for api.ItemSize, issue #39) returns the size DynamoDB bills and limits for item, in bytes: attribute names plus
// values, with the per-type overheads of the DynamoDB developer guide (api.ItemSize).
func ItemSize(item map[string]types.AttributeValue) int { return api.ItemSize(item) }
