package api

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestCheckOptions(t *testing.T) {
	no := false
	apply := func(spec ApplyDesireSpec) Desire { return &ApplyDesire{Spec: spec} }
	for _, tc := range []struct {
		name string
		d    Desire
		want string // "" for nil, else a part of the error's text
	}{
		{"apply without options", apply(ApplyDesireSpec{}), ""},
		{"every apply policy", apply(ApplyDesireSpec{ApplyPolicy: ApplyPolicyReadOnly, ForceConflicts: &no}), ""},
		{"an unknown apply policy", apply(ApplyDesireSpec{ApplyPolicy: "Replace"}), `spec.applyPolicy is "Replace", a value this applier does not know`},
		{"a policy spelled in lower case", apply(ApplyDesireSpec{ApplyPolicy: "readOnly"}), `spec.applyPolicy is "readOnly"`},
		{"ignoreFields, good", apply(ApplyDesireSpec{IgnoreFields: []IgnoreField{{Condition: IgnoreOnTargetChange, JSONPointers: []string{"/spec/replicas", "/metadata/labels/a~1b"}}}}), ""},
		{"ignoreFields, unknown condition", apply(ApplyDesireSpec{IgnoreFields: []IgnoreField{{Condition: "Always", JSONPointers: []string{"/a"}}}}), `spec.ignoreFields[0].condition is "Always"`},
		{"ignoreFields, no condition", apply(ApplyDesireSpec{IgnoreFields: []IgnoreField{{JSONPointers: []string{"/a"}}}}), "spec.ignoreFields[0].condition is missing"},
		{"ignoreFields, no pointers", apply(ApplyDesireSpec{IgnoreFields: []IgnoreField{{Condition: IgnoreOnTargetPresent}}}), "spec.ignoreFields[0].jsonPointers is empty"},
		{"ignoreFields, a bad pointer", apply(ApplyDesireSpec{IgnoreFields: []IgnoreField{{Condition: IgnoreOnTargetPresent, JSONPointers: []string{"/a", "spec.replicas"}}}}), `spec.ignoreFields[0].jsonPointers[1]: JSON Pointer "spec.replicas" does not start with "/"`},
		{"ignoreFields, a bad escape", apply(ApplyDesireSpec{IgnoreFields: []IgnoreField{{Condition: IgnoreOnTargetPresent, JSONPointers: []string{"/a~2"}}}}), `"/a~2" has a "~" not followed by 0 or 1`},
		{"yieldToManagers, empty name", apply(ApplyDesireSpec{YieldToManagers: []string{"hpa", ""}}), "spec.yieldToManagers[1] is empty"},
		{"statusFeedback, good", apply(ApplyDesireSpec{StatusFeedback: &StatusFeedback{JSONPaths: []FeedbackRule{{Name: "a", Path: ".status"}}}}), ""},
		{"statusFeedback, no name", apply(ApplyDesireSpec{StatusFeedback: &StatusFeedback{JSONPaths: []FeedbackRule{{Path: ".status"}}}}), "spec.statusFeedback.jsonPaths[0].name is empty"},
		{"statusFeedback, a name twice", apply(ApplyDesireSpec{StatusFeedback: &StatusFeedback{JSONPaths: []FeedbackRule{{Name: "a", Path: ".x"}, {Name: "a", Path: ".y"}}}}), `jsonPaths[1].name "a" is used twice`},
		{"statusFeedback, no path", apply(ApplyDesireSpec{StatusFeedback: &StatusFeedback{JSONPaths: []FeedbackRule{{Name: "a", Path: " "}}}}), "spec.statusFeedback.jsonPaths[0].path is empty"},
		{"delete, every policy", &DeleteDesire{Spec: DeleteDesireSpec{PropagationPolicy: PropagationOrphan}}, ""},
		{"delete, unknown policy", &DeleteDesire{Spec: DeleteDesireSpec{PropagationPolicy: "Cascade"}}, `spec.propagationPolicy is "Cascade"`},
		{"read, fields good", &ReadDesire{Spec: ReadDesireSpec{Fields: []string{"/data", "/status/phase"}}}, ""},
		{"read, the whole document", &ReadDesire{Spec: ReadDesireSpec{Fields: []string{""}}}, `spec.fields[0]: JSON Pointer "" does not start with "/"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckOptions(tc.d)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("CheckOptions = %v, want nil", err)
			case tc.want == "":
			case !errors.Is(err, ErrInvalidOption):
				t.Fatalf("CheckOptions = %v, want ErrInvalidOption", err)
			case !strings.Contains(err.Error(), tc.want):
				t.Fatalf("CheckOptions = %q, want it to say %q", err, tc.want)
			}
		})
	}
}

func TestOptionDefaults(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		spec         ApplyDesireSpec
		policy       string
		forcesConfls bool
	}{
		{ApplyDesireSpec{}, ApplyPolicyServerSideApply, true},
		{ApplyDesireSpec{ApplyPolicy: ApplyPolicyCreateOnly, ForceConflicts: &yes}, ApplyPolicyCreateOnly, true},
		{ApplyDesireSpec{ApplyPolicy: ApplyPolicyReadOnly, ForceConflicts: &no}, ApplyPolicyReadOnly, false},
	} {
		if got := tc.spec.Policy(); got != tc.policy {
			t.Errorf("Policy() = %q, want %q", got, tc.policy)
		}
		if got := tc.spec.ForcesConflicts(); got != tc.forcesConfls {
			t.Errorf("ForcesConflicts() = %v, want %v", got, tc.forcesConfls)
		}
	}
	if got := (&DeleteDesireSpec{}).Propagation(); got != PropagationBackground {
		t.Errorf("Propagation() = %q, want Background", got)
	}
}

func TestSplitJSONPointer(t *testing.T) {
	for p, want := range map[string][]string{
		"/spec/replicas":          {"spec", "replicas"},
		"/metadata/labels/a~1b":   {"metadata", "labels", "a/b"},
		"/x/~01":                  {"x", "~1"},
		"/spec/containers/0/name": {"spec", "containers", "0", "name"},
	} {
		if got := SplitJSONPointer(p); !slices.Equal(got, want) {
			t.Errorf("SplitJSONPointer(%q) = %q, want %q", p, got, want)
		}
	}
}

// TestOptionsRoundTrip: every option survives EncodeItem/DecodeItem and DeepCopy shares none
// of its memory.
func TestOptionsRoundTrip(t *testing.T) {
	no := false
	d := &ApplyDesire{DynamoDBMetadata: DynamoDBMetadata{DocumentID: "id-1", Version: 1},
		Spec: ApplyDesireSpec{CommonSpec: CommonSpec{ManagementCluster: "mc01", Owner: "team-a"},
			KubeContent: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"ns"}}`),
			ApplyPolicy: ApplyPolicyCreateOnly, ForceConflicts: &no,
			IgnoreFields:    []IgnoreField{{Condition: IgnoreOnTargetPresent, JSONPointers: []string{"/data/a"}}},
			YieldToManagers: []string{"hpa"},
			StatusFeedback:  &StatusFeedback{JSONPaths: []FeedbackRule{{Name: "a", Path: ".data.a"}}},
			Health:          &HealthRules{Current: "true"}},
		Status: ApplyDesireStatus{Feedback: []FeedbackValue{{Name: "a", Type: FeedbackString, Value: "x"}}}}
	item, err := EncodeItem(d)
	if err != nil {
		t.Fatal(err)
	}
	var back ApplyDesire
	if err := DecodeItem(item, &back); err != nil {
		t.Fatal(err)
	}
	if u := back.Spec.UnknownAttributes(); u != nil {
		t.Fatalf("UnknownAttributes() = %q after a round trip", u)
	}
	if back.Spec.Policy() != ApplyPolicyCreateOnly || back.Spec.ForcesConflicts() || back.Spec.Owner != "team-a" ||
		back.Spec.IgnoreFields[0].JSONPointers[0] != "/data/a" || back.Spec.YieldToManagers[0] != "hpa" ||
		back.Spec.StatusFeedback.JSONPaths[0].Path != ".data.a" || back.Spec.Health.Current != "true" ||
		back.Status.Feedback[0].Value != "x" {
		t.Fatalf("round trip lost an option: %+v", back)
	}
	c := back.DeepCopy()
	*c.Spec.ForceConflicts = true
	c.Spec.IgnoreFields[0].JSONPointers[0] = "/changed"
	c.Spec.YieldToManagers[0] = "changed"
	c.Spec.StatusFeedback.JSONPaths[0].Name = "changed"
	c.Spec.Health.Current = "false"
	c.Status.Feedback[0].Value = "changed"
	if back.Spec.ForcesConflicts() || back.Spec.IgnoreFields[0].JSONPointers[0] != "/data/a" || back.Spec.YieldToManagers[0] != "hpa" ||
		back.Spec.StatusFeedback.JSONPaths[0].Name != "a" || back.Spec.Health.Current != "true" || back.Status.Feedback[0].Value != "x" {
		t.Fatal("DeepCopy shares memory with the original")
	}
	r := &ReadDesire{Spec: ReadDesireSpec{Fields: []string{"/data"}}}
	rc := r.DeepCopy()
	rc.Spec.Fields[0] = "/changed"
	if r.Spec.Fields[0] != "/data" {
		t.Fatal("ReadDesire DeepCopy shares Fields")
	}
}
