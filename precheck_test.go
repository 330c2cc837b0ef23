package kubeapplier

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
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
