package kubeapplier

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// Attribute names of the time attributes whose spelling is kept.
const (
	attrCreateTime               = api.AttrCreateTime
	attrObservedDesireUpdateTime = api.AttrObservedDesireUpdateTime
	attrObservedDesireCreateTime = api.AttrObservedDesireCreateTime
)

// A backend may compare a status's observedDesireUpdateTime and observedDesireCreateTime with
// its spec's updateTime and createTime as strings. The SDK's codec decodes a time and writes it
// back in its own spelling (RFC 3339 with nanoseconds, trailing zeros dropped, "Z" for UTC):
// "2026-01-01T00:00:00.100000Z" came back as "2026-01-01T00:00:00.1Z" and "+00:00" as "Z", so
// such a backend waited for ever. DecodeItem therefore keeps the string a time was stored as
// (in unexported fields of DynamoDBMetadata and CommonStatus, carried by DeepCopy) and
// EncodeItem writes that string again, byte for byte, as long as the field still holds the
// same instant.

// keptSpelling and echoSpelling are the api module's (api.KeptSpelling, api.EchoSpelling).
var (
	keptSpelling = api.KeptSpelling
	echoSpelling = api.EchoSpelling
)

// keepSpellings records the spelling of d's times as item stores them (see keptSpelling).
func keepSpellings(item map[string]types.AttributeValue, d Desire) {
	d.Meta().KeepTimeSpellings(item)
	s := d.StatusCommon()
	s.observedUpdateTimeText, s.observedCreateTimeText = "", ""
	status, ok := item[attrStatus].(*types.AttributeValueMemberM)
	if !ok {
		return
	}
	if s.ObservedDesireUpdateTime != nil {
		s.observedUpdateTimeText = keptSpelling(status.Value[attrObservedDesireUpdateTime], *s.ObservedDesireUpdateTime)
	}
	if s.ObservedDesireCreateTime != nil {
		s.observedCreateTimeText = keptSpelling(status.Value[attrObservedDesireCreateTime], *s.ObservedDesireCreateTime)
	}
}

// echoSpellings writes the kept spellings of d's times into item, EncodeItem's output.
func echoSpellings(item map[string]types.AttributeValue, d Desire) {
	m := d.Meta()
	createText, updateText := m.KeptTimeSpellings()
	echoSpelling(item, attrCreateTime, m.CreateTime, createText)
	echoSpelling(item, attrUpdateTime, m.UpdateTime, updateText)
	s := d.StatusCommon()
	status, ok := item[attrStatus].(*types.AttributeValueMemberM)
	if !ok {
		return
	}
	if s.ObservedDesireUpdateTime != nil {
		echoSpelling(status.Value, attrObservedDesireUpdateTime, *s.ObservedDesireUpdateTime, s.observedUpdateTimeText)
	}
	if s.ObservedDesireCreateTime != nil {
		echoSpelling(status.Value, attrObservedDesireCreateTime, *s.ObservedDesireCreateTime, s.observedCreateTimeText)
	}
}

// observe makes s answer the spec whose metadata is m: its updateTime and createTime, in the
// spec item's own spelling.
func (s *CommonStatus) observe(m *DynamoDBMetadata) {
	updated, created := m.UpdateTime, m.CreateTime
	s.ObservedDesireUpdateTime, s.ObservedDesireCreateTime = &updated, &created
	s.observedCreateTimeText, s.observedUpdateTimeText = m.KeptTimeSpellings()
}
