package kubeapplier

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Attribute names of the time attributes whose spelling is kept.
const (
	attrCreateTime               = "createTime"
	attrObservedDesireUpdateTime = "observedDesireUpdateTime"
	attrObservedDesireCreateTime = "observedDesireCreateTime"
)

// A backend may compare a status's observedDesireUpdateTime and observedDesireCreateTime with
// its spec's updateTime and createTime as strings. The SDK's codec decodes a time and writes it
// back in its own spelling (RFC 3339 with nanoseconds, trailing zeros dropped, "Z" for UTC):
// "2026-01-01T00:00:00.100000Z" came back as "2026-01-01T00:00:00.1Z" and "+00:00" as "Z", so
// such a backend waited for ever. DecodeItem therefore keeps the string a time was stored as
// (in unexported fields of DynamoDBMetadata and CommonStatus, carried by DeepCopy) and
// EncodeItem writes that string again, byte for byte, as long as the field still holds the
// same instant.

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

// echoSpelling replaces item[attr] by the kept spelling when it still names t; a field set to
// another instant since it was decoded is written in the codec's spelling.
func echoSpelling(item map[string]types.AttributeValue, attr string, t time.Time, spelling string) {
	if spelling == "" || item == nil || !sameInstant(spelling, t) {
		return
	}
	if _, ok := item[attr]; ok {
		item[attr] = &types.AttributeValueMemberS{Value: spelling}
	}
}

// sameInstant reports whether s parses (as the codec parses times) to the instant t.
func sameInstant(s string, t time.Time) bool {
	p, err := time.Parse(time.RFC3339, s)
	return err == nil && p.Equal(t)
}

// keepSpellings records the spelling of d's times as item stores them (see keptSpelling).
func keepSpellings(item map[string]types.AttributeValue, d Desire) {
	m := d.Meta()
	m.createTimeText = keptSpelling(item[attrCreateTime], m.CreateTime)
	m.updateTimeText = keptSpelling(item[attrUpdateTime], m.UpdateTime)
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
	echoSpelling(item, attrCreateTime, m.CreateTime, m.createTimeText)
	echoSpelling(item, attrUpdateTime, m.UpdateTime, m.updateTimeText)
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
	s.observedUpdateTimeText, s.observedCreateTimeText = m.updateTimeText, m.createTimeText
}
