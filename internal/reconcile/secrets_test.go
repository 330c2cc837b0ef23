package reconcile

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
)

func TestSecretRedaction(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"data": map[string]any{"user": "YWRtaW4=", "password": "aHVudGVyMg=="}, "stringData": map[string]any{"token": "t"}}}
	u.SetAnnotations(map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"data":{"password":"aHVudGVyMg=="}}`, "keep": "me"})
	SecretRedaction{AllowKeys: []string{"user"}}.redact(u)
	data := u.Object["data"].(map[string]any)
	if data["user"] != "YWRtaW4=" || data["password"] != RedactedValue || u.Object["stringData"].(map[string]any)["token"] != RedactedValue {
		t.Fatalf("redacted = %v / %v", data, u.Object["stringData"])
	}
	if anns := u.GetAnnotations(); anns["keep"] != "me" || anns["kubectl.kubernetes.io/last-applied-configuration"] != "" {
		t.Fatalf("annotations = %v", anns)
	}
	v := &unstructured.Unstructured{Object: map[string]any{"data": map[string]any{"password": "aHVudGVyMg=="}}}
	SecretRedaction{Disabled: true}.redact(v)
	if v.Object["data"].(map[string]any)["password"] != "aHVudGVyMg==" {
		t.Fatal("redaction not disabled")
	}
}

// TestSecretRedactionAnyShape: a ReadDesire's mirror redacts data and stringData whatever
// their shape (a map's values at any depth are replaced whole; anything else entirely).
func TestSecretRedactionAnyShape(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"data":       []any{"Zq7x-list"},
		"stringData": map[string]any{"k": map[string]any{"inner": "Zq7x-nested"}, "n": int64(987654321)}}}
	SecretRedaction{}.redact(u)
	b, err := json.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "Zq7x") || strings.Contains(string(b), "987654321") || strings.Contains(string(b), "inner") {
		t.Fatalf("mirror reveals a value: %s", b)
	}
}

// TestUndecodableNonSecretKeepsItsMessage: content that is no Secret keeps its message as the
// decoder wrote it, undecodable or not.
func TestUndecodableNonSecretKeepsItsMessage(t *testing.T) {
	digits := strings.Repeat("1234567890", 10)
	cases := []struct{ name, content, keep string }{
		{"ConfigMap with a number beyond float64", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"default"},"data":{"k":` + digits + `e999}}`, digits[:40]},
		{"Secret of another group", `{"apiVersion":"example.com/v1","kind":"Secret","metadata":{"name":"c","namespace":"default"},"stringData":{"k":` + digits + `e999}}`, digits[:40]},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msg := "cannot apply " + tc.content
			v := scrubVerdict(applyDesire("c", tc.content), controller.Refused(api.ReasonPreCheckFailed, msg))
			if v.Message() != msg || !strings.Contains(v.Message(), tc.keep) {
				t.Fatalf("message %q, want it unchanged", v.Message())
			}
		})
	}
}
