package api

import (
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Forward safety (docs/contract.md "Forward safety"): a spec attribute this module does not
// map may be an option a newer applier understands (e.g. `applyPolicy: ReadOnly`); acting on
// the desire with today's default would turn it into something else (a write). DecodeItem
// therefore records such attributes, and the applier refuses the desire instead of acting.
// Top-level item attributes are not checked: they stay free for backends' own use.

// targetItemAttributes are the attributes of a spec's `targetItem` map (TargetItem's fields).
var targetItemAttributes = []string{"group", "version", "resource", "namespace", "name"}

// unknownSep joins the names in CommonSpec.unknown: a string keeps CommonSpec comparable with
// ==, and NUL, unlike a comma, is not expected in an attribute name.
const unknownSep = "\x00"

// knownSpecAttributes are, per kind, the attributes of the `spec` map the decoder maps (the
// spec struct's dynamodbav names; kubeContent lives in the top-level `spec_kubeContent`).
var knownSpecAttributes = map[DesireKind][]string{
	KindApplyDesire:  {"clusterID", "managementCluster"},
	KindDeleteDesire: {"clusterID", "managementCluster", "targetItem"},
	KindReadDesire:   {"clusterID", "managementCluster", "targetItem"},
}

// KnownSpecAttributes returns the attributes of a kind's `spec` map this module understands,
// sorted; a nil slice for an unknown kind. targetItem's own attributes are group, version,
// resource, namespace and name.
func KnownSpecAttributes(kind DesireKind) []string {
	return slices.Clone(knownSpecAttributes[kind])
}

// UnknownAttributes returns the attributes of the spec item's `spec` map that DecodeItem did
// not map, sorted; those inside `targetItem` are spelled "targetItem.<name>". Empty for a desire
// not decoded by DecodeItem (nothing else records them; they are never encoded).
func (s CommonSpec) UnknownAttributes() []string {
	if s.unknown == "" {
		return nil
	}
	return strings.Split(s.unknown, unknownSep)
}

// unknownSpecAttributes lists the attributes of item's `spec` map (and of its `targetItem`
// map) that kind's spec does not map, sorted and joined by unknownSep ("" when none). A `spec` or
// `targetItem` that is not a map is the codec's error, not reported here.
func unknownSpecAttributes(item Item, kind DesireKind) string {
	spec, ok := item[AttrSpec].(*types.AttributeValueMemberM)
	if !ok {
		return ""
	}
	known := knownSpecAttributes[kind]
	var unknown []string
	for name, v := range spec.Value {
		if !slices.Contains(known, name) {
			unknown = append(unknown, name)
			continue
		}
		if ti, ok := v.(*types.AttributeValueMemberM); ok && name == "targetItem" {
			for sub := range ti.Value {
				if !slices.Contains(targetItemAttributes, sub) {
					unknown = append(unknown, "targetItem."+sub)
				}
			}
		}
	}
	slices.Sort(unknown)
	return strings.Join(unknown, unknownSep)
}
