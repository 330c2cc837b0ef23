package reconcile

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
)

var deploymentGK = schema.GroupKind{Group: "apps", Kind: "Deployment"}

// feedbackObject is an observed Deployment as the apiserver's JSON decodes (int64 numbers).
func feedbackObject(t *testing.T) map[string]any {
	t.Helper()
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON([]byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},
		"spec":{"replicas":3,"paused":false,"selector":{"matchLabels":{"app":"web"}}},
		"status":{"readyReplicas":2,"ratio":0.5,"conditions":[{"type":"Available","status":"True"},{"type":"Progressing","status":"True"}]}}`)); err != nil {
		t.Fatal(err)
	}
	return u.Object
}

// TestFeedbackValues: each rule's value is typed by its JSON type; several results are a Json
// list; a path that matches nothing (or meets the wrong shape) is reported, not an error.
func TestFeedbackValues(t *testing.T) {
	obj := feedbackObject(t)
	for _, tc := range []struct {
		name, path string
		want       api.FeedbackValue
	}{
		{"integer", ".spec.replicas", api.FeedbackValue{Type: api.FeedbackInteger, Value: "3"}},
		{"integer, template spelling", "{.status.readyReplicas}", api.FeedbackValue{Type: api.FeedbackInteger, Value: "2"}},
		{"integer, without the leading dot", "spec.replicas", api.FeedbackValue{Type: api.FeedbackInteger, Value: "3"}},
		{"string", ".metadata.name", api.FeedbackValue{Type: api.FeedbackString, Value: "web"}},
		{"boolean", ".spec.paused", api.FeedbackValue{Type: api.FeedbackBoolean, Value: "false"}},
		{"a non-integer number is Json", ".status.ratio", api.FeedbackValue{Type: api.FeedbackJSON, Value: "0.5"}},
		{"an object is Json", ".spec.selector", api.FeedbackValue{Type: api.FeedbackJSON, Value: `{"matchLabels":{"app":"web"}}`}},
		{"a condition by filter", `{.status.conditions[?(@.type=="Available")].status}`, api.FeedbackValue{Type: api.FeedbackString, Value: "True"}},
		{"several results are a Json list", ".status.conditions[*].type", api.FeedbackValue{Type: api.FeedbackJSON, Value: `["Available","Progressing"]`}},
		{"a missing field matches nothing", ".status.updatedReplicas", api.FeedbackValue{Value: feedbackMatchedNothing}},
		{"a filter without a match matches nothing", `{.status.conditions[?(@.type=="Failed")].status}`, api.FeedbackValue{Value: feedbackMatchedNothing}},
		{"a wrong shape matches nothing", ".metadata.name.first", api.FeedbackValue{Value: feedbackMatchedNothing}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := compileFeedback([]api.FeedbackRule{{Name: "v", Path: tc.path}}, deploymentGK)
			if err != nil {
				t.Fatal(err)
			}
			tc.want.Name = "v"
			if got := c.read(obj); !reflect.DeepEqual(got, []api.FeedbackValue{tc.want}) {
				t.Fatalf("read(%q) = %+v, want %+v", tc.path, got, tc.want)
			}
		})
	}
}

// TestFeedbackRulesRefused: a path that does not parse, and for a Secret any path that could
// reach data or stringData, is refused naming the rule; other kinds may read any path.
func TestFeedbackRulesRefused(t *testing.T) {
	secret := schema.GroupKind{Kind: "Secret"}
	for _, tc := range []struct {
		name, path string
		gk         schema.GroupKind
		want       string // "" allowed
	}{
		{"bad path", "{.status.conditions[", deploymentGK, `path "{.status.conditions[" does not parse`},
		{"bad filter", `{.a[?(@.x=="y"]}`, deploymentGK, "does not parse"},
		{"a ConfigMap's data is fine", ".data.a", schema.GroupKind{Kind: "ConfigMap"}, ""},
		{"a Deployment's recursive descent is fine", "{..image}", deploymentGK, ""},
		{"Secret: type", ".type", secret, ""},
		{"Secret: a label", ".metadata.labels.app", secret, ""},
		{"Secret: the name", "{.metadata.name}", secret, ""},
		{"Secret: data", ".data", secret, "may read a Secret's data"},
		{"Secret: one data key", ".data.password", secret, "may read a Secret's data"},
		{"Secret: stringData", "{.stringData.password}", secret, "may read a Secret's data"},
		{"Secret: recursive descent", "{..}", secret, "may read a Secret's data"},
		{"Secret: recursive descent to a key", "{..password}", secret, "may read a Secret's data"},
		{"Secret: wildcard", "{.*}", secret, "may read a Secret's data"},
		{"Secret: the whole object", "{.}", secret, "may read a Secret's data"},
		{"Secret: the current object", "{@}", secret, "may read a Secret's data"},
		{"Secret: a filter at the top", `{[?(@.x=="y")]}`, secret, "may read a Secret's data"},
		{"Secret: a range", "{range .data}{.}{end}", secret, "may read a Secret's data"},
		{"Secret: a safe and an unsafe list", "{.type}{.data}", secret, "may read a Secret's data"},
		{"Secret: metadata whole", ".metadata", secret, "may read a Secret's data"},
		{"Secret: the annotations (last-applied)", ".metadata.annotations", secret, "may read a Secret's data"},
		{"Secret: under metadata, a wildcard", "{.metadata.*}", secret, "may read a Secret's data"},
		{"Secret: managedFields (the data's key names)", ".metadata.managedFields", secret, "may read a Secret's data"},
		{"Secret: managedFields, one entry's fields", "{.metadata.managedFields[0].fieldsV1}", secret, "may read a Secret's data"},
		{"Secret: managedFields, a wildcard", "{.metadata.managedFields[*].fieldsV1}", secret, "may read a Secret's data"},
		{"Secret: managedFields, recursive descent", "{.metadata.managedFields..manager}", secret, "may read a Secret's data"},
		{"Secret: managedFields, bracket spelling", "{.metadata['managedFields']}", secret, "may read a Secret's data"},
		{"Secret: recursive descent under metadata", "{.metadata..fieldsV1}", secret, "may read a Secret's data"},
		{"Secret: a union under metadata", "{.metadata['labels','managedFields']}", secret, "may read a Secret's data"},
		{"Secret: managedFields after a safe list", "{.type}{.metadata.managedFields}", secret, "may read a Secret's data"},
		{"Secret: ownerReferences are fine", "{.metadata.ownerReferences[*].name}", secret, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := compileFeedback([]api.FeedbackRule{{Name: "ok", Path: ".kind"}, {Name: "r", Path: tc.path}}, tc.gk)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("%q allowed, want refused (%s)", tc.path, tc.want)
			case tc.want != "" && (!strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `jsonPaths[1] ("r")`)):
				t.Fatalf("error %q, want it to name jsonPaths[1] (\"r\") and contain %q", err, tc.want)
			}
		})
	}
}

// TestFeedbackBudget: a value over the one-value limit, and values past the total limit, are
// replaced by a note (type ""); the others are still reported.
func TestFeedbackBudget(t *testing.T) {
	big := strings.Repeat("x", maxFeedbackValue+1)
	mid := strings.Repeat("y", maxFeedbackValue-100)
	obj := map[string]any{"big": big, "small": "s"}
	for i := range 5 {
		obj[fmt.Sprint("m", i)] = mid
	}
	rules := []api.FeedbackRule{{Name: "big", Path: ".big"}, {Name: "small", Path: ".small"}}
	for i := range 5 {
		rules = append(rules, api.FeedbackRule{Name: fmt.Sprint("m", i), Path: fmt.Sprint(".m", i)})
	}
	c, err := compileFeedback(rules, schema.GroupKind{Kind: "ConfigMap"})
	if err != nil {
		t.Fatal(err)
	}
	got := c.read(obj)
	if got[0].Type != "" || !strings.Contains(got[0].Value, fmt.Sprintf("value of %d bytes omitted: over the limit of %d bytes for one", len(big), maxFeedbackValue)) {
		t.Fatalf("big value = %+v", got[0])
	}
	if got[1] != (api.FeedbackValue{Name: "small", Type: api.FeedbackString, Value: "s"}) {
		t.Fatalf("small value = %+v", got[1])
	}
	for i, v := range got[2:6] {
		if v.Value != mid {
			t.Fatalf("m%d not reported within the budget: %.80q", i, v.Value)
		}
	}
	if got[6].Type != "" || !strings.Contains(got[6].Value, "over their limit of 65536 bytes in all") {
		t.Fatalf("m4 = %.120q, want a note", got[6].Value)
	}
	total := 0
	for _, v := range got {
		total += len(v.Name) + len(v.Type) + len(v.Value)
	}
	if total > maxFeedbackTotal {
		t.Fatalf("feedback takes %d bytes, over %d", total, maxFeedbackTotal)
	}
}

// TestApplyFeedback: through the controller, an applied Deployment's feedback (read from the
// apply's response, not from kubeContent) lands in status.feedback; removing statusFeedback
// drops it; a Secret rule on data is refused before any apply; a bad path too.
func TestApplyFeedback(t *testing.T) {
	content := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},"spec":{"replicas":2}}`
	kube := newFakeKube()
	h := newHarness[*api.ApplyDesire](api.KindApplyDesire, NewApply(ApplyConfig{Kube: kube, Mapper: withSecrets(newMapper()), FieldManager: "fm"}))
	d := applyDesire("a", content)
	d.Spec.StatusFeedback = &api.StatusFeedback{JSONPaths: []api.FeedbackRule{
		{Name: "replicas", Path: ".spec.replicas"}, {Name: "generation", Path: ".metadata.generation"}, {Name: "ready", Path: ".status.readyReplicas"}}}
	_, st := h.sync(t, d)
	want := []api.FeedbackValue{{Name: "replicas", Type: api.FeedbackInteger, Value: "2"},
		{Name: "generation", Type: api.FeedbackInteger, Value: "1"}, // set by the apiserver: observed, not kubeContent
		{Name: "ready", Value: feedbackMatchedNothing}}
	if succ := condition(st, api.ConditionSuccessful); succ.Status != "True" || !reflect.DeepEqual(st.Status.Feedback, want) {
		t.Fatalf("Successful %s %q, feedback %+v, want %+v", succ.Status, succ.Message, st.Status.Feedback, want)
	}

	d = applyDesire("a", content)
	d.Version = 4
	_, st = h.sync(t, d)
	if st.Status.Feedback != nil {
		t.Fatalf("statusFeedback removed, status.feedback = %+v", st.Status.Feedback)
	}

	for _, tc := range []struct{ name, content, path, want string }{
		{"Secret data", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"default"},"data":{"p":"cA=="}}`, ".data.p", "may read a Secret's data"},
		{"bad path", content, "{.status[", "does not parse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kube := newFakeKube()
			h := newHarness[*api.ApplyDesire](api.KindApplyDesire, NewApply(ApplyConfig{Kube: kube, Mapper: withSecrets(newMapper()), FieldManager: "fm"}))
			d := applyDesire("b", tc.content)
			d.Spec.StatusFeedback = &api.StatusFeedback{JSONPaths: []api.FeedbackRule{{Name: "x", Path: tc.path}}}
			_, st := h.sync(t, d)
			succ := condition(st, api.ConditionSuccessful)
			if succ.Reason != api.ReasonPreCheckFailed || !strings.Contains(succ.Message, tc.want) || !strings.Contains(succ.Message, `"x"`) {
				t.Fatalf("Successful = %s/%s %q, want PreCheckFailed naming the rule, containing %q", succ.Status, succ.Reason, succ.Message, tc.want)
			}
			if len(kube.calls) != 0 || st.Status.Feedback != nil {
				t.Fatalf("calls %v, feedback %v: want none", kube.calls, st.Status.Feedback)
			}
		})
	}
}

// TestObserveFeedback: without the object at hand, one GET per new resourceVersion; the values
// read at a resourceVersion are reused; a failed GET is Transient; an object gone, no feedback.
func TestObserveFeedback(t *testing.T) {
	kube := newFakeKube()
	r := NewApply(ApplyConfig{Kube: kube, Mapper: newMapper(), FieldManager: "fm"})
	d := applyDesire("a", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},"spec":{"replicas":2}}`)
	d.Spec.StatusFeedback = &api.StatusFeedback{JSONPaths: []api.FeedbackRule{{Name: "ready", Path: ".status.readyReplicas"}}}
	tgt := api.TargetItem{Group: "apps", Version: "v1", Resource: "deployments", Namespace: "default", Name: "web"}
	ctx := context.Background()
	gets := func() int {
		n := 0
		for _, c := range kube.calls {
			if strings.HasPrefix(c, "get ") {
				n++
			}
		}
		return n
	}
	// The object gone: no feedback, no error.
	v := r.observeFeedback(ctx, d, tgt, deploymentGK, nil, nil, controller.Applied(1, "x"))
	if _, ok := controller.Feedback(v); ok || gets() != 1 {
		t.Fatalf("object absent: feedback observed %v, gets %d", ok, gets())
	}
	obj, err := decodeObject(d.Spec.KubeContent, mustHead(t, d))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kube.Apply(ctx, tgtGVR(tgt), obj, "fm"); err != nil {
		t.Fatal(err)
	}
	kube.mutate(func(objs map[string]*unstructured.Unstructured) []string {
		key := objKey(tgtGVR(tgt), "default", "web")
		_ = unstructured.SetNestedField(objs[key].Object, int64(2), "status", "readyReplicas")
		objs[key].SetResourceVersion("7")
		return []string{key}
	})
	for i := range 2 {
		got, ok, err := r.feedback.observe(ctx, r.feedback.byID["a"], getTarget(kube), tgt, "7", nil)
		if err != nil || !ok || !reflect.DeepEqual(got, []api.FeedbackValue{{Name: "ready", Type: api.FeedbackInteger, Value: "2"}}) {
			t.Fatalf("observe #%d = %+v, %v, %v", i, got, ok, err)
		}
	}
	if gets() != 2 { // the absent one, then one for resourceVersion 7
		t.Fatalf("gets = %d, want 2 (one per new resourceVersion)", gets())
	}
	kube.setErr("get", fmt.Errorf("timeout"))
	_, ok, err := r.feedback.observe(ctx, r.feedback.byID["a"], getTarget(kube), tgt, "8", nil)
	if err == nil || ok {
		t.Fatalf("a failed GET: ok %v, err %v", ok, err)
	}
	v = r.observeFeedback(ctx, d, tgt, deploymentGK, nil, nil, controller.Applied(1, "x"))
	if !v.Degraded() || v.Reason() != api.ReasonKubeAPIError || !strings.Contains(v.Message(), "status feedback") {
		t.Fatalf("a failed GET: %v, want Transient", v)
	}
}

func mustHead(t *testing.T, d *api.ApplyDesire) contentHead {
	t.Helper()
	h, err := parseHead(d.Spec.KubeContent)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func tgtGVR(t api.TargetItem) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: t.Group, Version: t.Version, Resource: t.Resource}
}

// TestFeedbackCompiledOnce: a desire's rules are compiled once per rule text and kind; new
// rules, or the same rules over a Secret, are compiled (and checked) again; a desire without
// rules drops them.
func TestFeedbackCompiledOnce(t *testing.T) {
	var f feedbacks
	d := applyDesire("a", "")
	d.Spec.StatusFeedback = &api.StatusFeedback{JSONPaths: []api.FeedbackRule{{Name: "p", Path: ".data.p"}}}
	first, err := f.rulesOf(d, schema.GroupKind{Kind: "ConfigMap"})
	if err != nil || first == nil {
		t.Fatal(first, err)
	}
	d2 := applyDesire("a", "")
	d2.Version = 4
	d2.Spec.StatusFeedback = &api.StatusFeedback{JSONPaths: []api.FeedbackRule{{Name: "p", Path: ".data.p"}}}
	if again, _ := f.rulesOf(d2, schema.GroupKind{Kind: "ConfigMap"}); again != first {
		t.Fatal("the same rules were compiled again")
	}
	if _, err := f.rulesOf(d2, schema.GroupKind{Kind: "Secret"}); err == nil {
		t.Fatal("the same rules over a Secret were not checked again")
	}
	d2.Spec.StatusFeedback.JSONPaths[0].Path = ".data.q"
	if again, err := f.rulesOf(d2, schema.GroupKind{Kind: "ConfigMap"}); err != nil || again == first {
		t.Fatalf("changed rules: %v, recompiled %v", err, again != first)
	}
	if c, err := f.rulesOf(applyDesire("a", ""), schema.GroupKind{Kind: "ConfigMap"}); c != nil || err != nil || f.byID["a"] != nil {
		t.Fatal("rules kept for a desire without statusFeedback")
	}
}

// hiddenField is a value no JSON decoding yields (an unexported field): client-go's jsonpath
// filter calls reflect.Value.Interface on it and panics (client-go v0.37.2, evalFilter). It
// stands for any input that makes the evaluator panic.
type hiddenField struct{ x int }

// TestFeedbackEvaluationPanics: a rule whose evaluation panics is reported as "could not be
// read" for that rule alone; the other rules are still read and the caller does not crash.
func TestFeedbackEvaluationPanics(t *testing.T) {
	obj := map[string]any{"a": []any{hiddenField{1}}, "b": "ok"}
	for _, tc := range []struct {
		name, path string
		want       api.FeedbackValue
	}{
		{"a filter over an unexported field panics in client-go", "{.a[?(@.x==1)]}", api.FeedbackValue{Name: "r", Value: feedbackUnreadable + ": the JSONPath evaluation failed (reflect.Value.Interface: cannot return value obtained from unexported field or method)"}},
		{"a rule that does not panic is read", ".b", api.FeedbackValue{Name: "r", Type: api.FeedbackString, Value: "ok"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := compileFeedback([]api.FeedbackRule{{Name: "r", Path: tc.path}, {Name: "after", Path: ".b"}}, deploymentGK)
			if err != nil {
				t.Fatal(err)
			}
			want := []api.FeedbackValue{tc.want, {Name: "after", Type: api.FeedbackString, Value: "ok"}}
			if got := c.read(obj); !reflect.DeepEqual(got, want) {
				t.Fatalf("read(%q) = %+v, want %+v", tc.path, got, want)
			}
		})
	}
}

// TestFeedbackReadAgain: a rule's path is evaluated again at each new resourceVersion and
// reads the same value from the same object: client-go's JSONPath keeps state across
// evaluations (a range truncates its nodes; a panic leaves it mid-walk), so a reused one
// reported "matched nothing" from the second read on.
func TestFeedbackReadAgain(t *testing.T) {
	good := map[string]any{"a": []any{map[string]any{"x": int64(1), "b": "one"}, map[string]any{"x": int64(2), "b": "two"}}}
	for _, tc := range []struct {
		name, path string
		first      map[string]any // read before good (nil: none)
		want       api.FeedbackValue
	}{
		{"a range", "{range .a[*]}{.b}{end}", nil, api.FeedbackValue{Name: "r", Type: api.FeedbackJSON, Value: `["one","two"]`}},
		{"a filter", "{.a[?(@.x==1)].b}", nil, api.FeedbackValue{Name: "r", Type: api.FeedbackString, Value: "one"}},
		{"a range after a panic", "{range .a[?(@.x==1)]}{.b}{end}", map[string]any{"a": []any{hiddenField{1}}}, api.FeedbackValue{Name: "r", Type: api.FeedbackString, Value: "one"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := compileFeedback([]api.FeedbackRule{{Name: "r", Path: tc.path}}, deploymentGK)
			if err != nil {
				t.Fatal(err)
			}
			if tc.first != nil {
				c.read(tc.first)
			}
			for i := range 3 {
				if got := c.read(good); !reflect.DeepEqual(got, []api.FeedbackValue{tc.want}) {
					t.Fatalf("read #%d of %q = %+v, want %+v", i, tc.path, got, tc.want)
				}
			}
		})
	}
}
