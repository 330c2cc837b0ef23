package kubeapplier

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestSecretValuesNeverReachAStatus: an apiserver error about a Secret an ApplyDesire carries
// quotes offending values (as kube-apiserver does for a stringData value of the wrong type);
// the condition message holds none of the manifest's values, in any of their forms.
func TestSecretValuesNeverReachAStatus(t *testing.T) {
	long := "hunter2-topsecret"
	b64 := base64.StdEncoding.EncodeToString([]byte(long))
	cases := []struct {
		name     string
		manifest string
		applyErr error
		secrets  []string // must not appear in the message
		keep     string   // must still appear (the message stays useful)
	}{
		{"data value echoed base64 and decoded", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"default"},"data":{"password":"` + b64 + `"}}`,
			apierrors.NewInternalError(errors.New("value " + b64 + " decodes to " + long + " which is refused")), []string{b64, long}, "which is refused"},
		{"stringData number quoted by the typed patch error", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"default"},"stringData":{"pin":12}}`,
			errors.New(`failed to create typed patch object (default/s; /v1, Kind=Secret): .stringData.pin: expected string, got &value.valueUnstructured{Value:12}`),
			[]string{"Value:12}"}, "expected string"},
		{"short value as a word", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"default"},"stringData":{"k":"ab1"}}`,
			apierrors.NewBadRequest(`invalid value "ab1" for key k`), []string{`"ab1"`}, "invalid value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kube := newFakeKube()
			kube.errs["apply"] = tc.applyErr
			h := newHarness[*ApplyDesire](KindApplyDesire, NewApplyReconciler(kube, withSecrets(newMapper()), "fm"))
			_, st := h.sync(t, applyDesire("s", tc.manifest))
			for _, c := range st.Status.Conditions {
				for _, secret := range tc.secrets {
					if strings.Contains(c.Message, secret) {
						t.Fatalf("%s message reveals %q: %s", c.Type, secret, c.Message)
					}
				}
			}
			if msg := condition(st, ConditionSuccessful).Message; !strings.Contains(msg, tc.keep) || !strings.Contains(msg, "[redacted]") {
				t.Fatalf("message %q lost its sense or was not scrubbed", msg)
			}
		})
	}
}

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
