package reconcile

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
)

// TestProjectFields: a projection holds the recognisable head of the object and, at the same
// place, what each pointer points to (maps at any depth, list elements with the elements not
// selected null, escaped member names), and nothing for a pointer that points at nothing.
func TestProjectFields(t *testing.T) {
	obj := func() map[string]any {
		var o map[string]any
		if err := json.Unmarshal([]byte(`{"apiVersion":"apps/v1","kind":"Deployment",
			"metadata":{"name":"web","namespace":"prod","resourceVersion":"42","labels":{"app":"web"},"annotations":{"a/b":"slash","x~y":"tilde"}},
			"spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"c0","image":"i0"},{"name":"c1","image":"i1"},{"name":"c2","image":"i2"}]}}},
			"status":{"readyReplicas":2,"conditions":[{"type":"Available","status":"True"}]}}`), &o); err != nil {
			t.Fatal(err)
		}
		return o
	}
	const head = `"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"prod"}`
	cases := []struct {
		name     string
		pointers []string
		want     string // the projection as JSON (keys sorted)
		absent   []string
	}{
		{name: "a scalar", pointers: []string{"/spec/replicas"}, want: `{` + head + `,"spec":{"replicas":3}}`},
		{name: "a nested map", pointers: []string{"/metadata/labels"}, want: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"labels":{"app":"web"},"name":"web","namespace":"prod"}}`},
		{name: "two fields of one map", pointers: []string{"/status/readyReplicas", "/spec/replicas"},
			want: `{` + head + `,"spec":{"replicas":3},"status":{"readyReplicas":2}}`},
		{name: "a list element keeps its index", pointers: []string{"/spec/template/spec/containers/1"},
			want: `{` + head + `,"spec":{"template":{"spec":{"containers":[null,{"image":"i1","name":"c1"}]}}}}`},
		{name: "a member of list elements", pointers: []string{"/spec/template/spec/containers/2/image", "/spec/template/spec/containers/0/image"},
			want: `{` + head + `,"spec":{"template":{"spec":{"containers":[{"image":"i0"},null,{"image":"i2"}]}}}}`},
		{name: "the first element", pointers: []string{"/status/conditions/0/status"}, want: `{` + head + `,"status":{"conditions":[{"status":"True"}]}}`},
		{name: "a whole map, then inside it", pointers: []string{"/spec", "/spec/replicas"},
			want: `{` + head + `,"spec":{"replicas":3,"template":{"spec":{"containers":[{"image":"i0","name":"c0"},{"image":"i1","name":"c1"},{"image":"i2","name":"c2"}]}}}}`},
		{name: "inside a map, then the whole map", pointers: []string{"/spec/template/spec/containers/1/name", "/spec/template"},
			want: `{` + head + `,"spec":{"template":{"spec":{"containers":[{"image":"i0","name":"c0"},{"image":"i1","name":"c1"},{"image":"i2","name":"c2"}]}}}}`},
		{name: "escaped names", pointers: []string{"/metadata/annotations/a~1b", "/metadata/annotations/x~0y"},
			want: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{"a/b":"slash","x~y":"tilde"},"name":"web","namespace":"prod"}}`},
		{name: "the head itself", pointers: []string{"/metadata/name", "/kind"}, want: `{` + head + `}`},
		{name: "absent paths are simply absent", pointers: []string{"/spec/paused", "/spec/replicas", "/nope/deeper", "/spec/replicas/x"},
			want: `{` + head + `,"spec":{"replicas":3}}`, absent: []string{"/spec/paused", "/nope/deeper", "/spec/replicas/x"}},
		{name: "list tokens that point at nothing", pointers: []string{"/status/conditions/1", "/status/conditions/-", "/status/conditions/00", "/status/conditions/type"},
			want: `{` + head + `}`, absent: []string{"/status/conditions/1", "/status/conditions/-", "/status/conditions/00", "/status/conditions/type"}},
		{name: "an absent member below a list element adds nothing", pointers: []string{"/spec/template/spec/containers/1/ports"},
			want: `{` + head + `}`, absent: []string{"/spec/template/spec/containers/1/ports"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := obj()
			before, _ := json.Marshal(o)
			got, absent := projectFields(o, tc.pointers)
			raw, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if string(raw) != tc.want {
				t.Fatalf("projection\n %s\nwant\n %s", raw, tc.want)
			}
			if !slices.Equal(absent, tc.absent) {
				t.Fatalf("absent = %q, want %q", absent, tc.absent)
			}
			if after, _ := json.Marshal(o); string(after) != string(before) {
				t.Fatalf("the object was modified: %s", after)
			}
			// The projection shares nothing with the object.
			if spec, ok := got["spec"].(map[string]any); ok {
				spec["replicas"] = 99
				if after, _ := json.Marshal(o); string(after) != string(before) {
					t.Fatal("the projection shares memory with the object")
				}
			}
		})
	}
}

// TestFieldsMessage: a projected mirror's message counts the fields present and names the
// first absent ones; it names no resourceVersion (a change elsewhere must not change it).
func TestFieldsMessage(t *testing.T) {
	tgt := api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "a"}
	cases := []struct {
		fields, absent []string
		want           string
	}{
		{[]string{"/data/a"}, nil, "TARGET mirrored: 1 of 1 spec.fields present"},
		{[]string{"/data/a", "/data/b"}, []string{"/data/b"}, "TARGET mirrored: 1 of 2 spec.fields present; absent on the object: /data/b"},
		{[]string{"/1", "/2", "/3", "/4", "/5", "/6", "/7"}, []string{"/1", "/2", "/3", "/4", "/5", "/6", "/7"},
			"TARGET mirrored: 0 of 7 spec.fields present; absent on the object: /1, /2, /3, /4, /5 and 2 more"},
	}
	for _, tc := range cases {
		got := fieldsMessage(tgt, tc.fields, tc.absent)
		want := strings.Replace(tc.want, "TARGET", tgt.String(), 1)
		if got != want {
			t.Errorf("fieldsMessage(%q, %q) = %q, want %q", tc.fields, tc.absent, got, want)
		}
	}
}

// TestReadFields: a ReadDesire with spec.fields mirrors only those paths (and the object's
// head); a change of another field rewrites no status, a change of a selected one does; a
// change of spec.fields projects again; a Secret's selected values are redacted as the whole
// Secret's would be.
func TestReadFields(t *testing.T) {
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	ctx := context.Background()
	cm := unstructuredObj("v1", "ConfigMap", "default", "a", map[string]any{"data": map[string]any{"a": "1", "b": "1"}})
	secret := unstructuredObj("v1", "Secret", "default", "s", map[string]any{"data": map[string]any{"x": "aHVudGVyMg==", "user": "YWRtaW4=", "other": "b3RoZXI="}})
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{cmGVR: "ConfigMapList", secrets: "SecretList"}, cm, secret)
	mapper := newMapper()
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, meta.RESTScopeNamespace)
	rec := newTestReadReconciler(t, dyn, nil, mapper, SecretRedaction{AllowKeys: []string{"user"}}, nil)
	h := newHarness[*api.ReadDesire](api.KindReadDesire, controller.Reconciler[*api.ReadDesire](rec))
	syncUntil := func(d *api.ReadDesire, want string) *api.ReadDesire {
		t.Helper()
		var st *api.ReadDesire
		waitFor(t, 5*time.Second, "content "+want, func() bool {
			_, st = h.sync(t, d)
			return st != nil && string(st.Status.KubeContent) == want
		}, func() string { return string(st.Status.KubeContent) })
		return st
	}
	update := func(data map[string]any, rv string) {
		t.Helper()
		u := unstructuredObj("v1", "ConfigMap", "default", "a", map[string]any{"data": data})
		u.SetResourceVersion(rv)
		if _, err := dyn.Resource(cmGVR).Namespace("default").Update(ctx, u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	d := readDesire("r", api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "a"})
	d.Spec.Fields = []string{"/data/a", "/data/c"}
	const onlyA = `{"apiVersion":"v1","data":{"a":"1"},"kind":"ConfigMap","metadata":{"name":"a","namespace":"default"}}`
	st := syncUntil(d, onlyA)
	if msg := condition(st, api.ConditionSuccessful).Message; !strings.HasSuffix(msg, "mirrored: 1 of 2 spec.fields present; absent on the object: /data/c") {
		t.Fatalf("message %q", msg)
	}
	gets := countVerb(dyn.Actions(), "get")

	// data.b changes: fetched again, the same content, no status write.
	update(map[string]any{"a": "1", "b": "2"}, "2")
	waitFor(t, 5*time.Second, "the change fetched", func() bool {
		h.sync(t, d)
		return countVerb(dyn.Actions(), "get") > gets
	})
	if _, again := h.sync(t, d); again.Version != st.Version || string(again.Status.KubeContent) != onlyA {
		t.Fatalf("a change of data.b rewrote the status: version %d -> %d, content %s", st.Version, again.Version, again.Status.KubeContent)
	}

	// data.a changes: mirrored.
	update(map[string]any{"a": "2", "b": "2"}, "3")
	st2 := syncUntil(d, `{"apiVersion":"v1","data":{"a":"2"},"kind":"ConfigMap","metadata":{"name":"a","namespace":"default"}}`)
	if st2.Version == st.Version {
		t.Fatal("a change of data.a wrote no status")
	}

	// spec.fields changes: projected again (without a change of the object).
	d.Version++
	d.Spec.Fields = []string{"/data/b"}
	syncUntil(d, `{"apiVersion":"v1","data":{"b":"2"},"kind":"ConfigMap","metadata":{"name":"a","namespace":"default"}}`)
	d.Version++
	d.Spec.Fields = nil
	waitFor(t, 5*time.Second, "the whole object mirrored without spec.fields", func() bool {
		_, st = h.sync(t, d)
		return st != nil && strings.Contains(string(st.Status.KubeContent), `"resourceVersion":"3"`) &&
			strings.Contains(condition(st, api.ConditionSuccessful).Message, "mirrored at resourceVersion 3")
	})

	// A Secret: the selected values redacted as today, the allowlisted one kept.
	s := readDesire("s", api.TargetItem{Version: "v1", Resource: "secrets", Namespace: "default", Name: "s"})
	s.Spec.Fields = []string{"/data/x", "/data/user"}
	syncUntil(s, `{"apiVersion":"v1","data":{"user":"YWRtaW4=","x":"`+api.RedactedValue+`"},"kind":"Secret","metadata":{"name":"s","namespace":"default"}}`)
}
