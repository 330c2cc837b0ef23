package api

import (
	"encoding/json"
	"errors"
	"strings"
)

// contentKey is the ObjectKey of the kubeContent DecodeItem decoded, kept with that content's
// slice: the key reads the whole content, and an applier asks for it several times per event
// (its informer's index, the rival rules). It is set only by DecodeItem, before the desire is
// shared, so reading it needs no lock.
type contentKey struct {
	of  json.RawMessage
	key string
}

// ObjectKey names the object the desire's kubeContent applies: "group/Kind/namespace/name",
// any version ("" group for the core group, "" namespace for a cluster-scoped object). "" when
// the content is absent, is not a JSON object, has no kind or no metadata.name, or has an
// apiVersion with more than one "/" (the rule of apimachinery's schema.ParseGroupVersion). Two
// ApplyDesires with the same key are rivals for one object (docs/contract.md).
//
// Computed once when DecodeItem decoded the desire; parsed again when Spec.KubeContent has been
// replaced since.
func (d *ApplyDesire) ObjectKey() string {
	c := d.Spec.KubeContent
	if len(c) == 0 {
		return ""
	}
	if d.object.keys(c) {
		return d.object.key
	}
	key, _ := objectKeyOf(c)
	return key
}

// keys reports whether k was read from content c itself (the same bytes, not a copy).
func (k contentKey) keys(c json.RawMessage) bool {
	return len(c) > 0 && len(k.of) == len(c) && &k.of[0] == &c[0]
}

// copyFor is k for clone, a copy of c: none when k was not read from c.
func (k contentKey) copyFor(c, clone json.RawMessage) contentKey {
	if !k.keys(c) {
		return contentKey{}
	}
	return contentKey{of: clone, key: k.key}
}

// objectKeyOf parses raw's apiVersion, kind and metadata once: its ObjectKey, and whether raw
// is valid JSON at all (the same pass checks it).
func objectKeyOf(raw []byte) (key string, valid bool) {
	var h struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	err := json.Unmarshal(raw, &h)
	if syntax := (*json.SyntaxError)(nil); errors.As(err, &syntax) {
		return "", false
	}
	// A type mismatch (an array, "kind": 5) is valid JSON that names no object.
	if err != nil || h.Kind == "" || h.Metadata.Name == "" || strings.Count(h.APIVersion, "/") > 1 {
		return "", true
	}
	group, _, found := strings.Cut(h.APIVersion, "/")
	if !found {
		group = "" // "v1": the core group
	}
	return group + "/" + h.Kind + "/" + h.Metadata.Namespace + "/" + h.Metadata.Name, true
}
