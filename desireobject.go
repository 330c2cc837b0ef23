package kubeapplier

import "github.com/kube-applier-aws/kubeapplier/internal/stream"

// DesireOf returns the desire an informer's object holds: obj as an event handler added to
// DesireInformer.Informer receives it (on a delete, a cache.DeletedFinalStateUnknown
// included), or an object of its indexer; false when obj holds none. Desires are the api
// module's types, not runtime.Objects: the informers hold them in envelopes.
func DesireOf(obj any) (Desire, bool) { return stream.DesireOf(obj) }
