package api

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

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
	KindApplyDesire: {"applyPolicy", "clusterID", "forceConflicts", "health", "ignoreFields", "managementCluster", "nodePoolName",
		"owner", "propagationPolicy", "serverSideApply", "statusFeedback", "targetItem", "type", "yieldToManagers"},
	KindDeleteDesire: {"clusterID", "managementCluster", "nodePoolName", "owner", "propagationPolicy", "targetItem"},
	KindReadDesire:   {"clusterID", "fields", "managementCluster", "nodePoolName", "owner", "targetItem"},
}

// specTypes are the Go types whose dynamodbav names are the known attributes of the maps
// nested in a kind's `spec` (targetItem, ignoreFields[], statusFeedback, health, ...).
var specTypes = map[DesireKind]reflect.Type{
	KindApplyDesire:  reflect.TypeFor[ApplyDesireSpec](),
	KindDeleteDesire: reflect.TypeFor[DeleteDesireSpec](),
	KindReadDesire:   reflect.TypeFor[ReadDesireSpec](),
}

// KnownSpecAttributes returns the attributes of a kind's `spec` map this module understands,
// sorted; a nil slice for an unknown kind. targetItem's own attributes are group, version,
// resource, namespace and name.
func KnownSpecAttributes(kind DesireKind) []string {
	return slices.Clone(knownSpecAttributes[kind])
}

// UnknownAttributes returns the attributes of the spec item's `spec` map that DecodeItem did
// not map, sorted; those inside a nested map are spelled by their path: "targetItem.uid",
// "ignoreFields[0].when", "statusFeedback.jsonPaths[1].kind". Empty for a desire not decoded by
// DecodeItem (nothing else records them; they are never encoded).
func (s CommonSpec) UnknownAttributes() []string {
	if s.unknown == "" {
		return nil
	}
	return strings.Split(s.unknown, unknownSep)
}

// unknownSpecAttributes lists the attributes of item's `spec` map, and of the maps nested in
// it, that kind's spec type does not map, sorted and joined by unknownSep ("" when none). A
// value of the wrong DynamoDB type is the codec's error, not reported here.
func unknownSpecAttributes(item Item, kind DesireKind) string {
	spec, ok := item[AttrSpec].(*types.AttributeValueMemberM)
	if !ok {
		return ""
	}
	var unknown []string
	if known := knownSpecAttributes[kind]; known != nil {
		for name := range spec.Value {
			if !slices.Contains(known, name) {
				unknown = append(unknown, name)
			}
		}
	}
	if typ := specTypes[kind]; typ != nil {
		unknownIn(spec.Value, typ, "", &unknown)
	}
	slices.Sort(unknown)
	unknown = slices.Compact(unknown)
	return strings.Join(unknown, unknownSep)
}

// unknownIn appends to out the paths (under prefix) of attributes of m that typ (a struct)
// does not encode, descending into the maps and lists of maps its fields encode. The top level
// (prefix "") reports only nested attributes: its own names are checked against
// knownSpecAttributes.
func unknownIn(m map[string]types.AttributeValue, typ reflect.Type, prefix string, out *[]string) {
	fields := encodedFields(typ)
	for name, v := range m {
		ft, ok := fields[name]
		if !ok {
			if prefix != "" {
				*out = append(*out, prefix+name)
			}
			continue
		}
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch v := v.(type) {
		case *types.AttributeValueMemberM:
			if ft.Kind() == reflect.Struct {
				unknownIn(v.Value, ft, prefix+name+".", out)
			}
		case *types.AttributeValueMemberL:
			if ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct {
				for i, e := range v.Value {
					if em, ok := e.(*types.AttributeValueMemberM); ok {
						unknownIn(em.Value, ft.Elem(), fmt.Sprintf("%s%s[%d].", prefix, name, i), out)
					}
				}
			}
		}
	}
}

// encodedFieldsOf caches encodedFields by type: DecodeItem runs it for every item it decodes
// (every stream record), and the answer never changes.
var encodedFieldsOf sync.Map // reflect.Type -> map[string]reflect.Type

// encodedFields returns the dynamodbav names typ (a struct) encodes, embedded structs
// included, with their field types. The map is shared: callers only read it.
func encodedFields(typ reflect.Type) map[string]reflect.Type {
	if m, ok := encodedFieldsOf.Load(typ); ok {
		return m.(map[string]reflect.Type)
	}
	m := walkEncodedFields(typ)
	encodedFieldsOf.Store(typ, m)
	return m
}

func walkEncodedFields(typ reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for f := range typ.Fields() {
		tag, _, _ := strings.Cut(f.Tag.Get("dynamodbav"), ",")
		switch {
		case f.Anonymous && f.Type.Kind() == reflect.Struct:
			maps.Copy(out, walkEncodedFields(f.Type))
		case !f.IsExported() || tag == "-":
		case tag == "":
			out[f.Name] = f.Type
		default:
			out[tag] = f.Type
		}
	}
	return out
}
