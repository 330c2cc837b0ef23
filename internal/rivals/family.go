package rivals

import (
	"strings"

	"k8s.io/client-go/tools/cache"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/stream"
)

// familyIndex is the informers' index of Apply and Delete desires by their object's group,
// namespace and name. A DeleteDesire names group/version/resource, an ApplyDesire
// group/version/kind: the family is what both spell the same way.
const familyIndex = "family"

func familyKey(group, namespace, name string) string { return group + "/" + namespace + "/" + name }

// ObjectKey names the object an ApplyDesire's kubeContent applies (api.ApplyDesire.ObjectKey:
// "group/Kind/namespace/name", any version, read once when the desire was decoded). "" when
// the desire will not be carried out (undecodable, or a spec attribute or option value this
// applier does not know: the controller refuses it) or its content names no object (it is refused by its
// reconciler anyway): such a desire is no rival of any other.
func ObjectKey(d *api.ApplyDesire) string {
	if !carriedOut(d) {
		return ""
	}
	return d.ObjectKey()
}

// carriedOut reports whether a desire may be carried out at all: it decoded (Invalid is ""),
// its spec holds no attribute this applier does not know, and no option value it does not
// know (api.CheckOptions; docs/contract.md, Forward safety). A desire that is refused before
// its reconciler applies and deletes nothing, so it neither keeps an object nor wins over an
// ApplyDesire.
func carriedOut(d api.Desire) bool {
	return d.Meta().Invalid == "" && len(d.Common().UnknownAttributes()) == 0 && api.CheckOptions(d) == nil
}

// writes reports whether an ApplyDesire writes its object: every applyPolicy but ReadOnly
// (CreateOnly creates it). One that never writes cannot undo another's apply nor re-create
// what a DeleteDesire deletes, so it is no rival: it neither keeps an object nor is refused.
// It stays in familyIndex: when its policy changes, the others are looked at again.
func writes(d *api.ApplyDesire) bool { return d.Spec.Policy() != api.ApplyPolicyReadOnly }

// applyFamily is an ApplyDesire's familyIndex key: its kubeContent's object ("" when it names
// none), or a folded Delete's targetItem.
func applyFamily(d *api.ApplyDesire) string {
	if dd, ok := FoldedDelete(d); ok {
		return deleteFamily(dd)
	}
	return familyOf(ObjectKey(d))
}

// FoldedDelete returns the DeleteDesire a folded Delete (an ApplyDesire of type Delete:
// docs/contract.md "The folded Delete") means, when it is carried out at all (carriedOut);
// false for any other ApplyDesire. A folded Delete is a rival as a DeleteDesire is: it wins
// over the ApplyDesires of its object while it exists, and is never refused for one.
func FoldedDelete(d *api.ApplyDesire) (*api.DeleteDesire, bool) {
	if !d.Spec.IsDelete() || !carriedOut(d) {
		return nil, false
	}
	return d.AsDeleteDesire()
}

// familyOf is the familyIndex key of an ObjectKey ("" for none).
func familyOf(objectKey string) string {
	parts := strings.SplitN(objectKey, "/", 4)
	if len(parts) == 4 {
		return familyKey(parts[0], parts[2], parts[3])
	}
	return ""
}

// deleteFamily is a DeleteDesire's familyIndex key: its targetItem ("" when it names none).
func deleteFamily(d *api.DeleteDesire) string {
	t := d.Spec.TargetItem
	if carriedOut(d) && t.Name != "" && t.Resource != "" {
		return familyKey(t.Group, t.Namespace, t.Name)
	}
	return ""
}

// Indexers are the indexers of kind's informer: familyIndex for Apply and Delete desires,
// none for ReadDesires (they have no rivals).
func Indexers(kind api.DesireKind) cache.Indexers {
	switch kind {
	case api.KindApplyDesire:
		return familyIndexers(applyFamily)
	case api.KindDeleteDesire:
		return familyIndexers(deleteFamily)
	}
	return nil
}

// familyIndexers index one kind's desires by family (none for a desire whose family is "").
func familyIndexers[T api.Desire](family func(T) string) cache.Indexers {
	return cache.Indexers{familyIndex: func(obj any) ([]string, error) {
		if d, ok := stream.As[T](obj); ok {
			if k := family(d); k != "" {
				return []string{k}, nil
			}
		}
		return nil, nil
	}}
}

// ofFamily returns the desires of kind T that indexer holds under family key fam.
func ofFamily[T api.Desire](indexer cache.Indexer, fam string) []T {
	if indexer == nil || fam == "" {
		return nil
	}
	objs, err := indexer.ByIndex(familyIndex, fam)
	if err != nil {
		return nil
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if d, ok := stream.As[T](o); ok {
			out = append(out, d)
		}
	}
	return out
}
