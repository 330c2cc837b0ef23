package reconcile

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	if data["user"] != "YWRtaW4=" || data["password"] != api.RedactedValue || u.Object["stringData"].(map[string]any)["token"] != api.RedactedValue {
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
		{"a leaf of JSON inside a base64 data value (a dockerconfigjson) quoted alone", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"default"},"data":{".dockerconfigjson":"` +
			base64.StdEncoding.EncodeToString([]byte(`{"auths":{"r.example":{"auth":"Zq7x-registry-token"}}}`)) + `"}}`,
			apierrors.NewBadRequest(`auth "Zq7x-registry-token" for r.example is refused`), []string{"Zq7x"}, "is refused"},
		{"stringData value quoted base64-encoded, as data", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"default"},"stringData":{"token":"Zq7x-string-data"}}`,
			apierrors.NewBadRequest(`data[token]: invalid value "` + base64.StdEncoding.EncodeToString([]byte("Zq7x-string-data")) + `" refused`),
			[]string{base64.StdEncoding.EncodeToString([]byte("Zq7x-string-data"))}, "refused"},
		{"short value as a word", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"default"},"stringData":{"k":"ab1"}}`,
			apierrors.NewBadRequest(`invalid value "ab1" for key k`), []string{`"ab1"`}, "invalid value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kube := newFakeKube()
			kube.errs["apply"] = tc.applyErr
			h := newHarness[*api.ApplyDesire](api.KindApplyDesire, NewApply(ApplyConfig{Kube: kube, Mapper: withSecrets(newMapper()), FieldManager: "fm"}))
			_, st := h.sync(t, applyDesire("s", tc.manifest))
			for _, c := range st.Status.Conditions {
				for _, secret := range tc.secrets {
					if strings.Contains(c.Message, secret) {
						t.Fatalf("%s message reveals %q: %s", c.Type, secret, c.Message)
					}
				}
			}
			if msg := condition(st, api.ConditionSuccessful).Message; !strings.Contains(msg, tc.keep) || !strings.Contains(msg, "[redacted]") {
				t.Fatalf("message %q lost its sense or was not scrubbed", msg)
			}
		})
	}
}

// TestSecretValuesRedactedAsAClass: no value of a Secret's data or stringData, at any depth
// and of any type, reaches a condition message in any rendering an error may give it, from
// the default reconciler or from a wrapper's verdict. Every string leaf carries the marker
// "Zq7x"; numbers and booleans are checked in their own spellings.
func TestSecretValuesRedactedAsAClass(t *testing.T) {
	shapes := []struct {
		name  string
		value any
		leaks []string // none may appear in the message
	}{
		{"plain string", "Zq7x-plain-value", []string{"Zq7x"}},
		{"string needing escapes", "Zq7x \"quoted\" <tag> & back\\slash Ω\nline", []string{"Zq7x", "quoted", "back"}},
		{"short string", "Zq", []string{"Zq"}},
		{"integer", int64(987654321), []string{"987654321"}},
		{"small integer", int64(42), []string{"42"}},
		{"float", 31415.926, []string{"31415"}},
		{"huge float", 2.5e20, []string{"2.5e+20", "250000000000000000000"}},
		{"boolean", true, []string{"true"}},
		{"nested map", map[string]any{"Zq7xinner": map[string]any{"deeper": "Zq7x-nested"}}, []string{"Zq7x", "deeper"}},
		{"list", []any{"Zq7x-first", int64(13579), map[string]any{"k": "Zq7x-in-list"}}, []string{"Zq7x", "13579"}},
		{"escaped JSON text", `{"password":"Zq7x-json-in-a-string"}`, []string{"Zq7x"}},
	}
	renders := []struct {
		name   string
		render func(v any) string
	}{
		{"smd typed patch", func(v any) string {
			return fmt.Sprintf(".stringData.k: expected string, got &value.valueUnstructured{Value:%#v}", v)
		}},
		{"Go %v", func(v any) string { return fmt.Sprintf("invalid value %v for key k", v) }},
		{"Go %#v", func(v any) string { return fmt.Sprintf("invalid value %#v for key k", v) }},
		{"JSON", func(v any) string { b, _ := json.Marshal(v); return "invalid value " + string(b) + " for key k" }},
		{"JSON in a JSON string", func(v any) string {
			b, _ := json.Marshal(v)
			bb, _ := json.Marshal(string(b))
			return `{"message":` + string(bb) + `} for key k`
		}},
		{"JSON in a Go string", func(v any) string { b, _ := json.Marshal(v); return "invalid value " + strconv.Quote(string(b)) }},
		{"ASCII-quoted", func(v any) string { return "invalid value " + strconv.QuoteToASCII(fmt.Sprint(v)) }},
	}
	for _, field := range []string{"stringData", "data"} {
		for _, sh := range shapes {
			value, encoded := sh.value, ""
			if s, ok := value.(string); ok && field == "data" {
				// data holds base64: the apiserver may quote it either way.
				encoded = base64.StdEncoding.EncodeToString([]byte(s))
				value = encoded
			}
			manifest, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Secret",
				"metadata": map[string]any{"name": "s", "namespace": "default"}, field: map[string]any{"k": value}})
			if err != nil {
				t.Fatal(err)
			}
			for _, rd := range renders {
				for _, via := range []string{"apply error", "wrapper refusal", "transient"} {
					t.Run(field+"/"+sh.name+"/"+rd.name+"/"+via, func(t *testing.T) {
						msg := rd.render(sh.value)
						if encoded != "" && rd.name == "Go %v" {
							msg += " (" + encoded + ")"
						}
						var r controller.Reconciler[*api.ApplyDesire]
						switch via {
						case "apply error":
							kube := newFakeKube()
							kube.errs["apply"] = apierrors.NewBadRequest(msg)
							r = NewApply(ApplyConfig{Kube: kube, Mapper: withSecrets(newMapper()), FieldManager: "fm"})
						case "wrapper refusal":
							r = reconcilerFunc[*api.ApplyDesire](func(context.Context, *api.ApplyDesire) controller.Verdict {
								return controller.Refused(api.ReasonPreCheckFailed, msg)
							})
						default:
							r = reconcilerFunc[*api.ApplyDesire](func(context.Context, *api.ApplyDesire) controller.Verdict {
								return controller.Transient(api.ReasonKubeAPIError, errors.New(msg))
							})
						}
						h := newHarness[*api.ApplyDesire](api.KindApplyDesire, r)
						_, st := h.sync(t, applyDesire("s", string(manifest)))
						for _, c := range st.Status.Conditions {
							for _, leak := range sh.leaks {
								if strings.Contains(c.Message, leak) {
									t.Fatalf("%s message reveals %q: %s", c.Type, leak, c.Message)
								}
							}
						}
						if m := condition(st, api.ConditionSuccessful).Message; !strings.Contains(m, "[redacted]") {
							t.Fatalf("message %q was not scrubbed or lost its sense", m)
						}
					})
				}
			}
		}
	}
}

// TestUndecodableSecretValuesNeverQuoted: a Secret's content that cannot be decoded (a number
// beyond float64, JSON broken after the head, content after the object) still has its head
// name a Secret: no text of its data or stringData reaches a condition message, neither from
// the default reconciler's refusal nor from a wrapper that quotes the whole content. The
// message keeps its sense (the reason, and what is wrong where the values are not needed).
func TestUndecodableSecretValuesNeverQuoted(t *testing.T) {
	digits := strings.Repeat("9876543210", 40) // 400 digits: beyond float64
	const head = `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"default"},`
	cases := []struct {
		name    string
		content string
		leaks   []string // none may appear in a message
		keep    string   // must still appear in the Successful message ("": no check)
	}{
		{name: "stringData number beyond float64", content: head + `"stringData":{"pin":` + digits + `}}`,
			leaks: []string{digits[:40], digits[len(digits)-40:]}, keep: "[redacted]"},
		{name: "data number beyond float64 in exponent form", content: head + `"data":{"pin":98765e999}}`,
			leaks: []string{"98765e999"}, keep: "[redacted]"},
		{name: "beside non-string values at any depth", content: head + `"stringData":{"n":123456789,"b":true,"l":["Zq7x-elem",{"Zq7xkey":"v"}],"big":-` + digits + `}}`,
			leaks: []string{"123456789", "Zq7x", digits[:40]}, keep: "[redacted]"},
		{name: "data and stringData not maps", content: head + `"data":"Zq7x-not-a-map","stringData":[` + digits + `]}`,
			leaks: []string{"Zq7x", digits[:40]}, keep: "[redacted]"},
		{name: "kind spelled with escapes", content: `{"apiVersion":"v1","kind":"Secr\u0065t","metadata":{"name":"s","namespace":"default"},"stringData":{"pin":` + digits + `}}`,
			leaks: []string{digits[:40]}, keep: "[redacted]"},
		{name: "truncated after the head", content: head + `"stringData":{"k":"Zq7x-truncated`, leaks: []string{"Zq7x"}},
		{name: "invalid JSON after the head", content: head + `"stringData":{"k":"Zq7x-invalid" x, "j":"Zq7x-after"}}`, leaks: []string{"Zq7x"}},
		{name: "broken before the kind", content: `{"stringData":{"k":"Zq7x-first"} x "kind":"Secret","apiVersion":"v1"}`, leaks: []string{"Zq7x"}},
		{name: "another value after the object", content: head + `"stringData":{"k":"Zq7x-one"}} {"stringData":{"j":"Zq7x-two"}}`, leaks: []string{"Zq7x"}},
	}
	quoting := reconcilerFunc[*api.ApplyDesire](func(_ context.Context, d *api.ApplyDesire) controller.Verdict {
		return controller.Refused(api.ReasonPreCheckFailed, "cannot apply "+string(d.Spec.KubeContent))
	})
	for _, tc := range cases {
		for _, via := range []string{"default reconciler", "wrapper quoting the content"} {
			t.Run(tc.name+"/"+via, func(t *testing.T) {
				var r controller.Reconciler[*api.ApplyDesire] = quoting
				if via == "default reconciler" {
					r = NewApply(ApplyConfig{Kube: newFakeKube(), Mapper: withSecrets(newMapper()), FieldManager: "fm"})
				}
				h := newHarness[*api.ApplyDesire](api.KindApplyDesire, r)
				_, st := h.sync(t, applyDesire("s", tc.content))
				for _, c := range st.Status.Conditions {
					for _, leak := range tc.leaks {
						if strings.Contains(c.Message, leak) {
							t.Fatalf("%s message reveals %q: %s", c.Type, leak, c.Message)
						}
					}
				}
				succ := condition(st, api.ConditionSuccessful)
				if succ.Reason != api.ReasonPreCheckFailed || succ.Message == "" {
					t.Fatalf("Successful = %s %q, want a PreCheckFailed refusal that says why", succ.Reason, succ.Message)
				}
				if tc.keep != "" && via == "wrapper quoting the content" && !strings.Contains(succ.Message, tc.keep) {
					t.Fatalf("message %q lost %q", succ.Message, tc.keep)
				}
			})
		}
	}
}
