package rivals

import (
	"k8s.io/client-go/tools/cache"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/stream"
)

// DeleteHandler is the DeleteDesire informer's handler that queues, on each change of a
// DeleteDesire, the ApplyDesires of its object (both the old and the new target's) through
// enqueue: the rule is evaluated again. applies returns the current ApplyDesire indexer.
func DeleteHandler(applies func() cache.Indexer, enqueue func(id string)) cache.ResourceEventHandler {
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

// appliesOfFamily returns the documentIDs of the ApplyDesires in applies that share the object
// family of obj (a DeleteDesire, or its tombstone).
func appliesOfFamily(applies cache.Indexer, obj any) []string {
	d, ok := stream.As[*api.DeleteDesire](obj)
	if !ok {
		return nil
	}
	var ids []string
	for _, ad := range ofFamily[*api.ApplyDesire](applies, deleteFamily(d)) {
		ids = append(ids, ad.DocumentID)
	}
	return ids
}
