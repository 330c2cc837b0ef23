package target

import "github.com/kube-applier-aws/kubeapplier/api"

// Observe registers desire id's interest in t, as a desire whose object is not (or no longer)
// as an apply of ours left it: a CreateOnly or ReadOnly ApplyDesire (#40), which reads its
// target's existence from the watch and is woken when the object appears, changes or goes;
// an apply refused for a conflict, looked at again when the object changes. Any apply record
// of id is dropped (its next apply is not a drift repair). It returns the watch's sighting of
// t and whether the object exists; known is false while the watch cannot answer (not synced
// yet, or failing): the caller reads the object itself.
func (dw *DriftWatch) Observe(id string, t api.TargetItem, what Interest) (st *Sighting, exists, known bool) {
	dw.mu.Lock()
	delete(dw.records, id)
	dw.mu.Unlock()
	w := dw.watches.Watch(Ref{api.KindApplyDesire, id}, t, what)
	if w.Err() != nil || !w.Synced() {
		return nil, false, false
	}
	st, exists = w.Lookup(t.Namespace, t.Name)
	return st, exists, true
}
