package kubeapplier

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

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

// conditionItem is metav1.Condition as stored in DynamoDB (api.Condition); metav1.Time has no
// codec of its own.
type conditionItem = api.Condition

// EncodeItem returns the DynamoDB item for d: the attributevalue codec for the typed fields,
// conditions as a list of maps inside `status`, and kubeContent as compact JSON in its own
// top-level attribute (absent when empty).
func EncodeItem(d Desire) (map[string]types.AttributeValue, error) {
	item, err := attributevalue.MarshalMap(d)
	if err != nil {
		return nil, fmt.Errorf("encode %s %s: %w", d.Kind(), d.Meta().DocumentID, err)
	}
	conds := d.StatusCommon().Conditions
	if len(conds) > 0 {
		list := make([]conditionItem, len(conds))
		for i, c := range conds {
			list[i] = conditionItem{Type: c.Type, Status: string(c.Status), ObservedGeneration: c.ObservedGeneration,
				LastTransitionTime: c.LastTransitionTime.UTC(), Reason: c.Reason, Message: c.Message}
		}
		av, err := attributevalue.Marshal(list)
		if err != nil {
			return nil, fmt.Errorf("encode conditions: %w", err)
		}
		status, ok := item[attrStatus].(*types.AttributeValueMemberM)
		if !ok {
			return nil, fmt.Errorf("encode %s: status is not a map", d.Kind())
		}
		status.Value[attrConditions] = av
	}
	echoSpellings(item, d)
	if attr, raw := d.content(); raw != nil && *raw != nil && len((*raw).Raw) > 0 {
		var buf bytes.Buffer
		if err := json.Compact(&buf, (*raw).Raw); err != nil {
			return nil, fmt.Errorf("encode %s: kubeContent is not valid JSON: %w", attr, err)
		}
		if buf.String() != "null" {
			item[attr] = &types.AttributeValueMemberS{Value: buf.String()}
		}
	}
	return item, nil
}

// DecodeItem fills d from a DynamoDB item written by EncodeItem or by a backend using the same
// layout. Errors wrap ErrInvalidItem.
func DecodeItem(item map[string]types.AttributeValue, d Desire) error {
	if id, ok := item[attrDocumentID].(*types.AttributeValueMemberS); !ok || id.Value == "" {
		return fmt.Errorf("%w: %s attribute %q missing or not a string", ErrInvalidItem, d.Kind(), attrDocumentID)
	}
	if err := attributevalue.UnmarshalMap(item, d); err != nil {
		return fmt.Errorf("%w: %s %s: %w", ErrInvalidItem, d.Kind(), idOf(item), err)
	}
	keepSpellings(item, d)
	status := d.StatusCommon()
	status.Conditions = nil
	if s, ok := item[attrStatus].(*types.AttributeValueMemberM); ok {
		if av, ok := s.Value[attrConditions]; ok {
			var list []conditionItem
			if err := attributevalue.Unmarshal(av, &list); err != nil {
				return fmt.Errorf("%w: %s %s: status.conditions: %w", ErrInvalidItem, d.Kind(), idOf(item), err)
			}
			for _, c := range list {
				status.Conditions = append(status.Conditions, metav1.Condition{Type: c.Type,
					Status: metav1.ConditionStatus(c.Status), ObservedGeneration: c.ObservedGeneration,
					LastTransitionTime: metav1.NewTime(c.LastTransitionTime), Reason: c.Reason, Message: c.Message})
			}
		}
	}
	if attr, raw := d.content(); raw != nil {
		*raw = nil
		content, err := api.ContentOf(item, attr)
		if err != nil {
			return fmt.Errorf("%w: %s %s: %w", ErrInvalidItem, d.Kind(), idOf(item), err)
		}
		if content != nil {
			*raw = &runtime.RawExtension{Raw: content}
		}
	}
	return nil
}

// idOf returns the item's documentID, or "<no documentID>" (api.IDOf).
func idOf(item map[string]types.AttributeValue) string { return api.IDOf(item) }

// newDesire returns a new zero desire of the same kind as T.
func newDesire[T Desire]() T {
	var zero T
	return reflect.New(reflect.TypeOf(zero).Elem()).Interface().(T)
}

// ItemSize returns the size DynamoDB bills and limits for item, in bytes: attribute names plus
// values, with the per-type overheads of the DynamoDB developer guide (api.ItemSize).
func ItemSize(item map[string]types.AttributeValue) int { return api.ItemSize(item) }

// valueSize is the size of one attribute value, its name not counted.
func valueSize(v types.AttributeValue) int { return api.ItemSize(api.Item{"": v}) }

// parseVersion reads the `version` attribute of an item; 0 when absent.
func parseVersion(item map[string]types.AttributeValue) int64 {
	if n, ok := item[attrVersion].(*types.AttributeValueMemberN); ok {
		v, _ := strconv.ParseInt(n.Value, 10, 64)
		return v
	}
	return 0
}

// decodeLenient decodes item; a bad item becomes a desire holding only its metadata and the
// reason in Invalid. Only an item without a documentID is dropped (it has no key to report on).
func decodeLenient[T Desire](item map[string]types.AttributeValue, log logr.Logger) (T, bool) {
	d := newDesire[T]()
	err := DecodeItem(item, d)
	if err == nil {
		return d, true
	}
	if _, ok := item[attrDocumentID].(*types.AttributeValueMemberS); !ok {
		log.Error(err, "dropping item without documentID")
		return d, false
	}
	d = newDesire[T]()
	m := d.Meta()
	m.DocumentID, m.Version, m.Invalid = idOf(item), parseVersion(item), err.Error()
	if s, ok := item["updateTime"].(*types.AttributeValueMemberS); ok {
		m.UpdateTime, _ = time.Parse(time.RFC3339Nano, s.Value)
	}
	if s, ok := item["createTime"].(*types.AttributeValueMemberS); ok {
		m.CreateTime, _ = time.Parse(time.RFC3339Nano, s.Value)
	}
	m.KeepTimeSpellings(item)
	return d, true
}
