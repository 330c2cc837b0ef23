package kubeapplier

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// desireObject is the runtime.Object client-go's informer machinery (reflector, store,
// indexers, event handlers) holds for one desire: the desire types are the api module's,
// which knows nothing of apimachinery. Its name is the desire's documentID, its generation
// the spec's version.
type desireObject struct{ d Desire }

func (o *desireObject) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (o *desireObject) DeepCopyObject() runtime.Object {
	return &desireObject{o.d.DeepCopyDesire()}
}

// GetObjectMeta exposes the documentID as the name so client-go caches key desires by ID.
// The returned value is a copy: setting fields on it changes nothing.
func (o *desireObject) GetObjectMeta() metav1.Object {
	m := o.d.Meta()
	return &metav1.ObjectMeta{Name: m.DocumentID, Generation: m.Version, CreationTimestamp: metav1.NewTime(m.CreateTime)}
}

// desireFrom returns the desire an informer's object holds (obj as an event handler or an
// indexer sees it, a cache.DeletedFinalStateUnknown included), or false when it holds none.
func desireFrom(obj any) (Desire, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if o, ok := obj.(*desireObject); ok && o != nil && o.d != nil {
		return o.d, true
	}
	return nil, false
}

// desireOf is desireFrom for one kind: false when obj holds no T.
func desireOf[T Desire](obj any) (T, bool) {
	d, ok := desireFrom(obj)
	t, isT := d.(T)
	return t, ok && isT
}
