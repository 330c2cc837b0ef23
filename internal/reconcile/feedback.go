package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/jsonpath"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/target"
)

// Status feedback (`spec.statusFeedback`, issue #40 item 4): values read with kubectl JSONPaths
// from an OBSERVED object (an apply's response, or a GET at the resourceVersion the target's
// watch reports), never from kubeContent.
//
// Budget: the item limit (api.MaxItemSize, 400 KB) also holds the conditions and the spec's
// fields, so feedback gets a fixed share: one value is at most maxFeedbackValue bytes and all
// values together at most maxFeedbackTotal bytes. A value over either is replaced by a note
// (Type "", Value says its size and the limit); the desire is not refused, the other values
// are still reported.
const (
	maxFeedbackValue = 16 << 10
	maxFeedbackTotal = 64 << 10
	// feedbackGetsPerSecond bounds the GETs feedback costs (at most one per new resourceVersion).
	feedbackGetsPerSecond = 50
	// feedbackMatchedNothing is the Value of a rule whose path matched nothing (Type "").
	feedbackMatchedNothing = "matched nothing"
	// feedbackUnreadable begins the Value of a rule whose evaluation panicked (Type ""): the
	// evaluator (client-go's jsonpath, reflection over the object) is not trusted with input
	// from the apiserver and DynamoDB.
	feedbackUnreadable = "could not be read"
)

// feedbacks holds, per ApplyDesire ID, the desire's compiled rules and the values last read at
// one resourceVersion of its object. The zero value is ready to use.
type feedbacks struct {
	mu      sync.Mutex
	byID    map[string]*feedbackRules
	limiter *rate.Limiter
}

// feedbackRules are one desire's rules, compiled once per rule text.
type feedbackRules struct {
	rules []api.FeedbackRule
	gk    schema.GroupKind // the kind they were checked for (a Secret's rules are stricter)
	// paths are the rules' paths as parsed (checked at compile). Each evaluation parses its
	// own JSONPath: one keeps state across FindResults calls (a range truncates its nodes, a
	// panic leaves it mid-walk), so a reused one reads nothing from the second time on.
	paths []string
	// The values last read, for the object at rv (the target t), under mu.
	mu     sync.Mutex
	t      api.TargetItem
	rv     string
	values []api.FeedbackValue
}

// rulesOf returns d's compiled rules (nil when d has none), compiling them when new or
// changed; the error names the rule whose path does not parse or may read a Secret's data.
func (f *feedbacks) rulesOf(d *api.ApplyDesire, gk schema.GroupKind) (*feedbackRules, error) {
	if d.Spec.StatusFeedback == nil || len(d.Spec.StatusFeedback.JSONPaths) == 0 {
		f.forget(d.DocumentID)
		return nil, nil
	}
	rules := d.Spec.StatusFeedback.JSONPaths
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.byID[d.DocumentID]; ok && c.gk == gk && slices.Equal(c.rules, rules) {
		return c, nil
	}
	c, err := compileFeedback(rules, gk)
	if err != nil {
		return nil, err
	}
	if f.byID == nil {
		f.byID = map[string]*feedbackRules{}
	}
	f.byID[d.DocumentID] = c
	return c, nil
}

// compileFeedback parses rules' paths for an object of kind gk.
func compileFeedback(rules []api.FeedbackRule, gk schema.GroupKind) (*feedbackRules, error) {
	if err := secretRulesAllowed(gk, rules); err != nil {
		return nil, err
	}
	c := &feedbackRules{rules: slices.Clone(rules), gk: gk}
	for i, r := range rules {
		if _, err := newJSONPath(r.Name, relaxedPath(r.Path)); err != nil {
			return nil, fmt.Errorf("spec.statusFeedback.jsonPaths[%d] (%q): path %q does not parse: %w", i, r.Name, r.Path, err)
		}
		c.paths = append(c.paths, relaxedPath(r.Path))
	}
	return c, nil
}

// newJSONPath parses path (relaxed) into a fresh evaluator for one evaluation; a missing key
// matches nothing rather than failing.
func newJSONPath(name, path string) (*jsonpath.JSONPath, error) {
	p := jsonpath.New(name).AllowMissingKeys(true)
	if err := p.Parse(path); err != nil {
		return nil, err
	}
	return p, nil
}

// relaxedPath accepts kubectl's relaxed spelling (".status.x", "status.x", "$.status.x") as
// well as a template ("{.status.x}").
func relaxedPath(p string) string {
	p = strings.TrimSpace(p)
	if strings.Contains(p, "{") {
		return p
	}
	p = strings.TrimPrefix(p, "$")
	if !strings.HasPrefix(p, ".") && !strings.HasPrefix(p, "[") {
		p = "." + p
	}
	return "{" + p + "}"
}

// secretRulesAllowed refuses, for a Secret, every path that could reach data or stringData: a
// Secret's path must start with a named field other than data and stringData (no recursive
// descent, wildcard, filter, union or the whole object at the top), and may read
// metadata only below a named field other than annotations (the last-applied annotation can
// hold the data) and managedFields (its fieldsV1 name the data's keys).
func secretRulesAllowed(gk schema.GroupKind, rules []api.FeedbackRule) error {
	if gk.Group != "" || gk.Kind != "Secret" {
		return nil
	}
	for i, r := range rules {
		if !secretSafePath(r.Path) {
			return fmt.Errorf("spec.statusFeedback.jsonPaths[%d] (%q): path %q may read a Secret's data: a Secret's feedback path must start with a named field other than data and stringData, without recursive descent or wildcards at the top, and not reach metadata.annotations or metadata.managedFields", i, r.Name, r.Path)
		}
	}
	return nil
}

// secretSafePath reports whether path (parsed; one that does not parse is left to the
// compiler's error) reads no Secret data, by secretRulesAllowed's rule.
func secretSafePath(path string) bool {
	p, err := jsonpath.Parse("secret", relaxedPath(path))
	if err != nil {
		return true // refused as not parsing
	}
	for _, n := range p.Root.Nodes {
		switch n := n.(type) {
		case *jsonpath.TextNode:
		case *jsonpath.ListNode:
			if len(n.Nodes) == 0 {
				return false
			}
			first, ok := n.Nodes[0].(*jsonpath.FieldNode)
			if !ok || first.Value == "" || first.Value == "data" || first.Value == "stringData" {
				return false
			}
			if first.Value == "metadata" {
				second, ok := nodeAt(n.Nodes, 1).(*jsonpath.FieldNode)
				if !ok || second.Value == "" || second.Value == "annotations" || second.Value == "managedFields" {
					return false
				}
			}
		default:
			return false
		}
	}
	return true
}

func nodeAt(nodes []jsonpath.Node, i int) jsonpath.Node {
	if i < len(nodes) {
		return nodes[i]
	}
	return nil
}

// read evaluates the rules on obj: one value per rule, in the rules' order, within the budget.
func (c *feedbackRules) read(obj map[string]any) []api.FeedbackValue {
	out := make([]api.FeedbackValue, 0, len(c.rules))
	total := 0
	for i, r := range c.rules {
		v := feedbackValue(r.Name, c.paths[i], obj)
		size := len(v.Name) + len(v.Type) + len(v.Value)
		switch {
		case len(v.Value) > maxFeedbackValue:
			v = api.FeedbackValue{Name: r.Name, Value: fmt.Sprintf("value of %d bytes omitted: over the limit of %d bytes for one feedback value", len(v.Value), maxFeedbackValue)}
		case total+size > maxFeedbackTotal:
			v = api.FeedbackValue{Name: r.Name, Value: fmt.Sprintf("value of %d bytes omitted: the feedback values would be over their limit of %d bytes in all", len(v.Value), maxFeedbackTotal)}
		}
		total += len(v.Name) + len(v.Type) + len(v.Value)
		out = append(out, v)
	}
	return out
}

// feedbackValue is one rule's value on obj: a single result typed by its JSON type, several
// as a Json list, none as "matched nothing". A panic of the evaluation (client-go's jsonpath
// reflects over the object and has panicked on crafted input before) is this rule's
// "could not be read" value, never a crash of the applier.
func feedbackValue(name, path string, obj map[string]any) (v api.FeedbackValue) {
	defer func() {
		if r := recover(); r != nil {
			v = api.FeedbackValue{Name: name, Value: fmt.Sprintf("%s: the JSONPath evaluation failed (%.200v)", feedbackUnreadable, r)}
		}
	}()
	p, err := newJSONPath(name, path)
	if err != nil { // parsed at compile: not expected
		return api.FeedbackValue{Name: name, Value: fmt.Sprintf("%s: %v", feedbackUnreadable, err)}
	}
	results, err := p.FindResults(obj)
	if err != nil {
		// With missing keys allowed, what is left is a value of the wrong shape (an index into
		// a map, a filter over a string): the path matches nothing there.
		return api.FeedbackValue{Name: name, Value: feedbackMatchedNothing}
	}
	var found []any
	for _, rs := range results {
		for _, r := range rs {
			if r.IsValid() && r.CanInterface() {
				found = append(found, r.Interface())
			}
		}
	}
	switch len(found) {
	case 0:
		return api.FeedbackValue{Name: name, Value: feedbackMatchedNothing}
	case 1:
		t, v := typedValue(found[0])
		return api.FeedbackValue{Name: name, Type: t, Value: v}
	}
	return api.FeedbackValue{Name: name, Type: api.FeedbackJSON, Value: compactJSON(found)}
}

// typedValue spells one value per its JSON type.
func typedValue(x any) (typ, value string) {
	switch v := x.(type) {
	case string:
		return api.FeedbackString, v
	case bool:
		return api.FeedbackBoolean, fmt.Sprint(v)
	case int, int32, int64, uint, uint32, uint64:
		return api.FeedbackInteger, fmt.Sprint(v)
	}
	if rv := reflect.ValueOf(x); rv.IsValid() && rv.Kind() == reflect.Interface && !rv.IsNil() {
		return typedValue(rv.Elem().Interface())
	}
	return api.FeedbackJSON, compactJSON(x)
}

func compactJSON(x any) string {
	b, err := json.Marshal(x)
	if err != nil {
		return fmt.Sprintf("%q", fmt.Sprint(x))
	}
	return string(b)
}

// observe returns the values of d's rules on the object at resourceVersion rv, read from live
// when given (an apply's response), else remembered for rv or read by a GET. ok is false when
// the object is gone.
func (f *feedbacks) observe(ctx context.Context, c *feedbackRules, get target.GetFunc, t api.TargetItem, rv string, live *unstructured.Unstructured) ([]api.FeedbackValue, bool, error) {
	c.mu.Lock()
	if live == nil && c.t == t && c.rv == rv && rv != "" {
		values := c.values
		c.mu.Unlock()
		return values, true, nil
	}
	c.mu.Unlock()
	if live == nil {
		if err := f.limit().Wait(ctx); err != nil {
			return nil, false, fmt.Errorf("reading %s for its status feedback: %w", t, err)
		}
		var err error
		if live, err = get(ctx, t); err != nil {
			return nil, false, fmt.Errorf("reading %s for its status feedback: %w", t, err)
		}
		if live == nil {
			return nil, false, nil
		}
	}
	values := c.read(live.Object)
	c.mu.Lock()
	c.t, c.rv, c.values = t, live.GetResourceVersion(), values
	c.mu.Unlock()
	return values, true, nil
}

func (f *feedbacks) limit() *rate.Limiter {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.limiter == nil {
		f.limiter = rate.NewLimiter(feedbackGetsPerSecond, 2*feedbackGetsPerSecond)
	}
	return f.limiter
}

// forget drops desire id's rules and values.
func (f *feedbacks) forget(id string) {
	f.mu.Lock()
	delete(f.byID, id)
	f.mu.Unlock()
}

// endTerm drops every desire's rules and values.
func (f *feedbacks) endTerm() {
	f.mu.Lock()
	f.byID = nil
	f.mu.Unlock()
}

// feedbackPrecheck compiles d's rules for an object of kind gk (once per rule text): a path
// that does not parse, or a Secret's path that could read its data, refuses d
// (PreCheckFailed naming the rule); refused is false otherwise.
func (r *Apply) feedbackPrecheck(d *api.ApplyDesire, gk schema.GroupKind) (v controller.Verdict, refused bool) {
	if _, err := r.feedback.rulesOf(d, gk); err != nil {
		return controller.Refused(api.ReasonPreCheckFailed, err.Error()), true
	}
	return v, false
}

// observeFeedback returns v carrying d's status feedback (controller.WithFeedback), read from
// live when given (the apply's response), else from the object at the resourceVersion st shows
// (remembered, or one GET per new resourceVersion). A desire without statusFeedback gets v
// unchanged; a failed GET is Transient (the status keeps the last feedback); an object gone
// leaves v without feedback. A reconciler path that only observes (e.g. ReadOnly) calls it
// with the sighting or the object it read.
func (r *Apply) observeFeedback(ctx context.Context, d *api.ApplyDesire, t api.TargetItem, gk schema.GroupKind, st *target.Sighting, live *unstructured.Unstructured, v controller.Verdict) controller.Verdict {
	c, err := r.feedback.rulesOf(d, gk)
	if err != nil {
		return controller.Refused(api.ReasonPreCheckFailed, err.Error())
	}
	if c == nil {
		return v
	}
	rv := ""
	if st != nil {
		rv = st.ResourceVersion()
	}
	values, ok, err := r.feedback.observe(ctx, c, getTarget(r.kube), t, rv, live)
	if err != nil {
		return controller.Transient(api.ReasonKubeAPIError, err)
	}
	if !ok {
		return v
	}
	return controller.WithFeedback(v, values)
}
