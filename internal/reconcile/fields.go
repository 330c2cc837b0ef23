package reconcile

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// A ReadDesire's `spec.fields` (RFC 6901 JSON Pointers) mirror only part of its object: a
// smaller status item, a smaller bill for a large object. The projection keeps the object
// recognisable (apiVersion, kind, metadata.name and metadata.namespace are always kept) and
// holds, for each pointer, the value it points to at the same place; nothing else (no
// resourceVersion), so a change of a field that is not selected leaves the mirrored content,
// and so the status, as it was.
//
// Lists keep their shape up to the last selected element: "/spec/containers/1" alone gives
// containers [null, {…}], the elements not selected null, so every pointer finds in the
// projection what it finds on the object. A list token is a decimal index without leading
// zeros (RFC 6901); "-" (past the end) and an index out of range point at nothing. A pointer
// that points at nothing on the object (a missing member, a member of a scalar) is simply
// absent from the projection.

// projectFields returns the projection of obj (a live object as unstructured JSON) on
// pointers, and the pointers that point at nothing on obj, in their order. obj is not
// modified and shares no memory with the projection.
func projectFields(obj map[string]any, pointers []string) (out map[string]any, absent []string) {
	out = map[string]any{}
	for _, k := range []string{"apiVersion", "kind"} {
		if v, ok := obj[k]; ok {
			out[k] = v
		}
	}
	if md, ok := obj["metadata"].(map[string]any); ok {
		keep := map[string]any{}
		for _, k := range []string{"name", "namespace"} {
			if v, ok := md[k]; ok {
				keep[k] = v
			}
		}
		out["metadata"] = keep
	}
	for _, p := range pointers {
		merged, ok := pick(out, obj, api.SplitJSONPointer(p))
		if !ok {
			absent = append(absent, p)
			continue
		}
		out = merged.(map[string]any)
	}
	return out, absent
}

// pick returns dst with the value src holds at tokens placed at the same place (containers on
// the way created as src has them); ok false, dst untouched, when tokens point at nothing.
func pick(dst, src any, tokens []string) (any, bool) {
	if len(tokens) == 0 {
		return deepCopyJSON(src), true
	}
	switch s := src.(type) {
	case map[string]any:
		v, ok := s[tokens[0]]
		if !ok {
			return dst, false
		}
		d, _ := dst.(map[string]any)
		nv, ok := pick(d[tokens[0]], v, tokens[1:])
		if !ok {
			return dst, false
		}
		if d == nil {
			d = map[string]any{}
		}
		d[tokens[0]] = nv
		return d, true
	case []any:
		i, ok := listIndex(tokens[0], len(s))
		if !ok {
			return dst, false
		}
		d, _ := dst.([]any)
		var cur any
		if i < len(d) {
			cur = d[i]
		}
		nv, ok := pick(cur, s[i], tokens[1:])
		if !ok {
			return dst, false
		}
		for len(d) <= i {
			d = append(d, nil)
		}
		d[i] = nv
		return d, true
	}
	return dst, false
}

// listIndex parses an RFC 6901 array index (pointerIndex) below n.
func listIndex(token string, n int) (int, bool) {
	i, err := pointerIndex(token)
	return i, err == nil && i < n
}

// deepCopyJSON copies v's maps and lists (scalars are shared: they are immutable).
func deepCopyJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = deepCopyJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = deepCopyJSON(e)
		}
		return out
	}
	return v
}

// sameFields reports whether two spec.fields lists are the same (nil and empty alike: the
// whole object).
func sameFields(a, b []string) bool { return slices.Equal(a, b) }

// maxAbsentNamed bounds the absent pointers a message names.
const maxAbsentNamed = 5

// fieldsMessage is a projected mirror's message: the fields it holds and the first of those
// that point at nothing on the object.
func fieldsMessage(t api.TargetItem, fields, absent []string) string {
	msg := fmt.Sprintf("%s mirrored: %d of %d spec.fields present", t, len(fields)-len(absent), len(fields))
	if len(absent) == 0 {
		return msg
	}
	named := absent[:min(len(absent), maxAbsentNamed)]
	msg += "; absent on the object: " + strings.Join(named, ", ")
	if more := len(absent) - len(named); more > 0 {
		msg += fmt.Sprintf(" and %d more", more)
	}
	return msg
}
