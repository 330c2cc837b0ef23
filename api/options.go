package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Desire options (docs/contract.md "Desire options"): optional attributes of the spec item's
// `spec` map that change what a desire means. Each one absent is the behaviour of a desire
// without options (force server-side apply and repair all drift; delete in the background;
// mirror the whole object). CheckOptions refuses a value this module does not know, for the
// same reason DecodeItem records an attribute it does not know (forward safety).

// ErrInvalidOption: a desire option holds a value this module does not know or cannot use (an
// unknown applyPolicy, a JSON Pointer that is not RFC 6901, a feedback rule without a name).
// The applier refuses such a desire with PreCheckFailed and the error's text.
var ErrInvalidOption = errors.New("invalid desire option")

// ApplyPolicy values (`spec.applyPolicy`, S).
const (
	// ApplyPolicyServerSideApply (the default, also when absent): server-side apply of
	// kubeContent, and every drift repaired.
	ApplyPolicyServerSideApply = "ServerSideApply"
	// ApplyPolicyCreateOnly: create the object when it is absent; never update it, never repair
	// drift. An object that exists is Successful=True and left as found.
	ApplyPolicyCreateOnly = "CreateOnly"
	// ApplyPolicyReadOnly: never write; report the object's existence, readiness and feedback.
	// An absent object is Successful=False with ReasonTargetAbsent, looked at again when it
	// appears.
	ApplyPolicyReadOnly = "ReadOnly"
)

// IgnoreFields conditions (`spec.ignoreFields[].condition`, S).
const (
	// IgnoreOnTargetPresent: once the object exists, the pointed fields are left out of every
	// apply (the object keeps whatever value they have).
	IgnoreOnTargetPresent = "OnTargetPresent"
	// IgnoreOnTargetChange: the desire's own value of the pointed fields is applied when the
	// desire changes, but another writer's change to them is never repaired.
	IgnoreOnTargetChange = "OnTargetChange"
)

// PropagationPolicy values (`spec.propagationPolicy` of a DeleteDesire, S): Kubernetes'
// metav1.DeletionPropagation, which the delete call carries.
const (
	// PropagationBackground (the default, also when absent): the object is deleted at once and
	// the garbage collector deletes its dependents afterwards.
	PropagationBackground = "Background"
	// PropagationForeground: the object stays (with the foregroundDeletion finalizer) until the
	// garbage collector has deleted its blocking dependents.
	PropagationForeground = "Foreground"
	// PropagationOrphan: the object is deleted and its dependents are kept, their
	// ownerReferences to it removed by the garbage collector.
	PropagationOrphan = "Orphan"
)

// Feedback value types (`status.feedback[].type`, S).
const (
	FeedbackInteger = "Integer" // value: the decimal digits of a JSON integer
	FeedbackString  = "String"  // value: the string itself
	FeedbackBoolean = "Boolean" // value: "true" or "false"
	FeedbackJSON    = "Json"    // value: compact JSON (objects, lists, non-integer numbers, null)
)

// IgnoreField is one entry of `spec.ignoreFields` (M): the fields JSONPointers point to (RFC
// 6901 pointers into kubeContent, e.g. "/spec/replicas") are ignored under Condition.
type IgnoreField struct {
	// Condition is IgnoreOnTargetPresent or IgnoreOnTargetChange.
	Condition string `json:"condition" dynamodbav:"condition"`
	// JSONPointers are RFC 6901 pointers, each starting with "/", "~" escaped as "~0" and "/"
	// as "~1".
	JSONPointers []string `json:"jsonPointers" dynamodbav:"jsonPointers"`
}

// StatusFeedback is `spec.statusFeedback` (M): values of the target to report in the status's
// `feedback` list.
type StatusFeedback struct {
	// JSONPaths are the values to report, each by name and kubectl JSONPath.
	JSONPaths []FeedbackRule `json:"jsonPaths" dynamodbav:"jsonPaths"`
}

// FeedbackRule is one entry of `spec.statusFeedback.jsonPaths` (M).
type FeedbackRule struct {
	// Name names the value in `status.feedback` (unique within the desire).
	Name string `json:"name" dynamodbav:"name"`
	// Path is a kubectl JSONPath (k8s.io/client-go/util/jsonpath), e.g. ".status.readyReplicas"
	// or "{.status.conditions[?(@.type==\"Available\")].status}".
	Path string `json:"path" dynamodbav:"path"`
}

// HealthRules is `spec.health` (M): CEL expressions over the object (bound as `self`) that
// replace kstatus for the desire's Ready condition. They are evaluated Failed, then
// InProgress, then Current; the first true one decides (Flux's healthCheckExprs).
type HealthRules struct {
	Current    string `json:"current,omitempty" dynamodbav:"current,omitempty"`
	InProgress string `json:"inProgress,omitempty" dynamodbav:"inProgress,omitempty"`
	Failed     string `json:"failed,omitempty" dynamodbav:"failed,omitempty"`
}

// FeedbackValue is one entry of an ApplyDesire status's `feedback` list (M).
type FeedbackValue struct {
	// Name is the FeedbackRule's name.
	Name string `json:"name" dynamodbav:"name"`
	// Type is FeedbackInteger, FeedbackString, FeedbackBoolean or FeedbackJSON; "" when the
	// path matched nothing (Value then says so).
	Type string `json:"type,omitempty" dynamodbav:"type,omitempty"`
	// Value is the value, spelled as Type says.
	Value string `json:"value" dynamodbav:"value"`
}

// ApplyDesire types (`spec.type` of an ApplyDesire, S): what the desire asks for. Upstream's
// forks of openshift-online/rosa-hyperfleet-kube-applier fold DeleteDesires into the
// ApplyDesire table this way (docs/contract.md "The folded Delete").
const (
	// ApplyTypeServerSideApply (the default, also when absent or ""): the apply of
	// `spec_kubeContent`, with the apply options.
	ApplyTypeServerSideApply = "ServerSideApply"
	// ApplyTypeDelete: the deletion of `spec.targetItem`, with the truth of a DeleteDesire
	// (Successful=True only once the object is gone); no `spec_kubeContent`, no apply option.
	ApplyTypeDelete = "Delete"
)

// ApplyType returns `spec.type`, ApplyTypeServerSideApply when absent.
func (s *ApplyDesireSpec) ApplyType() string {
	if s.Type == "" {
		return ApplyTypeServerSideApply
	}
	return s.Type
}

// IsDelete reports whether the desire is a folded Delete (`spec.type` Delete).
func (s *ApplyDesireSpec) IsDelete() bool { return s.Type == ApplyTypeDelete }

// AsDeleteDesire returns the DeleteDesire a folded Delete means (the same metadata, common
// spec, targetItem and propagationPolicy; no status), and true; nil and false for any other
// ApplyDesire. The view shares no memory with d.
func (d *ApplyDesire) AsDeleteDesire() (*DeleteDesire, bool) {
	if d == nil || !d.Spec.IsDelete() {
		return nil, false
	}
	dd := &DeleteDesire{DynamoDBMetadata: d.DynamoDBMetadata,
		Spec: DeleteDesireSpec{CommonSpec: d.Spec.CommonSpec, PropagationPolicy: d.Spec.PropagationPolicy}}
	if d.Spec.TargetItem != nil {
		dd.Spec.TargetItem = *d.Spec.TargetItem
	}
	return dd, true
}

// ForcesConflicts reports whether an apply takes over fields other managers own
// (`spec.forceConflicts`, BOOL; absent is true).
func (s *ApplyDesireSpec) ForcesConflicts() bool {
	return s.ForceConflicts == nil || *s.ForceConflicts
}

// Policy returns `spec.applyPolicy`, ApplyPolicyServerSideApply when absent.
func (s *ApplyDesireSpec) Policy() string {
	if s.ApplyPolicy == "" {
		return ApplyPolicyServerSideApply
	}
	return s.ApplyPolicy
}

// Propagation returns `spec.propagationPolicy`, PropagationBackground when absent.
func (s *DeleteDesireSpec) Propagation() string {
	if s.PropagationPolicy == "" {
		return PropagationBackground
	}
	return s.PropagationPolicy
}

// CheckOptions returns nil when every option of d holds a value this module knows, else an
// error wrapping ErrInvalidOption that names the attribute (e.g. `spec.applyPolicy`) and the
// value. It checks what needs no cluster: enumerations, names, and the syntax of JSON Pointers
// (RFC 6901). JSONPaths and CEL expressions are checked by the applier, which parses them.
func CheckOptions(d Desire) error {
	switch d := d.(type) {
	case *ApplyDesire:
		return d.Spec.checkOptions()
	case *DeleteDesire:
		return oneOf("spec.propagationPolicy", d.Spec.PropagationPolicy, PropagationBackground, PropagationForeground, PropagationOrphan)
	case *ReadDesire:
		for i, p := range d.Spec.Fields {
			if err := CheckJSONPointer(p); err != nil {
				return fmt.Errorf("%w: spec.fields[%d]: %w", ErrInvalidOption, i, err)
			}
		}
	}
	return nil
}

func (s *ApplyDesireSpec) checkOptions() error {
	if err := s.checkType(); err != nil {
		return err
	}
	if err := oneOf("spec.applyPolicy", s.ApplyPolicy, ApplyPolicyServerSideApply, ApplyPolicyCreateOnly, ApplyPolicyReadOnly); err != nil {
		return err
	}
	for i, f := range s.IgnoreFields {
		at := fmt.Sprintf("spec.ignoreFields[%d]", i)
		if err := oneOf(at+".condition", f.Condition, IgnoreOnTargetPresent, IgnoreOnTargetChange); err != nil {
			return err
		}
		if f.Condition == "" {
			return fmt.Errorf("%w: %s.condition is missing (OnTargetPresent or OnTargetChange)", ErrInvalidOption, at)
		}
		if len(f.JSONPointers) == 0 {
			return fmt.Errorf("%w: %s.jsonPointers is empty", ErrInvalidOption, at)
		}
		for j, p := range f.JSONPointers {
			if err := CheckJSONPointer(p); err != nil {
				return fmt.Errorf("%w: %s.jsonPointers[%d]: %w", ErrInvalidOption, at, j, err)
			}
		}
	}
	for i, m := range s.YieldToManagers {
		if m == "" {
			return fmt.Errorf("%w: spec.yieldToManagers[%d] is empty", ErrInvalidOption, i)
		}
	}
	if s.StatusFeedback != nil {
		seen := map[string]bool{}
		for i, r := range s.StatusFeedback.JSONPaths {
			at := fmt.Sprintf("spec.statusFeedback.jsonPaths[%d]", i)
			switch {
			case r.Name == "":
				return fmt.Errorf("%w: %s.name is empty", ErrInvalidOption, at)
			case seen[r.Name]:
				return fmt.Errorf("%w: %s.name %q is used twice", ErrInvalidOption, at, r.Name)
			case strings.TrimSpace(r.Path) == "":
				return fmt.Errorf("%w: %s.path is empty", ErrInvalidOption, at)
			}
			seen[r.Name] = true
		}
	}
	return nil
}

// oneOf checks that value (of attribute at) is "" (absent) or one of known.
func oneOf(at, value string, known ...string) error {
	if value == "" || slices.Contains(known, value) {
		return nil
	}
	return fmt.Errorf("%w: %s is %q, a value this applier does not know (it knows %s): a newer applier may understand it; "+
		"refusing rather than acting with a default", ErrInvalidOption, at, value, strings.Join(known, ", "))
}

// CheckJSONPointer returns nil when p is an RFC 6901 JSON Pointer to a member of a document:
// it starts with "/", and every "~" is followed by "0" or "1". The whole document ("") is not
// accepted: no option may point at it.
func CheckJSONPointer(p string) error {
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("JSON Pointer %q does not start with \"/\" (RFC 6901)", p)
	}
	for i := 0; i < len(p); i++ {
		if p[i] == '~' && (i+1 == len(p) || (p[i+1] != '0' && p[i+1] != '1')) {
			return fmt.Errorf("JSON Pointer %q has a \"~\" not followed by 0 or 1 (RFC 6901)", p)
		}
	}
	return nil
}

// SplitJSONPointer returns the reference tokens of p (a pointer CheckJSONPointer accepts),
// unescaped: "/spec/a~1b" is ["spec", "a/b"].
func SplitJSONPointer(p string) []string {
	tokens := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, t := range tokens {
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return tokens
}

// checkType checks the shape `spec.type` asks for (docs/contract.md "The folded Delete"): a
// type this module knows; a Delete with a complete targetItem, no spec_kubeContent, no apply
// option and a known propagationPolicy; a ServerSideApply without propagationPolicy and with
// a targetItem, when it has one, that names kubeContent's object. A ServerSideApply without
// kubeContent is the apply's own refusal ("kubeContent is empty"), as it always was.
func (s *ApplyDesireSpec) checkType() error {
	if err := oneOf("spec.type", s.Type, ApplyTypeServerSideApply, ApplyTypeDelete); err != nil {
		return err
	}
	if !s.IsDelete() {
		if s.PropagationPolicy != "" {
			return fmt.Errorf("%w: spec.propagationPolicy is set but spec.type is %s: it is an option of type %s only",
				ErrInvalidOption, s.ApplyType(), ApplyTypeDelete)
		}
		return s.checkTargetAgrees()
	}
	if len(bytes.TrimSpace(s.KubeContent)) > 0 {
		return fmt.Errorf("%w: spec.type is %s but the item holds %s: a Delete deletes spec.targetItem and applies nothing "+
			"(write it without %s, or with type %s)", ErrInvalidOption, ApplyTypeDelete, AttrSpecKubeContent, AttrSpecKubeContent, ApplyTypeServerSideApply)
	}
	if t := s.TargetItem; t == nil || t.Version == "" || t.Resource == "" || t.Name == "" {
		return fmt.Errorf("%w: spec.type is %s but spec.targetItem is missing or incomplete: it names the object to delete "+
			"(version, resource and name; group and namespace as the object has them)", ErrInvalidOption, ApplyTypeDelete)
	}
	for _, o := range []struct {
		name string
		set  bool
	}{
		{"applyPolicy", s.ApplyPolicy != ""}, {"forceConflicts", s.ForceConflicts != nil}, {"health", s.Health != nil},
		{"ignoreFields", s.IgnoreFields != nil}, {"serverSideApply", s.ServerSideApply != nil},
		{"statusFeedback", s.StatusFeedback != nil}, {"yieldToManagers", s.YieldToManagers != nil},
	} {
		if o.set {
			return fmt.Errorf("%w: spec.%s is set but spec.type is %s: it belongs to type %s, and a Delete applies nothing",
				ErrInvalidOption, o.name, ApplyTypeDelete, ApplyTypeServerSideApply)
		}
	}
	return oneOf("spec.propagationPolicy", s.PropagationPolicy, PropagationBackground, PropagationForeground, PropagationOrphan)
}

// checkTargetAgrees refuses a ServerSideApply whose targetItem names another object than its
// kubeContent: which one would the status speak of? The resource is not compared (the kind's
// resource is the cluster's to say); content that names no object is the apply's to refuse.
func (s *ApplyDesireSpec) checkTargetAgrees() error {
	t := s.TargetItem
	if t == nil || len(s.KubeContent) == 0 {
		return nil
	}
	key, _ := objectKeyOf(s.KubeContent)
	parts := strings.SplitN(key, "/", 4)
	if len(parts) != 4 {
		return nil
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
	}
	_ = json.Unmarshal(s.KubeContent, &head)
	_, version, found := strings.Cut(head.APIVersion, "/")
	if !found {
		version = head.APIVersion
	}
	if t.Group != parts[0] || (t.Version != "" && t.Version != version) || t.Namespace != parts[2] || t.Name != parts[3] {
		return fmt.Errorf("%w: spec.targetItem names %s but kubeContent is %s %s/%s: they must name one object",
			ErrInvalidOption, t, head.APIVersion+" "+parts[1], parts[2], parts[3])
	}
	return nil
}
