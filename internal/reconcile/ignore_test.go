package reconcile

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-applier-aws/kubeapplier/api"
)

const ignoreDeploy = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default","labels":{"app":"web","tier":"x"}},
"spec":{"replicas":2,"paused":false,"template":{"spec":{"containers":[{"name":"app","image":"nginx:1","env":[{"name":"A","value":"1"}]},{"name":"side","image":"busybox"}]}}}}`

func mustObj(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(s), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// withManagers returns obj's copy with managedFields entries: manager -> fieldsV1 JSON.
func withManagers(t *testing.T, obj *unstructured.Unstructured, entries ...[2]string) *unstructured.Unstructured {
	t.Helper()
	live := obj.DeepCopy()
	var mf []metav1.ManagedFieldsEntry
	for _, e := range entries {
		mf = append(mf, metav1.ManagedFieldsEntry{Manager: e[0], Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(e[1])}})
	}
	live.SetManagedFields(mf)
	return live
}

// valueAt returns the value at tokens in doc (list tokens as indexes).
func valueAt(doc map[string]any, tokens []string) (any, bool) {
	parent, key, idx, err := locate(doc, tokens)
	switch p := parent.(type) {
	case map[string]any:
		return p[key], err == nil
	case []any:
		return p[idx], err == nil
	}
	return nil, false
}

func pointerAt(t *testing.T, obj *unstructured.Unstructured, p string) (any, bool) {
	t.Helper()
	return valueAt(obj.Object, api.SplitJSONPointer(p))
}

// TestLeaveOutOf: which fields an apply leaves out, per condition, for a desire change or a
// repair, and what the applier alone holds (kept at the object's value).
func TestLeaveOutOf(t *testing.T) {
	const (
		ours       = `{"f:metadata":{"f:labels":{"f:app":{},"f:tier":{}}},"f:spec":{"f:replicas":{},"f:paused":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:name":{},"f:image":{},"f:env":{}},"k:{\"name\":\"side\"}":{".":{},"f:name":{},"f:image":{}}}}}}}`
		oursNoRepl = `{"f:spec":{"f:paused":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:name":{},"f:image":{}}}}}}}`
		scaler     = `{"f:spec":{"f:replicas":{}}}`
		imager     = `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{"f:image":{}}}}}}}`
	)
	liveObj := func(t *testing.T) *unstructured.Unstructured {
		u := mustObj(t, ignoreDeploy)
		_ = unstructured.SetNestedField(u.Object, int64(5), "spec", "replicas")
		return u
	}
	present := func(p ...string) []api.IgnoreField {
		return []api.IgnoreField{{Condition: api.IgnoreOnTargetPresent, JSONPointers: p}}
	}
	onChange := func(p ...string) []api.IgnoreField {
		return []api.IgnoreField{{Condition: api.IgnoreOnTargetChange, JSONPointers: p}}
	}
	cases := []struct {
		name    string
		spec    api.ApplyDesireSpec
		live    func(t *testing.T) *unstructured.Unstructured // nil: absent
		changed bool
		gone    []string       // pointers absent from the apply object
		kept    map[string]any // pointer -> value in the apply object
		note    string
	}{
		{name: "absent object: everything applied", spec: api.ApplyDesireSpec{IgnoreFields: present("/spec/replicas"), YieldToManagers: []string{"hpa"}},
			kept: map[string]any{"/spec/replicas": int64(2)}},
		{name: "OnTargetPresent, another manager holds it: dropped", spec: api.ApplyDesireSpec{IgnoreFields: present("/spec/replicas")},
			live: func(t *testing.T) *unstructured.Unstructured {
				return withManagers(t, liveObj(t), [2]string{"kaa", oursNoRepl}, [2]string{"scaler", scaler})
			},
			changed: true, gone: []string{"/spec/replicas"}, note: "; ignored /spec/replicas (OnTargetPresent)"},
		{name: "OnTargetPresent, the applier alone holds it: kept at the object's value", spec: api.ApplyDesireSpec{IgnoreFields: present("/spec/replicas")},
			live: func(t *testing.T) *unstructured.Unstructured {
				return withManagers(t, liveObj(t), [2]string{"kaa", ours})
			},
			changed: true, kept: map[string]any{"/spec/replicas": int64(5)}, note: "; ignored /spec/replicas (OnTargetPresent)"},
		{name: "OnTargetPresent, shared with another manager: dropped", spec: api.ApplyDesireSpec{IgnoreFields: present("/spec/replicas")},
			live: func(t *testing.T) *unstructured.Unstructured {
				return withManagers(t, liveObj(t), [2]string{"kaa", ours}, [2]string{"scaler", scaler})
			},
			gone: []string{"/spec/replicas"}, note: "; ignored /spec/replicas (OnTargetPresent)"},
		{name: "OnTargetChange, desire changed: applied", spec: api.ApplyDesireSpec{IgnoreFields: onChange("/spec/replicas")},
			live: func(t *testing.T) *unstructured.Unstructured {
				return withManagers(t, liveObj(t), [2]string{"kaa", oursNoRepl}, [2]string{"scaler", scaler})
			},
			changed: true, kept: map[string]any{"/spec/replicas": int64(2)}},
		{name: "OnTargetChange, object drifted: dropped", spec: api.ApplyDesireSpec{IgnoreFields: onChange("/spec/replicas")},
			live: func(t *testing.T) *unstructured.Unstructured {
				return withManagers(t, liveObj(t), [2]string{"kaa", oursNoRepl}, [2]string{"scaler", scaler})
			},
			gone: []string{"/spec/replicas"}, note: "; ignored /spec/replicas (OnTargetChange)"},
		{name: "pointer absent from kubeContent: nothing to say", spec: api.ApplyDesireSpec{IgnoreFields: present("/spec/minReadySeconds", "/status/x")},
			live: func(t *testing.T) *unstructured.Unstructured {
				return withManagers(t, liveObj(t), [2]string{"scaler", scaler})
			},
			kept: map[string]any{"/spec/replicas": int64(2)}},
		{name: "list index: the element's field dropped", spec: api.ApplyDesireSpec{IgnoreFields: present("/spec/template/spec/containers/0/image")},
			live: func(t *testing.T) *unstructured.Unstructured {
				return withManagers(t, liveObj(t), [2]string{"kaa", oursNoRepl}, [2]string{"imager", imager})
			},
			gone: []string{"/spec/template/spec/containers/0/image"},
			kept: map[string]any{"/spec/template/spec/containers/0/name": "app", "/spec/template/spec/containers/1/image": "busybox"},
			note: "; ignored /spec/template/spec/containers/0/image (OnTargetPresent)"},
		{name: "list element found in the live list by its key", spec: api.ApplyDesireSpec{IgnoreFields: present("/spec/template/spec/containers/0/image")},
			live: func(t *testing.T) *unstructured.Unstructured {
				u := liveObj(t)
				_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"name": "side", "image": "busybox"},
					map[string]any{"name": "app", "image": "nginx:2"}}, "spec", "template", "spec", "containers")
				return withManagers(t, u, [2]string{"kaa", ours})
			},
			kept: map[string]any{"/spec/template/spec/containers/0/image": "nginx:2", "/spec/template/spec/containers/1/image": "busybox"},
			note: "; ignored /spec/template/spec/containers/0/image (OnTargetPresent)"},
		{name: "a label", spec: api.ApplyDesireSpec{IgnoreFields: present("/metadata/labels/tier")},
			live: func(t *testing.T) *unstructured.Unstructured {
				return withManagers(t, liveObj(t), [2]string{"other", `{"f:metadata":{"f:labels":{"f:tier":{}}}}`})
			},
			gone: []string{"/metadata/labels/tier"}, kept: map[string]any{"/metadata/labels/app": "web", "/metadata/name": "web"},
			note: "; ignored /metadata/labels/tier (OnTargetPresent)"},
		{name: "yield: the manager's fields dropped, keys kept", spec: api.ApplyDesireSpec{YieldToManagers: []string{"hpa-sim", "imager", "absent"}},
			live: func(t *testing.T) *unstructured.Unstructured {
				return withManagers(t, liveObj(t), [2]string{"kaa", ours}, [2]string{"hpa-sim", scaler}, [2]string{"imager", imager})
			},
			gone: []string{"/spec/replicas", "/spec/template/spec/containers/0/image"},
			kept: map[string]any{"/spec/template/spec/containers/0/name": "app", "/spec/paused": false, "/spec/template/spec/containers/1/image": "busybox"},
			note: `; yielded to managers "hpa-sim", "imager"`},
		{name: "yield never drops name, namespace, apiVersion, kind", spec: api.ApplyDesireSpec{YieldToManagers: []string{"greedy"}},
			live: func(t *testing.T) *unstructured.Unstructured {
				return withManagers(t, liveObj(t), [2]string{"greedy", `{"f:apiVersion":{},"f:kind":{},"f:metadata":{"f:name":{},"f:namespace":{},"f:labels":{"f:tier":{}}}}`})
			},
			gone: []string{"/metadata/labels/tier"},
			kept: map[string]any{"/metadata/name": "web", "/metadata/namespace": "default", "/kind": "Deployment", "/apiVersion": "apps/v1"},
			note: `; yielded to managers "greedy"`},
		{name: "ignored and yielded", spec: api.ApplyDesireSpec{IgnoreFields: present("/spec/paused"), YieldToManagers: []string{"hpa-sim"}},
			live: func(t *testing.T) *unstructured.Unstructured {
				return withManagers(t, liveObj(t), [2]string{"hpa-sim", scaler}, [2]string{"x", `{"f:spec":{"f:paused":{}}}`})
			},
			gone: []string{"/spec/replicas", "/spec/paused"}, note: `; ignored /spec/paused (OnTargetPresent); yielded to managers "hpa-sim"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := mustObj(t, ignoreDeploy)
			var live *unstructured.Unstructured
			if tc.live != nil {
				live = tc.live(t)
			}
			out, err := leaveOutOf(&tc.spec, obj, live, "kaa", tc.changed)
			if err != nil {
				t.Fatal(err)
			}
			if out.note() != tc.note {
				t.Errorf("note = %q, want %q", out.note(), tc.note)
			}
			for _, p := range tc.gone {
				if v, ok := pointerAt(t, obj, p); ok {
					t.Errorf("%s = %v, want it left out", p, v)
				}
			}
			for p, want := range tc.kept {
				if v, ok := pointerAt(t, obj, p); !ok || !sameJSON(v, want) {
					t.Errorf("%s = %v (%v), want %v", p, v, ok, want)
				}
			}
		})
	}
}

func TestLeaveOutOfListToken(t *testing.T) {
	spec := api.ApplyDesireSpec{IgnoreFields: []api.IgnoreField{{Condition: api.IgnoreOnTargetPresent, JSONPointers: []string{"/spec/template/spec/containers/app/image"}}}}
	obj := mustObj(t, ignoreDeploy)
	_, err := leaveOutOf(&spec, obj, withManagers(t, obj), "kaa", false)
	if err == nil || !strings.Contains(err.Error(), `steps into a list with "app", which is not an index`) {
		t.Fatalf("err = %v", err)
	}
	if v := leaveOutVerdict(err); v.Reason() != api.ReasonPreCheckFailed {
		t.Fatalf("verdict reason %s", v.Reason())
	}
}

func TestCheckIgnoreOptions(t *testing.T) {
	cases := []struct {
		pointer, manager, want string
	}{
		{pointer: "/spec/replicas"},
		{pointer: "/metadata/labels/a"},
		{pointer: "/metadata/annotations"},
		{pointer: "/apiVersion", want: `"/apiVersion" points at apiVersion`},
		{pointer: "/kind", want: `points at kind`},
		{pointer: "/metadata", want: `points at the whole of metadata`},
		{pointer: "/metadata/name", want: `points at metadata/name`},
		{pointer: "/metadata/namespace", want: `spec.ignoreFields[0].jsonPointers[1] "/metadata/namespace" points at metadata/namespace`},
		{pointer: "/", want: `points at the whole object`},
		{pointer: "/spec/replicas", manager: "kaa", want: `spec.yieldToManagers[0] "kaa" is the applier's own field manager`},
	}
	for _, tc := range cases {
		s := api.ApplyDesireSpec{IgnoreFields: []api.IgnoreField{{Condition: api.IgnoreOnTargetPresent, JSONPointers: []string{"/data", tc.pointer}}}}
		if tc.manager != "" {
			s.YieldToManagers = []string{tc.manager}
		}
		err := checkIgnoreOptions(&s, "kaa")
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: err = %v, want %q", tc.pointer, err, tc.want)
		}
	}
}

// recordingKube records the objects applied.
type recordingKube struct {
	*fakeKube
	applied []*unstructured.Unstructured
}

func (k *recordingKube) Apply(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, fm string) (*unstructured.Unstructured, error) {
	k.applied = append(k.applied, obj.DeepCopy())
	live, err := k.fakeKube.Apply(ctx, gvr, obj, fm)
	if err == nil {
		// What server-side apply would record: the applier's entry, and another manager's
		// replicas once the fake's object says so.
		k.mu.Lock()
		stored := k.objects[objKey(gvr, obj.GetNamespace(), obj.GetName())]
		if stored.GetManagedFields() == nil {
			stored.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "scaler", Operation: metav1.ManagedFieldsOperationUpdate,
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{"f:replicas":{}}}`)}}})
		}
		k.mu.Unlock()
	}
	return live, err
}

// TestApplyIgnoreFields: the reconciler's verdicts with ignoreFields: refused pointers, the
// message naming what was left out, OnTargetChange applied for a new spec and left out for an
// apply of a spec the last status says was applied.
func TestApplyIgnoreFields(t *testing.T) {
	content := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1","namespace":"default"},"data":{"replicas":"2","a":"b"}}`
	desire := func(cond string, p ...string) *api.ApplyDesire {
		d := applyDesire("a", content)
		d.CreateTime = testTime
		d.Spec.IgnoreFields = []api.IgnoreField{{Condition: cond, JSONPointers: p}}
		return d
	}
	t.Run("unusable pointer refused", func(t *testing.T) {
		kube := &recordingKube{fakeKube: newFakeKube()}
		r := NewApply(ApplyConfig{Kube: kube, Mapper: newMapper(), FieldManager: "kaa"})
		v := r.Reconcile(context.Background(), desire(api.IgnoreOnTargetPresent, "/metadata/name"))
		if v.Reason() != api.ReasonPreCheckFailed || !strings.Contains(v.Message(), `"/metadata/name" points at metadata/name`) || len(kube.applied) != 0 {
			t.Fatalf("verdict %s %q, applies %d", v.Reason(), v.Message(), len(kube.applied))
		}
	})
	t.Run("list token that is no index refused before the object exists", func(t *testing.T) {
		kube := &recordingKube{fakeKube: newFakeKube()}
		r := NewApply(ApplyConfig{Kube: kube, Mapper: newMapper(), FieldManager: "kaa"})
		d := applyDesire("a", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1","namespace":"default","finalizers":["x/y"]}}`)
		d.Spec.IgnoreFields = []api.IgnoreField{{Condition: api.IgnoreOnTargetPresent, JSONPointers: []string{"/metadata/finalizers/first"}}}
		v := r.Reconcile(context.Background(), d)
		if v.Reason() != api.ReasonPreCheckFailed || !strings.Contains(v.Message(), `"/metadata/finalizers/first": steps into a list with "first"`) || len(kube.applied) != 0 {
			t.Fatalf("verdict %s %q, applies %d", v.Reason(), v.Message(), len(kube.applied))
		}
	})
	for _, tc := range []struct {
		name, cond   string
		appliedSpec  bool // the last status says this spec was applied
		wantReplicas bool
		wantNote     string
	}{
		{name: "OnTargetPresent", cond: api.IgnoreOnTargetPresent, wantNote: "; ignored /data/replicas (OnTargetPresent)"},
		{name: "OnTargetChange, new spec", cond: api.IgnoreOnTargetChange, wantReplicas: true},
		{name: "OnTargetChange, spec applied before", cond: api.IgnoreOnTargetChange, appliedSpec: true, wantNote: "; ignored /data/replicas (OnTargetChange)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kube := &recordingKube{fakeKube: newFakeKube()}
			r := NewApply(ApplyConfig{Kube: kube, Mapper: newMapper(), FieldManager: "kaa"})
			d := desire(tc.cond, "/data/replicas", "/data/absent")
			first := r.Reconcile(context.Background(), d)
			if first.Message() != "applied ConfigMap default/c1" || !hasField(kube.applied[0], "data", "replicas") {
				t.Fatalf("first apply: %q, applied %v", first.Message(), kube.applied[0].Object)
			}
			r.Last = func(context.Context, string) func() *api.ApplyDesire {
				return func() *api.ApplyDesire {
					if !tc.appliedSpec {
						return nil
					}
					last := &api.ApplyDesire{}
					last.Status.ObservedDesireCreateTime = testTime.Format(time.RFC3339Nano)
					last.Status.ObservedDesireUpdateTime = testTime.Format(time.RFC3339Nano)
					last.Status.SetCondition(api.Condition{Type: api.ConditionSuccessful, Status: api.ConditionTrue, Reason: api.ReasonNoErrors, ObservedGeneration: d.Version}, testTime)
					last.Status.AppliedUID = "uid-1" // a status of an apply (target.AppliedBefore)
					return last
				}
			}
			v := r.Reconcile(context.Background(), d)
			want := "applied ConfigMap default/c1" + tc.wantNote
			if v.Message() != want || hasField(kube.applied[1], "data", "replicas") != tc.wantReplicas || !hasField(kube.applied[1], "data", "a") {
				t.Fatalf("second apply: %q (want %q), applied %v", v.Message(), want, kube.applied[1].Object)
			}
		})
	}
}

func hasField(u *unstructured.Unstructured, path ...string) bool {
	_, ok, _ := unstructured.NestedFieldNoCopy(u.Object, path...)
	return ok
}

// TestWroteNothing: an apply that left the applier's entry, the uid and the generation as the
// read before it found them wrote nothing, whatever the resourceVersion says.
func TestWroteNothing(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	obj := func(uid string, gen int64, rv string, fields string, when metav1.Time) *unstructured.Unstructured {
		u := mustObj(t, ignoreDeploy)
		u.SetUID(types.UID(uid))
		u.SetGeneration(gen)
		u.SetResourceVersion(rv)
		u.SetManagedFields([]metav1.ManagedFieldsEntry{
			{Manager: "kaa", Operation: metav1.ManagedFieldsOperationApply, Time: &when, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}},
			{Manager: "scaler", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "scale", Time: &when, FieldsType: "FieldsV1",
				FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:replicas":{}}}`)}},
		})
		return u
	}
	before := obj("u1", 3, "10", `{"f:spec":{"f:paused":{}}}`, at)
	cases := []struct {
		name  string
		after *unstructured.Unstructured
		want  bool
	}{
		{"no-op, status updated meanwhile", obj("u1", 3, "11", `{"f:spec":{"f:paused":{}}}`, at), true},
		{"fields taken back", obj("u1", 3, "11", `{"f:spec":{"f:paused":{},"f:replicas":{}}}`, at), false},
		{"a value changed", obj("u1", 4, "11", `{"f:spec":{"f:paused":{}}}`, at), false},
		{"our entry rewritten", obj("u1", 3, "11", `{"f:spec":{"f:paused":{}}}`, metav1.NewTime(at.Add(time.Second))), false},
		{"another object", obj("u2", 3, "11", `{"f:spec":{"f:paused":{}}}`, at), false},
	}
	for _, tc := range cases {
		if got := (leftOut{before: before}).wroteNothing(tc.after, "kaa"); got != tc.want {
			t.Errorf("%s: wroteNothing = %v, want %v", tc.name, got, tc.want)
		}
	}
	if (leftOut{}).wroteNothing(before, "kaa") {
		t.Error("nothing read before: wroteNothing")
	}
}

// TestLeaveOutOfSeveralListPointers: the pointers of one desire all index kubeContent's lists
// as written: a list element left out before does not shift the elements the next pointers
// name (else the wrong element's field would be left out, and the named one sent).
func TestLeaveOutOfSeveralListPointers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pointers []string
		want     string // the containers list applied, as JSON
	}{
		{"two elements", []string{"/spec/template/spec/containers/0", "/spec/template/spec/containers/1"}, `[]`},
		{"an element, then a field of the next", []string{"/spec/template/spec/containers/0", "/spec/template/spec/containers/1/image"},
			`[{"name":"side"}]`},
		{"in reverse order", []string{"/spec/template/spec/containers/1/image", "/spec/template/spec/containers/0"}, `[{"name":"side"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := api.ApplyDesireSpec{IgnoreFields: []api.IgnoreField{{Condition: api.IgnoreOnTargetPresent, JSONPointers: tc.pointers}}}
			obj := mustObj(t, ignoreDeploy)
			live := withManagers(t, mustObj(t, ignoreDeploy), [2]string{"other",
				`{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{}},"k:{\"name\":\"side\"}":{".":{},"f:image":{}}}}}}}`})
			if _, err := leaveOutOf(&spec, obj, live, "kaa", false); err != nil {
				t.Fatal(err)
			}
			got, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
			var want []any
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			if !sameJSON(got, want) {
				t.Fatalf("containers applied %v, want %s", got, tc.want)
			}
		})
	}
}

// TestLeaveOutOfAtomicListElement: an element of an atomic list (held whole, e.g. a
// container's args) cannot be left out alone: the apply would send the list without it, a
// value nobody asked for, which a forced apply writes. The whole list is left out instead
// (kept at the object's value when the applier alone holds it).
func TestLeaveOutOfAtomicListElement(t *testing.T) {
	const deploy = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},
"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1","args":["a","b"]}]}}}}`
	const args = `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:name":{},"f:args":{}}}}}}}`
	for _, tc := range []struct {
		name     string
		managers [][2]string
		liveArgs []any
		want     []any // nil: args left out
	}{
		{"held by another manager: the list left out", [][2]string{{"other", args}}, []any{"x", "y", "z"}, nil},
		{"held by the applier alone: the object's list", [][2]string{{"kaa", args}}, []any{"x", "y", "z"}, []any{"x", "y", "z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := api.ApplyDesireSpec{IgnoreFields: []api.IgnoreField{{Condition: api.IgnoreOnTargetPresent,
				JSONPointers: []string{"/spec/template/spec/containers/0/args/1"}}}}
			obj := mustObj(t, deploy)
			live := mustObj(t, deploy)
			c, _, _ := unstructured.NestedSlice(live.Object, "spec", "template", "spec", "containers")
			c[0].(map[string]any)["args"] = tc.liveArgs
			_ = unstructured.SetNestedSlice(live.Object, c, "spec", "template", "spec", "containers")
			live = withManagers(t, live, tc.managers...)
			if _, err := leaveOutOf(&spec, obj, live, "kaa", false); err != nil {
				t.Fatal(err)
			}
			got, ok := pointerAt(t, obj, "/spec/template/spec/containers/0/args")
			if tc.want == nil && ok {
				t.Fatalf("args applied %v, want them left out", got)
			}
			if tc.want != nil && !sameJSON(got, tc.want) {
				t.Fatalf("args applied %v, want %v", got, tc.want)
			}
		})
	}
}
