package kubeapplier

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// An ApplyDesire and a DeleteDesire for the same object (any documentIDs: a backend may write
// both) would fight: one re-creates what the other deletes, for ever. The rule is
// deterministic and needs no clock: a DeleteDesire wins while it exists. Every ApplyDesire of
// its object is refused with TargetConflict naming it and applies nothing (the DeleteDesire's
// "gone" stays true); when the DeleteDesire changes or goes away, the ApplyDesires of its
// object are looked at again, and one applies once no DeleteDesire targets the object. A
// deletion is the more recent intent in every workflow that writes one beside an
// ApplyDesire (the backend tears down), and a rule that keys on the order of writes could
// flip with a clock or a replay.
//
// A DeleteDesire targets group/version/resource, an ApplyDesire group/version/kind: both
// are indexed by their object's family (group, namespace, name); within the family the
// ApplyDesire's kind is mapped to its resource, and DeleteDesires naming that resource (any
// version; a non-canonical spelling is refused by its own reconciler and deletes nothing, so
// it does not win) are its rivals. When the kind cannot be mapped, every DeleteDesire of the
// family is taken for a rival: the object may be theirs.

// familyIndex is the informers' index of Apply and Delete desires by their object's group,
// namespace and name.
const familyIndex = "family"

func familyKey(group, namespace, name string) string { return group + "/" + namespace + "/" + name }

// applyFamily is an ApplyDesire's familyIndex key: its kubeContent's object ("" when it names
// none).
func applyFamily(d *ApplyDesire) string {
	parts := strings.SplitN(applyObjectKey(d), "/", 4)
	if len(parts) == 4 {
		return familyKey(parts[0], parts[2], parts[3])
	}
	return ""
}

// deleteFamily is a DeleteDesire's familyIndex key: its targetItem ("" when it names none).
func deleteFamily(d *DeleteDesire) string {
	t := d.Spec.TargetItem
	if d.Invalid == "" && t.Name != "" && t.Resource != "" {
		return familyKey(t.Group, t.Namespace, t.Name)
	}
	return ""
}

// indexersOf are the indexers of kind's informer. Apply and Delete desires are indexed by their
// object's family: the ApplyDesires of one object are found among those of its family, so the
// cache keeps one index entry per desire, not two. ReadDesires are not indexed.
func indexersOf(kind DesireKind) cache.Indexers {
	switch kind {
	case KindApplyDesire:
		return familyIndexers(applyFamily)
	case KindDeleteDesire:
		return familyIndexers(deleteFamily)
	}
	return nil
}

// familyIndexers index one kind's desires by family (none for a desire whose family is "").
func familyIndexers[T Desire](family func(T) string) cache.Indexers {
	return cache.Indexers{familyIndex: func(obj any) ([]string, error) {
		if d, ok := desireOf[T](obj); ok {
			if k := family(d); k != "" {
				return []string{k}, nil
			}
		}
		return nil, nil
	}}
}

// deleteRivals returns the DeleteDesires of cluster in deletes that target d's object.
func deleteRivals(deletes cache.Indexer, mapper meta.ResettableRESTMapper, cluster string, d *ApplyDesire) []*DeleteDesire {
	fam := applyFamily(d)
	if deletes == nil || fam == "" {
		return nil
	}
	objs, err := deletes.ByIndex(familyIndex, fam)
	if err != nil || len(objs) == 0 {
		return nil
	}
	var out []*DeleteDesire
	for _, o := range objs {
		if dd, ok := desireOf[*DeleteDesire](o); ok && isDeleteRival(mapper, cluster, d, dd) {
			out = append(out, dd)
		}
	}
	slices.SortFunc(out, func(a, b *DeleteDesire) int { return strings.Compare(a.DocumentID, b.DocumentID) })
	return out
}

// isDeleteRival reports whether dd, a DeleteDesire of cluster, targets d's object: the same
// family and, when d's kind maps to a resource, that resource.
func isDeleteRival(mapper meta.ResettableRESTMapper, cluster string, d *ApplyDesire, dd *DeleteDesire) bool {
	if dd.Invalid != "" || dd.Spec.ManagementCluster != cluster || deleteFamily(dd) != applyFamily(d) {
		return false
	}
	var obj struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if mapper == nil || d.Spec.KubeContent == nil || json.Unmarshal(d.Spec.KubeContent, &obj) != nil {
		return true
	}
	gv, err := schema.ParseGroupVersion(obj.APIVersion)
	if err != nil {
		return true
	}
	m, err := mapKind(mapper, gv.WithKind(obj.Kind))
	return err != nil || dd.Spec.TargetItem.Resource == m.Resource.Resource
}

// deleteConflictVerdict is d's refusal while DeleteDesires target its object.
func deleteConflictVerdict(d *ApplyDesire, rivals []*DeleteDesire) Verdict {
	ids := make([]string, len(rivals))
	for i, r := range rivals {
		ids[i] = r.DocumentID
	}
	return Refused(ReasonTargetConflict, fmt.Sprintf(
		"%s is the target of DeleteDesire %s, which wins while it exists: this ApplyDesire applies nothing until no DeleteDesire targets the object",
		objectName(d), strings.Join(ids, ", ")))
}

// appliesOfFamily returns the IDs of the ApplyDesires in applies that share the object family
// of obj (a DeleteDesire, or its tombstone), to look at again when it changes or goes.
func appliesOfFamily(applies cache.Indexer, obj any) []string {
	d, ok := desireOf[*DeleteDesire](obj)
	if !ok || applies == nil {
		return nil
	}
	fam := deleteFamily(d)
	if fam == "" {
		return nil
	}
	objs, err := applies.ByIndex(familyIndex, fam)
	if err != nil {
		return nil
	}
	var ids []string
	for _, o := range objs {
		if ad, ok := desireOf[*ApplyDesire](o); ok {
			ids = append(ids, ad.DocumentID)
		}
	}
	return ids
}

// deleteRivalHandler queues, on each change of a DeleteDesire, the ApplyDesires of its
// object (both the old and the new target's): the rule is evaluated again.
func deleteRivalHandler(applies func() cache.Indexer, enqueue func(string)) cache.ResourceEventHandler {
	queue := func(obj any) {
		for _, id := range appliesOfFamily(applies(), obj) {
			enqueue(id)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { queue(obj) },
		UpdateFunc: func(oldObj, newObj any) { queue(oldObj); queue(newObj) },
		DeleteFunc: queue,
	}
}
