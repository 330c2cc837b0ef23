package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Item is one DynamoDB item, as the SDK's GetItem, PutItem and Query carry it.
type Item = map[string]types.AttributeValue

// Attribute names of the item layout (docs/contract.md "Tables and item format"). Every name used in
// an expression must go through ExpressionAttributeNames: `status` and others are reserved.
const (
	AttrDocumentID               = "documentID"         // S, the partition key
	AttrVersion                  = "version"            // N, 1 on create, +1 on every replace
	AttrCreateTime               = "createTime"         // S, RFC 3339
	AttrUpdateTime               = "updateTime"         // S, RFC 3339; the status index's sort key
	AttrSpec                     = "spec"               // M
	AttrStatus                   = "status"             // M
	AttrConditions               = "conditions"         // L of M, inside `status`
	AttrSpecKubeContent          = "spec_kubeContent"   // S, compact JSON (ApplyDesire specs)
	AttrStatusKubeContent        = "status_kubeContent" // S, compact JSON (ReadDesire statuses)
	AttrApplierTerm              = "applierTerm"        // N, on status documents
	AttrObservedDesireUpdateTime = "observedDesireUpdateTime"
	AttrObservedDesireCreateTime = "observedDesireCreateTime"
)

// MaxItemSize is DynamoDB's item size limit: 400 KB = 409,600 bytes, attribute names included
// (DynamoDB developer guide, "Service, account, and table quotas").
const MaxItemSize = 400 * 1024

// EncodeItem returns the DynamoDB item for d: the attributevalue codec for the typed fields
// (times as RFC 3339 with nanoseconds, or the item's own spelling kept by DecodeItem), and
// kubeContent as compact JSON in its own top-level attribute (absent when empty or null).
// Errors: kubeContent that is not valid JSON, or the SDK codec's.
func EncodeItem(d Desire) (Item, error) {
	item, err := attributevalue.MarshalMap(d)
	if err != nil {
		return nil, fmt.Errorf("encode %s %s: %w", d.Kind(), d.Meta().DocumentID, err)
	}
	m := d.Meta()
	EchoSpelling(item, AttrCreateTime, m.CreateTime, m.createTimeText)
	EchoSpelling(item, AttrUpdateTime, m.UpdateTime, m.updateTimeText)
	if attr, raw := d.content(); raw != nil && len(*raw) > 0 {
		var buf bytes.Buffer
		if err := json.Compact(&buf, *raw); err != nil {
			return nil, fmt.Errorf("encode %s: kubeContent is not valid JSON: %w", attr, err)
		}
		if buf.String() != "null" {
			item[attr] = &types.AttributeValueMemberS{Value: buf.String()}
		}
	}
	return item, nil
}

// DecodeItem fills d from a DynamoDB item written by the applier, by EncodeItem or by a
// backend using the same layout (the AWS CLI's or boto3's items included). Top-level attributes
// it does not know are ignored; those of `spec` (and of its `targetItem`) are recorded for
// CommonSpec.UnknownAttributes, so that the applier refuses what a newer applier may mean by
// them (docs/contract.md "Forward safety"). Errors wrap ErrInvalidItem: no string `documentID`, a mistyped
// attribute, kubeContent that is not a string of valid JSON.
func DecodeItem(item Item, d Desire) error {
	if id, ok := item[AttrDocumentID].(*types.AttributeValueMemberS); !ok || id.Value == "" {
		return fmt.Errorf("%w: %s attribute %q missing or not a string", ErrInvalidItem, d.Kind(), AttrDocumentID)
	}
	if err := attributevalue.UnmarshalMap(item, d); err != nil {
		return fmt.Errorf("%w: %s %s: %w", ErrInvalidItem, d.Kind(), IDOf(item), err)
	}
	d.Meta().KeepTimeSpellings(item)
	d.Common().unknown = unknownSpecAttributes(item, d.Kind())
	if attr, raw := d.content(); raw != nil {
		valid := json.Valid
		ad, isApply := d.(*ApplyDesire)
		var key string
		if isApply {
			// One pass both checks the content and reads its ObjectKey.
			valid = func(b []byte) (ok bool) { key, ok = objectKeyOf(b); return ok }
		}
		content, err := contentOf(item, attr, valid)
		if err != nil {
			return fmt.Errorf("%w: %s %s: %w", ErrInvalidItem, d.Kind(), IDOf(item), err)
		}
		*raw = content
		if isApply {
			ad.object = keyOf(content, key)
		}
	}
	return nil
}

// ContentOf returns the object an item holds as compact JSON in attr (AttrSpecKubeContent or
// AttrStatusKubeContent): nil when the attribute is absent, empty or "null"; an error naming
// attr when it is not a string (S) or not valid JSON. The one rule both codecs of the layout
// (this package's and the applier's) read kubeContent by.
func ContentOf(item Item, attr string) (json.RawMessage, error) {
	return contentOf(item, attr, json.Valid)
}

func contentOf(item Item, attr string, valid func([]byte) bool) (json.RawMessage, error) {
	switch v := item[attr].(type) {
	case nil:
		return nil, nil
	case *types.AttributeValueMemberS:
		if v.Value == "" || v.Value == "null" {
			return nil, nil
		}
		content := json.RawMessage(v.Value)
		if !valid(content) {
			return nil, fmt.Errorf("%s is not valid JSON", attr)
		}
		return content, nil
	default:
		return nil, fmt.Errorf("%s is not a string", attr)
	}
}

// IDOf returns the item's documentID, or "<no documentID>".
func IDOf(item Item) string {
	if id, ok := item[AttrDocumentID].(*types.AttributeValueMemberS); ok {
		return id.Value
	}
	return "<no documentID>"
}

// keptSpelling returns the string av holds when it spells t other than the codec would: the
// spelling to echo. "" when av is no string, does not parse to t, or is the codec's own
// spelling (nothing to keep: the common case costs no memory).
func keptSpelling(av types.AttributeValue, t time.Time) string {
	s, ok := av.(*types.AttributeValueMemberS)
	if !ok || s.Value == t.Format(time.RFC3339Nano) || !sameInstant(s.Value, t) {
		return ""
	}
	return s.Value
}

// KeptSpelling returns the string av holds when it spells t other than the codec would (e.g.
// "2026-01-01T00:00:00.100000Z" or "+00:00" for what the codec writes "…00.1Z"); "" when av is
// no string, does not parse to the instant t, or already is the codec's spelling.
func KeptSpelling(av types.AttributeValue, t time.Time) string { return keptSpelling(av, t) }

// EchoSpelling replaces m[attr] (when present) by spelling as long as spelling still names
// the instant t: a field set to another instant since it was decoded keeps the codec's
// spelling. An empty spelling changes nothing.
func EchoSpelling(m Item, attr string, t time.Time, spelling string) {
	if spelling == "" || m == nil || !sameInstant(spelling, t) {
		return
	}
	if _, ok := m[attr]; ok {
		m[attr] = &types.AttributeValueMemberS{Value: spelling}
	}
}

// sameInstant reports whether s parses (as the codec parses times) to the instant t.
func sameInstant(s string, t time.Time) bool {
	p, err := time.Parse(time.RFC3339, s)
	return err == nil && p.Equal(t)
}
