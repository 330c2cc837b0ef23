package rivals

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// Object names one object of the cluster for ObjectLocks: its group, namespace and name, as
// the familyIndex spells them for both an ApplyDesire (a kind) and a DeleteDesire (a
// resource). Two kinds of one group with one name share a lock: harmless, rare.
type Object struct{ Group, Namespace, Name string }

// ApplyObject is the Object an ApplyDesire's content names; false when it names none.
func ApplyObject(ad *api.ApplyDesire) (Object, bool) {
	parts := strings.SplitN(ObjectKey(ad), "/", 4)
	if len(parts) != 4 {
		return Object{}, false
	}
	return Object{Group: parts[0], Namespace: parts[2], Name: parts[3]}, true
}

// TargetObject is the Object a DeleteDesire's (or ReadDesire's) targetItem names.
func TargetObject(t api.TargetItem) Object {
	return Object{Group: t.Group, Namespace: t.Namespace, Name: t.Name}
}

// ObjectLocks serializes, per object, the sections of this process that must not interleave:
// a DeleteDesire's confirmation of its spec and its delete call, and an ApplyDesire's apply
// (made after its rival check confirmed no DeleteDesire of the object exists). Without it, an
// apply that lands between that confirmation and the delete call (a no-op apply included,
// which leaves the object's resourceVersion as it was) is deleted under the ApplyDesire that
// says it applied. The zero value is ready; an object's entry lives only while it is held or
// waited for.
type ObjectLocks struct {
	mu   sync.Mutex
	held map[Object]*objectLock
}

// objectLock is one object's lock: a one-slot channel, so a wait can end with its context.
type objectLock struct {
	slot chan struct{}
	refs int // holders and waiters
}

// Lock takes obj's lock, waiting while another section holds it, and returns its release
// (idempotent). An error, wrapping ctx's, when ctx ends first: nothing is held then.
func (l *ObjectLocks) Lock(ctx context.Context, obj Object) (unlock func(), err error) {
	l.mu.Lock()
	if l.held == nil {
		l.held = map[Object]*objectLock{}
	}
	e := l.held[obj]
	if e == nil {
		e = &objectLock{slot: make(chan struct{}, 1)}
		l.held[obj] = e
	}
	e.refs++
	l.mu.Unlock()
	select {
	case e.slot <- struct{}{}:
	case <-ctx.Done():
		l.release(obj, e)
		return nil, fmt.Errorf("waiting for another section on %s %s/%s: %w", obj.Group, obj.Namespace, obj.Name, ctx.Err())
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			<-e.slot
			l.release(obj, e)
		})
	}, nil
}

// release drops one reference to obj's entry, and the entry with the last.
func (l *ObjectLocks) release(obj Object, e *objectLock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.refs--; e.refs == 0 {
		delete(l.held, obj)
	}
}

// Len is how many objects are held or waited for.
func (l *ObjectLocks) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.held)
}
