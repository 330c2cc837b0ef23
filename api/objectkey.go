package api

import (
	"encoding/json"
	"errors"
	"hash/maphash"
	"strings"
)

// contentKey is the ObjectKey of the kubeContent DecodeItem decoded, with a hash of that
// content: the key reads the whole content, and an applier asks for it several times per event
// (its informer's index, the rival rules); the hash tells, at a fraction of the cost, whether
// the content is still the one the key was read from, replaced or edited in place. It is set
// only by DecodeItem, before the desire is shared, so reading it needs no lock.
type contentKey struct {
	sum uint64 // maphash of the content (set: len > 0)
	len int
	key string
}

// contentSeed seeds the hashes of contentKey (one per process: they are never stored).
var contentSeed = maphash.MakeSeed()

func keyOf(content []byte, key string) contentKey {
	return contentKey{sum: maphash.Bytes(contentSeed, content), len: len(content), key: key}
}

// keys reports whether k was read from content c: the same bytes (but for the 2^-64 chance of
// a collision of a 64-bit hash with a seed no input can know).
func (k contentKey) keys(c json.RawMessage) bool {
	return len(c) > 0 && k.len == len(c) && k.sum == maphash.Bytes(contentSeed, c)
}

// ObjectKey names the object the desire's kubeContent applies: "group/Kind/namespace/name",
// any version ("" group for the core group, "" namespace for a cluster-scoped object). "" when
// the content is absent, is not a JSON object, has no kind or no metadata.name, or has an
// apiVersion with more than one "/" (the rule of apimachinery's schema.ParseGroupVersion). Two
// ApplyDesires with the same key are rivals for one object (docs/contract.md).
//
// Read once when DecodeItem decoded the desire, in the pass that checked the content; parsed
// again when Spec.KubeContent has changed since (replaced or edited in place).
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
