package rivals

import (
	"context"
	"fmt"
	"sync"
)

// Object names one object of the cluster for ObjectLocks: its group, resource, namespace and
// name. The version is left out: every version names the same object.
type Object struct{ Group, Resource, Namespace, Name string }

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
		return nil, fmt.Errorf("waiting for another section on %s/%s %s/%s: %w", obj.Group, obj.Resource, obj.Namespace, obj.Name, ctx.Err())
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
