package api

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestUnknownSpecAttributes(t *testing.T) {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	m := func(kv ...any) types.AttributeValue {
		out := map[string]types.AttributeValue{}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i].(string)] = kv[i+1].(types.AttributeValue)
		}
		return &types.AttributeValueMemberM{Value: out}
	}
	target := func(extra ...any) types.AttributeValue {
		return m(append([]any{"version", s("v1"), "resource", s("configmaps"), "namespace", s("ns"), "name", s("x"), "group", s("")}, extra...)...)
	}
	for _, tc := range []struct {
		name string
		d    Desire
		spec types.AttributeValue
		want []string
	}{
		{"apply, known only", &ApplyDesire{}, m("managementCluster", s("mc01"), "clusterID", s("hc")), nil},
		{"apply, no clusterID", &ApplyDesire{}, m("managementCluster", s("mc01")), nil},
		{"apply, every option known", &ApplyDesire{}, m("managementCluster", s("mc01"), "applyPolicy", s("ReadOnly"), "owner", s("a"),
			"forceConflicts", &types.AttributeValueMemberBOOL{}, "yieldToManagers", &types.AttributeValueMemberL{Value: []types.AttributeValue{s("hpa")}},
			"ignoreFields", &types.AttributeValueMemberL{Value: []types.AttributeValue{m("condition", s("OnTargetPresent"), "jsonPointers", &types.AttributeValueMemberL{Value: []types.AttributeValue{s("/spec/replicas")}})}},
			"statusFeedback", m("jsonPaths", &types.AttributeValueMemberL{Value: []types.AttributeValue{m("name", s("r"), "path", s(".status"))}}),
			"health", m("current", s("true"))), nil},
		{"apply, a newer option", &ApplyDesire{}, m("managementCluster", s("mc01"), "rolloutStrategy", s("Canary")), []string{"rolloutStrategy"}},
		{"apply, several, sorted", &ApplyDesire{}, m("managementCluster", s("mc01"), "zeta", s("a"), "alpha", &types.AttributeValueMemberBOOL{}), []string{"alpha", "zeta"}},
		{"apply, a newer key inside ignoreFields", &ApplyDesire{}, m("managementCluster", s("mc01"),
			"ignoreFields", &types.AttributeValueMemberL{Value: []types.AttributeValue{m("condition", s("OnTargetPresent"), "jsonPointers", &types.AttributeValueMemberL{}, "when", s("x"))}}),
			[]string{"ignoreFields[0].when"}},
		{"apply, a newer key inside statusFeedback and health", &ApplyDesire{}, m("managementCluster", s("mc01"),
			"statusFeedback", m("jsonPaths", &types.AttributeValueMemberL{Value: []types.AttributeValue{m("name", s("r"), "path", s(".a"), "kind", s("x"))}}, "wellKnown", s("y")),
			"health", m("current", s("true"), "degraded", s("false"))),
			[]string{"health.degraded", "statusFeedback.jsonPaths[0].kind", "statusFeedback.wellKnown"}},
		{"apply, kubeContent inside spec is not read there", &ApplyDesire{}, m("managementCluster", s("mc01"), "kubeContent", s("{}")), []string{"kubeContent"}},
		// Since the folded Delete (docs/contract.md), an ApplyDesire may name its object in
		// targetItem (upstream's backends write it on every ApplyDesire); a key inside it that
		// this module does not know is still refused.
		{"apply, targetItem is an apply's", &ApplyDesire{}, m("managementCluster", s("mc01"), "targetItem", target()), nil},
		{"apply, a newer key inside targetItem", &ApplyDesire{}, m("managementCluster", s("mc01"), "targetItem", target("uid", s("u"))), []string{"targetItem.uid"}},
		{"delete, known only", &DeleteDesire{}, m("managementCluster", s("mc01"), "clusterID", s("hc"), "targetItem", target()), nil},
		{"delete, options known", &DeleteDesire{}, m("managementCluster", s("mc01"), "targetItem", target(), "propagationPolicy", s("Orphan"), "owner", s("a")), nil},
		{"delete, a newer option", &DeleteDesire{}, m("managementCluster", s("mc01"), "targetItem", target(), "gracePeriodSeconds", s("0")), []string{"gracePeriodSeconds"}},
		{"delete, a newer targetItem field", &DeleteDesire{}, m("managementCluster", s("mc01"), "targetItem", target("uid", s("u-1"))), []string{"targetItem.uid"}},
		{"read, known only", &ReadDesire{}, m("managementCluster", s("mc01"), "targetItem", target()), nil},
		{"read, fields known", &ReadDesire{}, m("managementCluster", s("mc01"), "targetItem", target(), "fields", &types.AttributeValueMemberL{Value: []types.AttributeValue{s("/data")}}), nil},
		{"read, both levels", &ReadDesire{}, m("managementCluster", s("mc01"), "targetItem", target("uid", s("u")), "format", &types.AttributeValueMemberL{}), []string{"format", "targetItem.uid"}},
		{"no spec at all", &ReadDesire{}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			item := Item{AttrDocumentID: s("id-1"), AttrVersion: &types.AttributeValueMemberN{Value: "1"}}
			if tc.spec != nil {
				item[AttrSpec] = tc.spec
			}
			if tc.d.Kind() == KindApplyDesire {
				item[AttrSpecKubeContent] = s(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"ns"}}`)
			}
			if err := DecodeItem(item, tc.d); err != nil {
				t.Fatal(err)
			}
			if got := tc.d.Common().UnknownAttributes(); !slices.Equal(got, tc.want) {
				t.Errorf("UnknownAttributes() = %q, want %q", got, tc.want)
			}
			// Never encoded: a backend's unknown attribute is not written back by the applier.
			out, err := EncodeItem(tc.d)
			if err != nil {
				t.Fatal(err)
			}
			spec, _ := out[AttrSpec].(*types.AttributeValueMemberM)
			for _, name := range tc.want {
				if _, ok := spec.Value[name]; ok {
					t.Errorf("EncodeItem wrote the unknown attribute %q", name)
				}
			}
			// A copy keeps what was recorded (the controllers judge copies).
			if got := tc.d.DeepCopyDesire().Common().UnknownAttributes(); !slices.Equal(got, tc.want) {
				t.Errorf("DeepCopy: UnknownAttributes() = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestKnownSpecAttributesMatchTypes keeps the known lists equal to the spec structs' encoded
// names: a field added to a spec type is known to the decoder, and nothing else is.
func TestKnownSpecAttributesMatchTypes(t *testing.T) {
	names := func(typ reflect.Type) []string {
		var out []string
		var walk func(reflect.Type)
		walk = func(typ reflect.Type) {
			for f := range typ.Fields() {
				tag, _, _ := strings.Cut(f.Tag.Get("dynamodbav"), ",")
				switch {
				case f.Anonymous:
					walk(f.Type)
				case !f.IsExported() || tag == "-":
				case tag == "":
					out = append(out, f.Name)
				default:
					out = append(out, tag)
				}
			}
		}
		walk(typ)
		slices.Sort(out)
		return out
	}
	for kind, typ := range map[DesireKind]reflect.Type{
		KindApplyDesire:  reflect.TypeFor[ApplyDesireSpec](),
		KindDeleteDesire: reflect.TypeFor[DeleteDesireSpec](),
		KindReadDesire:   reflect.TypeFor[ReadDesireSpec](),
	} {
		if got, want := KnownSpecAttributes(kind), names(typ); !slices.Equal(got, want) {
			t.Errorf("KnownSpecAttributes(%s) = %q, the type encodes %q", kind, got, want)
		}
	}
	if got, want := slices.Sorted(slices.Values(targetItemAttributes)), names(reflect.TypeFor[TargetItem]()); !slices.Equal(got, want) {
		t.Errorf("targetItemAttributes = %q, TargetItem encodes %q", got, want)
	}
	if KnownSpecAttributes("Other") != nil {
		t.Error("KnownSpecAttributes of an unknown kind is not nil")
	}
}
