package reconcile

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

func TestParseKubeContent(t *testing.T) {
	cases := []struct {
		name    string
		content string
		wantErr string // "" = valid
	}{
		{"configmap", cmJSON("c1"), ""},
		{"empty", "", "kubeContent is empty"},
		{"not JSON", "{nope", "not a JSON object"},
		{"JSON array", `[1,2]`, "not a JSON object"},
		{"JSON string", `"x"`, "not a JSON object"},
		{"null", `null`, "is null"},
		{"no kind", `{"apiVersion":"v1","metadata":{"name":"a"}}`, "missing kind"},
		{"no apiVersion nor name", `{"kind":"ConfigMap","metadata":{}}`, "missing apiVersion, metadata.name"},
		{"bad apiVersion", `{"apiVersion":"a/b/c","kind":"X","metadata":{"name":"a"}}`, `apiVersion "a/b/c" is invalid`},
		{"generateName only", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"cm-"}}`, `generateName "cm-" but no name`},
		{"list kind", `{"apiVersion":"v1","kind":"ConfigMapList","items":[]}`, "is a ConfigMapList"},
		{"list kind with metadata name", `{"apiVersion":"v1","kind":"List","metadata":{"name":"x"},"items":[{"kind":"ConfigMap"}]}`, "is a List"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var raw json.RawMessage
			if tc.content != "" {
				raw = json.RawMessage(tc.content)
			}
			obj, err := ParseKubeContent(raw)
			if tc.wantErr == "" {
				if err != nil || obj.GetName() != "c1" {
					t.Fatalf("obj=%v err=%v", obj, err)
				}
				return
			}
			var pc *PreCheckError
			if !errors.As(err, &pc) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want PreCheckError containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestParseKubeContentStripsServerFields(t *testing.T) {
	raw := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"n","resourceVersion":"12","uid":"u",
	"managedFields":[{"manager":"x"}],"creationTimestamp":"2020-01-01T00:00:00Z","generation":3,"labels":{"a":"b"}},"status":{"x":1},"data":{"k":"v"}}`
	obj, err := ParseKubeContent(json.RawMessage([]byte(raw)))
	if err != nil {
		t.Fatal(err)
	}
	md := obj.Object["metadata"].(map[string]any)
	for _, f := range []string{"resourceVersion", "uid", "managedFields", "creationTimestamp", "generation"} {
		if _, ok := md[f]; ok {
			t.Errorf("metadata.%s kept", f)
		}
	}
	if _, ok := obj.Object["status"]; ok {
		t.Error("status kept")
	}
	if obj.GetLabels()["a"] != "b" || obj.Object["data"].(map[string]any)["k"] != "v" {
		t.Errorf("user fields lost: %v", obj.Object)
	}
}

// objectNames is the reference parseHead must agree with: the pre-checks read from the whole
// decoded object through its accessors, as ParseKubeContent read them before parseHead.
func objectNames(raw []byte) (h contentHead, refused bool) {
	var m map[string]any
	if err := utiljson.Unmarshal(raw, &m); err != nil || m == nil {
		return contentHead{}, true
	}
	obj := &unstructured.Unstructured{Object: m}
	gv, err := schema.ParseGroupVersion(obj.GetAPIVersion())
	_, hasItems := m["items"]
	kind := obj.GetKind()
	if obj.GetAPIVersion() == "" || kind == "" || err != nil || obj.GetName() == "" ||
		obj.IsList() || kind == "List" || (strings.HasSuffix(kind, "List") && hasItems) {
		return contentHead{}, true
	}
	return contentHead{gvk: gv.WithKind(kind), namespace: obj.GetNamespace(), name: obj.GetName()}, false
}

// TestParseHeadAgreesWithTheObject: over every combination of the fields the pre-checks read
// (each absent, null, of another JSON type, or a value that passes or fails), of the key's
// case, and of repeated keys, ParseKubeContent refuses exactly what the whole object's
// accessors refuse, and parseHead names the same object otherwise.
func TestParseHeadAgreesWithTheObject(t *testing.T) {
	apiVersions := []string{``, `"apiVersion":"v1",`, `"apiVersion":"apps/v1",`, `"apiVersion":"a/b/c",`, `"apiVersion":"",`,
		`"apiVersion":5,`, `"apiVersion":null,`, `"APIVersion":"v1",`}
	kinds := []string{``, `"kind":"ConfigMap",`, `"kind":"List",`, `"kind":"AllowList",`, `"kind":"",`, `"kind":7,`,
		`"kind":{"a":1},`, `"Kind":"ConfigMap",`, `"kin\u0064":"Namespace",`}
	metadatas := []string{``, `"metadata":{"name":"a"},`, `"metadata":{"name":"a","namespace":"ns"},`,
		`"metadata":{"generateName":"g-"},`, `"metadata":{"name":5,"namespace":["x"]},`, `"metadata":"a",`,
		`"metadata":null,`, `"metadata":{"Name":"a"},`, `"metadata":{"name":"","generateName":7},`,
		`"metadata":{"name":"a","name":"b","namespace":null},`}
	items := []string{``, `"items":[],`, `"items":null,`, `"items":{},`, `"items":"x",`}
	check := func(raw []byte) {
		t.Helper()
		want, wantRefused := objectNames(raw)
		_, err := ParseKubeContent(raw)
		var pc *PreCheckError
		if (err != nil) != wantRefused || (err != nil && !errors.As(err, &pc)) {
			t.Errorf("%s: ParseKubeContent err = %v; the object says refused %v", raw, err, wantRefused)
			return
		}
		if got, err := parseHead(raw); !wantRefused && (err != nil || got != want) {
			t.Errorf("%s: parseHead = %+v, %v; the object says %+v", raw, got, err, want)
		}
	}
	n := 0
	for _, a := range apiVersions {
		for _, k := range kinds {
			for _, m := range metadatas {
				for _, i := range items {
					check([]byte(" {" + a + k + m + i + `"data":{"x":"y"}}`))
					n++
				}
			}
		}
	}
	// Repeated keys: the last counts, whole (a later metadata is not merged into an earlier one).
	for _, k := range []string{`"kind":"ConfigMap",`, `"kind":"Namespace",`} {
		for _, m1 := range metadatas {
			for _, m2 := range metadatas {
				check([]byte(`{"apiVersion":"v1",` + k + m1 + `"data":{},` + m2 + `"kind":"ConfigMap"}`))
				check([]byte(`{"apiVersion":"v1",` + k + m1 + m2 + `"apiVersion":"apps/v1"}`))
				n += 2
			}
		}
	}
	// What the head does not read still counts: a number beyond float64.
	check([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"n":1e400}}`))
	for _, raw := range []string{`[1]`, `"x"`, `5`, `true`, `null`, ` `, `{"kind":`, `{}`} {
		if _, err := parseHead([]byte(raw)); err == nil {
			t.Errorf("%q: parseHead accepted it", raw)
		}
	}
	t.Logf("%d contents compared", n)
}

// BenchmarkParseHead compares what a verifying reconcile reads of a 1 KiB ConfigMap (its head)
// with what an apply decodes (the whole object).
func BenchmarkParseHead(b *testing.B) {
	data := map[string]string{}
	for i := range 24 {
		data[fmt.Sprintf("key-%02d", i)] = strings.Repeat("v", 24)
	}
	raw, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "cm", "namespace": "bench", "labels": map[string]string{"app": "bench"}}, "data": data})
	b.Run(fmt.Sprintf("head/%dB", len(raw)), func(b *testing.B) {
		for b.Loop() {
			if _, err := parseHead(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run(fmt.Sprintf("object/%dB", len(raw)), func(b *testing.B) {
		for b.Loop() {
			if _, err := ParseKubeContent(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}
