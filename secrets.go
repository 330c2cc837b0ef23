package kubeapplier

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Secret values never reach a status table: status tables are read by another account. A
// ReadDesire of a Secret mirrors it with its values redacted, and an apiserver error about a
// Secret an ApplyDesire carries, which may quote an offending value, is scrubbed of the
// manifest's values before it becomes a condition message.

// RedactedValue replaces redacted Secret data values: base64 of "REDACTED".
var RedactedValue = base64.StdEncoding.EncodeToString([]byte("REDACTED"))

// SecretRedaction says which Secret data keys a ReadDesire may copy into the status.
type SecretRedaction struct {
	// AllowKeys are data keys copied as they are.
	AllowKeys []string
	// Disabled copies every value (explicit opt-out).
	Disabled bool
}

// redact replaces the values of a Secret's data and stringData (all but the allowed keys,
// unless disabled) and drops the last-applied annotation, which would reveal them again.
func (r SecretRedaction) redact(u *unstructured.Unstructured) {
	if r.Disabled {
		return
	}
	for _, field := range []string{"data", "stringData"} {
		data, ok := u.Object[field].(map[string]any)
		if !ok {
			continue
		}
		for k := range data {
			if !slices.Contains(r.AllowKeys, k) {
				data[k] = RedactedValue
			}
		}
	}
	anns := u.GetAnnotations()
	delete(anns, "kubectl.kubernetes.io/last-applied-configuration")
	u.SetAnnotations(anns)
}

// isSecret reports whether obj is a core Secret.
func isSecret(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	return gvk.Group == "" && gvk.Kind == "Secret"
}

// secretScrubber removes a Secret manifest's values from messages: each value of data (as
// written, base64, and decoded) and of stringData (as the apiserver would print it). Values
// of four bytes or more are removed wherever they appear; shorter ones where they stand as a
// word of their own, so a message stays readable without revealing them.
type secretScrubber struct{ values []string }

func newSecretScrubber(obj *unstructured.Unstructured) secretScrubber {
	var vals []string
	if data, ok := obj.Object["data"].(map[string]any); ok {
		for _, v := range data {
			s := fmt.Sprint(v)
			vals = append(vals, s)
			if dec, err := base64.StdEncoding.DecodeString(s); err == nil {
				vals = append(vals, string(dec))
			}
		}
	}
	if data, ok := obj.Object["stringData"].(map[string]any); ok {
		for _, v := range data {
			vals = append(vals, fmt.Sprint(v))
		}
	}
	// Longest first: a value that contains another is removed whole.
	slices.SortFunc(vals, func(a, b string) int { return len(b) - len(a) })
	return secretScrubber{values: slices.Compact(vals)}
}

// scrub returns msg without the Secret's values.
func (s secretScrubber) scrub(msg string) string {
	for _, v := range s.values {
		switch {
		case v == "":
		case len(v) >= 4:
			msg = strings.ReplaceAll(msg, v, "[redacted]")
		default:
			msg = regexp.MustCompile(`(^|[^A-Za-z0-9+/=])`+regexp.QuoteMeta(v)+`($|[^A-Za-z0-9+/=])`).ReplaceAllString(msg, "${1}[redacted]${2}")
		}
	}
	return msg
}
