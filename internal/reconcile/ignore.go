package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/target"
)

// The ApplyDesire options `ignoreFields` and `yieldToManagers` (issue #40 item 3): what an
// apply leaves out of kubeContent, so that the applier's field manager gives those fields up
// and never takes them back.
//
//   - ignoreFields OnTargetPresent: once the object exists, the pointed fields are left out of
//     every apply.
//   - ignoreFields OnTargetChange: the desire's own values are applied when the desire changes
//     (its first apply, a new spec version or incarnation); an apply that only repairs the
//     object (a drift, the hourly re-apply, a new term's apply of a spec already applied: see
//     appliesNewSpec) leaves them out.
//   - yieldToManagers: every field a listed manager holds in the live object's managedFields
//     (any operation, any subresource: an HPA's /scale entry names spec.replicas) is left out.
//
// A field left out that the applier's manager alone holds on the live object is not dropped
// but applied at the object's own value: server-side apply deletes a field that its last
// manager gives up (a Deployment's replicas would fall back to 1), and the option means "keep
// the object's value", never "delete it". Once another manager has written it, it is dropped.
//
// Since the applier no longer applies these fields, its Apply entry in managedFields no
// longer holds them (appliedFieldsDigest excludes them), and another writer's change to them
// is no drift the applier repairs: the drift watch sees the change, the apply that follows
// leaves the fields out and changes nothing, and an apply that wrote nothing is no repair (no
// "re-applied", no fight, no DriftConflict), even when a status update moved the
// resourceVersion meanwhile (leftOut.wroteNothing).
//
// Pointers (RFC 6901, syntax checked by api.CheckOptions) may step through lists by index
// ("/spec/template/spec/containers/0/image"): the index is into kubeContent's list, and the
// field of that element is left out. A pointer to a field kubeContent does not have leaves
// nothing out. A pointer the apply cannot do without (apiVersion, kind, the whole of
// metadata, metadata/name, metadata/namespace, or the whole object) is refused.

// leftOut is what an apply left out of kubeContent, for its message.
type leftOut struct {
	ignored []string // "/spec/replicas (OnTargetPresent)"
	yielded []string // managers whose fields were left out, sorted
	// before is the live object read before the apply (nil: absent, or not read).
	before *unstructured.Unstructured
}

// wroteNothing reports whether the apply that answered after wrote nothing to the object read
// before it: the same uid and generation, and the applier's Apply entry (fieldManager) with the
// same fields and time. A drift the watch saw before such an apply was no drift of what the
// applier applies (a change of a field it left out) even when the resourceVersion moved
// meanwhile (a controller's status update after a scale): it is not counted as a repair. A
// repair takes fields back (the entry's fields change) or changes values (its time, and for
// spec fields the generation, change).
func (l leftOut) wroteNothing(after *unstructured.Unstructured, fieldManager string) bool {
	if l.before == nil || after == nil || l.before.GetUID() != after.GetUID() || l.before.GetGeneration() != after.GetGeneration() {
		return false
	}
	x, ok1 := applyEntry(l.before, fieldManager)
	y, ok2 := applyEntry(after, fieldManager)
	return ok1 && ok2 && x.Time.Equal(y.Time) && x.FieldsV1 != nil && y.FieldsV1 != nil && string(x.FieldsV1.Raw) == string(y.FieldsV1.Raw)
}

// applyEntry is u's managedFields entry of fieldManager's Apply operation on the main resource.
func applyEntry(u *unstructured.Unstructured, fieldManager string) (metav1.ManagedFieldsEntry, bool) {
	for _, e := range u.GetManagedFields() {
		if e.Manager == fieldManager && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == "" {
			return e, true
		}
	}
	return metav1.ManagedFieldsEntry{}, false
}

// note is the message's tail: "; ignored /spec/replicas (OnTargetPresent); yielded to
// managers "hpa"" ("" when nothing was left out).
func (l leftOut) note() string {
	var b strings.Builder
	if len(l.ignored) > 0 {
		b.WriteString("; ignored " + strings.Join(l.ignored, ", "))
	}
	if len(l.yielded) > 0 {
		q := make([]string, len(l.yielded))
		for i, m := range l.yielded {
			q[i] = strconv.Quote(m)
		}
		b.WriteString("; yielded to managers " + strings.Join(q, ", "))
	}
	return b.String()
}

// checkIgnoreOptions returns a pre-check error naming the first ignoreFields pointer the apply
// cannot use, or a yieldToManagers entry naming the applier's own field manager.
func checkIgnoreOptions(s *api.ApplyDesireSpec, fieldManager string) error {
	for i, f := range s.IgnoreFields {
		for j, p := range f.JSONPointers {
			if reason := unusablePointer(api.SplitJSONPointer(p)); reason != "" {
				return &PreCheckError{Message: fmt.Sprintf("spec.ignoreFields[%d].jsonPointers[%d] %q points at %s, "+
					"which every apply must carry: it cannot be ignored", i, j, p, reason)}
			}
		}
	}
	for i, m := range s.YieldToManagers {
		if m == fieldManager {
			return &PreCheckError{Message: fmt.Sprintf("spec.yieldToManagers[%d] %q is the applier's own field manager: "+
				"it would yield every field it applies", i, m)}
		}
	}
	return nil
}

// unusablePointer names what the pointer's tokens point at when no apply may go without it
// ("" when the pointer is usable).
func unusablePointer(tokens []string) string {
	switch {
	case len(tokens) == 1 && tokens[0] == "":
		return "the whole object"
	case tokens[0] == "apiVersion" || tokens[0] == "kind":
		return tokens[0]
	case tokens[0] == "metadata" && len(tokens) == 1:
		return "the whole of metadata"
	case tokens[0] == "metadata" && (tokens[1] == "name" || tokens[1] == "namespace"):
		return "metadata/" + tokens[1]
	}
	return ""
}

// leaveOutVerdict is the verdict of leaveOut's error: Refused(PreCheckFailed) for a pointer
// kubeContent cannot use, else that of a failed kube call.
func leaveOutVerdict(err error) controller.Verdict {
	var pre *PreCheckError
	if errors.As(err, &pre) {
		return controller.Refused(api.ReasonPreCheckFailed, pre.Message)
	}
	return kubeFailure(err)
}

// hasLeaveOutOptions reports whether s asks any apply to leave fields out.
func hasLeaveOutOptions(s *api.ApplyDesireSpec) bool {
	return len(s.IgnoreFields) > 0 || len(s.YieldToManagers) > 0
}

// leaveOut removes from obj (the decoded kubeContent of d, about to be applied to gvr) what
// d's ignoreFields and yieldToManagers leave out, reading the live object for its existence
// and managedFields. Without these options it does nothing (no read). Its errors: a pre-check
// error (a pointer stepping into a list by something other than an index), or the read's.
func (r *Apply) leaveOut(ctx context.Context, d *api.ApplyDesire, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) (leftOut, error) {
	if !hasLeaveOutOptions(&d.Spec) {
		return leftOut{}, nil
	}
	// Refused whether or not the object exists yet: the first apply must not pass a pointer
	// that the next one refuses.
	for _, f := range d.Spec.IgnoreFields {
		for _, p := range f.JSONPointers {
			if _, _, _, err := locate(obj.Object, api.SplitJSONPointer(p)); err != nil {
				return leftOut{}, &PreCheckError{Message: fmt.Sprintf("spec.ignoreFields jsonPointer %q: %v", p, err)}
			}
		}
	}
	live, err := r.kube.Get(ctx, gvr, obj.GetNamespace(), obj.GetName())
	if objectNotFound(err, obj.GetName()) {
		live, err = nil, nil
	}
	if err != nil {
		return leftOut{}, fmt.Errorf("reading %s %s before applying it (spec.ignoreFields, spec.yieldToManagers): %w",
			obj.GetKind(), objectRef(obj.GetNamespace(), obj.GetName()), err)
	}
	changed := true
	if live != nil && slices.ContainsFunc(d.Spec.IgnoreFields, func(f api.IgnoreField) bool { return f.Condition == api.IgnoreOnTargetChange }) {
		changed = r.appliesNewSpec(ctx, d)
	}
	out, err := leaveOutOf(&d.Spec, obj, live, r.fieldManager, changed)
	out.before = live
	return out, err
}

// appliesNewSpec reports whether an apply of d now carries a change of the desire: neither this
// term (the drift watch's record) nor the last status says its spec was applied already.
func (r *Apply) appliesNewSpec(ctx context.Context, d *api.ApplyDesire) bool {
	if r.drift != nil && r.drift.AppliedSpec(d.DocumentID, d.Meta()) {
		return false
	}
	if r.Last != nil {
		if load := r.Last(ctx, d.DocumentID); load != nil && target.AppliedBefore(load(), d.Meta()) {
			return false
		}
	}
	return true
}

// leaveOutOf removes from obj what s leaves out given the live object (nil: absent), the
// applier's fieldManager, and whether this apply carries a change of the desire (changed).
func leaveOutOf(s *api.ApplyDesireSpec, obj, live *unstructured.Unstructured, fieldManager string, changed bool) (leftOut, error) {
	var out leftOut
	if live == nil {
		return out, nil // nothing to keep: the apply creates the object with every field
	}
	owners, err := managedTrees(live)
	if err != nil {
		return out, err
	}
	for _, f := range s.IgnoreFields {
		if f.Condition == api.IgnoreOnTargetChange && changed {
			continue
		}
		for _, p := range f.JSONPointers {
			tokens := api.SplitJSONPointer(p)
			found, err := ignoreField(obj.Object, live.Object, tokens, owners, fieldManager)
			if err != nil {
				return out, &PreCheckError{Message: fmt.Sprintf("spec.ignoreFields jsonPointer %q: %v", p, err)}
			}
			if found {
				out.ignored = append(out.ignored, p+" ("+f.Condition+")")
			}
		}
	}
	obj.Object = dropLeftOutElements(obj.Object).(map[string]any)
	for _, m := range s.YieldToManagers {
		if m == fieldManager {
			continue
		}
		removed := false
		for _, e := range owners {
			if e.manager == m {
				removed = yieldTree(obj.Object, e.tree, nil, true) || removed
			}
		}
		if removed {
			out.yielded = append(out.yielded, m)
		}
	}
	slices.Sort(out.yielded)
	out.yielded = slices.Compact(out.yielded)
	return out, nil
}

// managedTree is one managedFields entry: its manager and its fieldsV1 as decoded JSON (keys
// "f:<name>", "k:<json>", "v:<json>", "i:<index>", "."; sigs.k8s.io/structured-merge-diff's
// serialization of a fieldpath.Set).
type managedTree struct {
	manager string
	tree    map[string]any
}

func managedTrees(live *unstructured.Unstructured) ([]managedTree, error) {
	var out []managedTree
	for _, e := range live.GetManagedFields() {
		if e.FieldsV1 == nil {
			continue
		}
		var tree map[string]any
		if err := json.Unmarshal(e.FieldsV1.Raw, &tree); err != nil {
			return nil, fmt.Errorf("managedFields entry of %q: %w", e.Manager, err)
		}
		out = append(out, managedTree{manager: e.Manager, tree: tree})
	}
	return out, nil
}

// ignoreField leaves the field at tokens out of obj (kubeContent): dropped, or set to the live
// object's value when fieldManager alone holds it there (see the file's comment). It reports
// whether obj had the field; an error when a token steps into a list by something other than
// an index of it.
func ignoreField(obj, live map[string]any, tokens []string, owners []managedTree, fieldManager string) (bool, error) {
	tokens = atomicListPrefix(obj, tokens, owners)
	parent, key, idx, err := locate(obj, tokens)
	if err != nil || parent == nil {
		return false, err
	}
	var others, mine bool
	var ours map[string]any
	for _, e := range owners {
		if holds(e.tree, obj, tokens) {
			if e.manager == fieldManager {
				mine, ours = true, e.tree
			} else {
				others = true
			}
		}
	}
	var liveValue any
	var liveHas bool
	if mine && !others {
		liveValue, liveHas = liveValueAt(ours, obj, live, tokens)
	}
	keep := mine && !others && liveHas
	switch p := parent.(type) {
	case map[string]any:
		if keep {
			p[key] = liveValue
		} else {
			delete(p, key)
		}
	case []any:
		// A whole list element: kept at the object's value, or replaced by nothing is not
		// possible in place; an element is left out by dropping it from the list.
		if keep {
			p[idx] = liveValue
		} else {
			// Marked, and removed once every pointer is done (dropLeftOutElements): a
			// removal now would shift the elements the next pointers name.
			p[idx] = leftOutElement{}
		}
	}
	return true, nil
}

// leftOutElement marks a list element an ignoreFields pointer leaves out, until
// dropLeftOutElements removes it.
type leftOutElement struct{}

// dropLeftOutElements returns v without the list elements marked leftOutElement (lists
// holding one are copied).
func dropLeftOutElements(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = dropLeftOutElements(e)
		}
	case []any:
		out := v
		if slices.ContainsFunc(v, func(e any) bool { _, ok := e.(leftOutElement); return ok }) {
			out = make([]any, 0, len(v))
			for _, e := range v {
				if _, ok := e.(leftOutElement); !ok {
					out = append(out, e)
				}
			}
		}
		for i, e := range out {
			out[i] = dropLeftOutElements(e)
		}
		return out
	}
	return v
}

// locate finds the container of the field tokens point at in doc: a map and its key, or a list
// and the index; nil when doc has no such field.
func locate(doc map[string]any, tokens []string) (parent any, key string, idx int, err error) {
	var cur any = doc
	for i, t := range tokens {
		last := i == len(tokens)-1
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[t]
			if !ok {
				return nil, "", 0, nil
			}
			if last {
				return c, t, 0, nil
			}
			cur = v
		case []any:
			n, err := pointerIndex(t)
			if err != nil {
				return nil, "", 0, err
			}
			if n >= len(c) {
				return nil, "", 0, nil
			}
			if last {
				return c, "", n, nil
			}
			cur = c[n]
		default:
			return nil, "", 0, nil
		}
	}
	return nil, "", 0, nil
}

// pointerIndex parses a pointer token that steps into a list: a decimal index (RFC 6901:
// digits only, no leading zeros; "-", the element after the last, names nothing). The one
// rule for every option's pointers (ignoreFields here, a ReadDesire's fields in fields.go).
func pointerIndex(t string) (int, error) {
	bad := t == "" || (len(t) > 1 && t[0] == '0')
	for _, c := range t {
		bad = bad || c < '0' || c > '9'
	}
	n, err := strconv.Atoi(t)
	if bad || err != nil {
		return 0, fmt.Errorf("steps into a list with %q, which is not an index of it (a decimal number from 0)", t)
	}
	return n, nil
}

// holds reports whether the fieldsV1 tree holds the field tokens point at in doc (tokens
// through lists are matched to the tree's element keys by doc's element): the field itself, or
// an atomic field above it (a leaf of the tree).
func holds(tree map[string]any, doc any, tokens []string) bool {
	if len(tree) == 0 {
		return false // an entry holding nothing
	}
	for _, t := range tokens {
		if len(tree) == 0 {
			return true // an atomic value above the field, held as a whole
		}
		var child any
		switch c := doc.(type) {
		case map[string]any:
			child = tree["f:"+t]
			doc = c[t]
		case []any:
			n, err := pointerIndex(t)
			if err != nil || n >= len(c) {
				return false
			}
			child = elementNode(tree, c[n], n)
			doc = c[n]
		default:
			return false
		}
		sub, ok := child.(map[string]any)
		if !ok {
			return false
		}
		tree = sub
	}
	return true
}

// atomicListPrefix returns the tokens of the outermost list on the way to tokens' field that
// a managedFields entry holds whole (an atomic list: its elements are not fields of their own),
// else tokens. An element of such a list cannot be left out alone: the apply would send the
// list without it, a value nobody asked for, so the whole list is left out.
func atomicListPrefix(obj map[string]any, tokens []string, owners []managedTree) []string {
	var cur any = obj
	for i, t := range tokens {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[t]
		case []any:
			for _, e := range owners {
				if heldWhole(e.tree, obj, tokens[:i]) {
					return tokens[:i]
				}
			}
			n, err := pointerIndex(t)
			if err != nil || n >= len(c) {
				return tokens
			}
			cur = c[n]
		default:
			return tokens
		}
	}
	return tokens
}

// heldWhole reports whether the fieldsV1 tree holds the field tokens point at in doc as a
// leaf, or an atomic field above it.
func heldWhole(tree map[string]any, doc any, tokens []string) bool {
	if !holds(tree, doc, tokens) {
		return false
	}
	for _, t := range tokens {
		if len(tree) == 0 {
			return true
		}
		var child any
		switch c := doc.(type) {
		case map[string]any:
			child, doc = tree["f:"+t], c[t]
		case []any:
			n, _ := pointerIndex(t)
			child, doc = elementNode(tree, c[n], n), c[n]
		}
		tree, _ = child.(map[string]any)
	}
	return len(tree) == 0
}

// liveValueAt returns the live object's value of the field tokens point at in doc
// (kubeContent): a list element of doc is found in live's list by the element key that tree
// (the applier's managedFields entry) holds it under ("k:" keys, a "v:" value), by the same
// index when tree does not say.
func liveValueAt(tree map[string]any, doc, live any, tokens []string) (any, bool) {
	for _, t := range tokens {
		switch d := doc.(type) {
		case map[string]any:
			l, ok := live.(map[string]any)
			if !ok {
				return nil, false
			}
			if live, ok = l[t]; !ok {
				return nil, false
			}
			doc = d[t]
			tree, _ = tree["f:"+t].(map[string]any)
		case []any:
			l, ok := live.([]any)
			n, err := pointerIndex(t)
			if !ok || err != nil || n >= len(d) {
				return nil, false
			}
			key, sub := elementKey(tree, d[n], n)
			live, ok = nil, false
			for i, e := range l {
				if (key == "" && i == n) || (key != "" && keyMatches(key, e)) {
					live, ok = e, true
					break
				}
			}
			if !ok {
				return nil, false
			}
			doc, tree = d[n], sub
		default:
			return nil, false
		}
	}
	return live, true
}

// elementKey is the key ("k:..." or "v:...") and node of tree for list element e at index n
// ("" when tree holds it by index or not at all).
func elementKey(tree map[string]any, e any, n int) (string, map[string]any) {
	for k, v := range tree {
		if (strings.HasPrefix(k, "k:") || strings.HasPrefix(k, "v:")) && keyMatches(k, e) {
			sub, _ := v.(map[string]any)
			return k, sub
		}
	}
	sub, _ := tree["i:"+strconv.Itoa(n)].(map[string]any)
	return "", sub
}

// keyMatches reports whether list element e is the one fieldsV1 element key k names.
func keyMatches(k string, e any) bool {
	switch {
	case strings.HasPrefix(k, "k:"):
		var keys map[string]any
		return json.Unmarshal([]byte(k[2:]), &keys) == nil && matchesKeys(e, keys)
	case strings.HasPrefix(k, "v:"):
		var val any
		return json.Unmarshal([]byte(k[2:]), &val) == nil && sameJSON(e, val)
	}
	return false
}

// elementNode is the node of tree (a list's) for element e at index n: "k:" whose key fields
// e has, "v:" equal to e, or "i:n".
func elementNode(tree map[string]any, e any, n int) any {
	for k, v := range tree {
		if keyMatches(k, e) {
			return v
		}
	}
	return tree["i:"+strconv.Itoa(n)]
}

func matchesKeys(e any, keys map[string]any) bool {
	m, ok := e.(map[string]any)
	if !ok || len(keys) == 0 {
		return false
	}
	for k, v := range keys {
		if !sameJSON(m[k], v) {
			return false
		}
	}
	return true
}

// sameJSON compares two values as JSON (unstructured holds int64 where decoded JSON holds
// float64).
func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return false
	}
	var u, v any
	_ = json.Unmarshal(x, &u)
	_ = json.Unmarshal(y, &v)
	return reflect.DeepEqual(u, v)
}

// yieldTree removes from doc every field the fieldsV1 tree holds as a leaf, except what no
// apply may go without (apiVersion, kind, metadata name and namespace: top) and the key
// fields of a list element (protected), which the element's own fields need. It reports
// whether anything was removed.
func yieldTree(doc any, tree map[string]any, protected map[string]bool, top bool) bool {
	removed := false
	switch d := doc.(type) {
	case map[string]any:
		for k, sub := range tree {
			name, ok := strings.CutPrefix(k, "f:")
			if !ok {
				continue
			}
			v, has := d[name]
			if !has || protected[name] || (top && (name == "apiVersion" || name == "kind")) {
				continue
			}
			subTree, _ := sub.(map[string]any)
			if len(subTree) == 0 {
				delete(d, name)
				removed = true
				continue
			}
			if top && name == "metadata" {
				removed = yieldMetadata(v, subTree) || removed
				continue
			}
			removed = yieldTree(v, subTree, nil, false) || removed
		}
	case []any:
		for k, sub := range tree {
			subTree, _ := sub.(map[string]any)
			var keys map[string]any
			if strings.HasPrefix(k, "k:") && json.Unmarshal([]byte(k[2:]), &keys) == nil {
				for _, e := range d {
					if matchesKeys(e, keys) {
						prot := map[string]bool{}
						for kf := range keys {
							prot[kf] = true
						}
						removed = yieldTree(e, subTree, prot, false) || removed
					}
				}
			}
			// "v:" (set) and "i:" (atomic list) elements are left: removing an element of a
			// list the applier also applies would change the list, not yield a field.
		}
	}
	return removed
}

// yieldMetadata yields metadata's fields but its name and namespace.
func yieldMetadata(doc any, tree map[string]any) bool {
	return yieldTree(doc, tree, map[string]bool{"name": true, "namespace": true}, false)
}
