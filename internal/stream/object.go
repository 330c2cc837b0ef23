package stream

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// desireObject is the runtime.Object client-go's informer machinery (reflector, store, indexers,
// event handlers) holds for one desire: the desire types are the api module's, which knows
// nothing of apimachinery. Its name is the desire's documentID, its generation the spec's
// version.
type desireObject struct{ d api.Desire }

// GetObjectKind implements runtime.Object: a desire has no GVK.
func (o *desireObject) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object.
func (o *desireObject) DeepCopyObject() runtime.Object { return &desireObject{o.d.DeepCopyDesire()} }

// GetObjectMeta exposes the documentID as the name so client-go caches key desires by ID.
// The returned value is a copy: setting fields on it changes nothing.
func (o *desireObject) GetObjectMeta() metav1.Object {
	m := o.d.Meta()
	return &metav1.ObjectMeta{Name: m.DocumentID, Generation: m.Version, CreationTimestamp: metav1.NewTime(m.CreateTime)}
}

// Wrap returns d as an informer holds it, for the tests of other packages that feed
// informer handlers and indexers (no production caller outside this package builds one).
func Wrap(d api.Desire) runtime.Object { return &desireObject{d} }

// DesireOf returns the desire an informer's object holds (obj as an event handler or an
// indexer sees it, a cache.DeletedFinalStateUnknown included), or false when it holds none.
func DesireOf(obj any) (api.Desire, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if o, ok := obj.(*desireObject); ok && o != nil && o.d != nil {
		return o.d, true
	}
	return nil, false
}

// As is DesireOf for one kind: false when obj holds no T.
func As[T api.Desire](obj any) (T, bool) {
	d, ok := DesireOf(obj)
	t, isT := d.(T)
	return t, ok && isT
}

// objectList is the runtime.Object a List returns to the reflector.
type objectList struct {
	metav1.ListMeta
	Items []*desireObject
}

// GetObjectKind implements runtime.Object.
func (l *objectList) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object.
func (l *objectList) DeepCopyObject() runtime.Object {
	out := &objectList{ListMeta: *l.ListMeta.DeepCopy(), Items: make([]*desireObject, len(l.Items))}
	for i, o := range l.Items {
		out.Items[i] = o.DeepCopyObject().(*desireObject)
	}
	return out
}
