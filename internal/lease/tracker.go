// Package lease holds what the applier knows of a Lease: its own, renewed through client-go's
// leader election (Tracker: when it last renewed, whether the Lease is still its own), the span
// one campaign leads (Leadership), and a manager's Lease it follows (Followed). Every rule on
// how long a Lease can be trusted is here; the fencing term built on it is the root package's.
package lease

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
)

// Tracker is the applier's Lease lock, recording when the last successful write of the
// Lease (an acquire or a renewal) started: no other process can hold the Lease until
// LeaseDuration after that (client-go's standbys wait LeaseDuration from when they saw it
// change, which is later).
type Tracker struct {
	resourcelock.Interface
	last atomic.Int64 // unix nanoseconds; 0: never written
	// elsewhere: the last read found the Lease gone (deleted: a standby may create it at once,
	// without waiting for it to expire) or held by another; cleared by our own next write.
	elsewhere atomic.Bool
	// absentSince: when a read first found the Lease gone (unix nanoseconds; 0: found since).
	// It is created only createGrace later, so that a holder whose Lease was deleted sees it
	// gone (its watch, or its next renewal a RetryPeriod later at most) before another process
	// can lead: client-go's standbys create a missing Lease at once.
	absentSince atomic.Int64
	createGrace time.Duration
}

// NewTracker wraps lock; a missing Lease is created only once it has been seen missing
// for createGrace (the election's RetryPeriod).
func NewTracker(lock resourcelock.Interface, createGrace time.Duration) *Tracker {
	return &Tracker{Interface: lock, createGrace: createGrace}
}

// ErrJustAbsent refuses to create a Lease seen missing for less than the grace: client-go
// logs it and tries again a RetryPeriod later.
var ErrJustAbsent = errors.New("the Lease was found missing just now; it is created only a retry period later, once a holder whose Lease was deleted has seen it gone")

// Get reads the Lease, noting when it is gone or held by another process: from then on the
// term is not valid, whatever the last renewal (a deleted Lease is taken without waiting).
func (r *Tracker) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := r.Interface.Get(ctx)
	if err == nil {
		r.absentSince.Store(0)
	}
	switch {
	case apierrors.IsNotFound(err):
		r.elsewhere.Store(true)
		r.absentSince.CompareAndSwap(0, time.Now().UnixNano())
	case err == nil && rec.HolderIdentity != r.Identity():
		r.elsewhere.Store(true)
	}
	return rec, raw, err
}

func (r *Tracker) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	start := time.Now()
	if since := r.absentSince.Load(); since == 0 || start.Sub(time.Unix(0, since)) < r.createGrace {
		return ErrJustAbsent
	}
	err := r.Interface.Create(ctx, ler)
	if err == nil {
		r.last.Store(start.UnixNano())
		r.elsewhere.Store(ler.HolderIdentity != r.Identity())
	}
	return err
}

func (r *Tracker) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	start := time.Now()
	err := r.Interface.Update(ctx, ler)
	if err == nil {
		r.last.Store(start.UnixNano())
		r.elsewhere.Store(ler.HolderIdentity != r.Identity())
	}
	return err
}

// Held reports whether the Lease, as last read, written or watched, is ours.
func (r *Tracker) Held() bool { return !r.elsewhere.Load() }

// Watch follows the Lease until ctx ends: a Lease deleted (a standby may create it at once) or
// held by another ends the term's validity within the watch's latency, not at the leader's
// next renewal (up to RetryPeriod later). A failed watch is opened again after a second.
func (r *Tracker) Watch(ctx context.Context, leases coordinationv1client.LeaseInterface, name string) {
	for ctx.Err() == nil {
		w, err := leases.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		for ev := range w.ResultChan() {
			switch ev.Type {
			case watch.Deleted:
				r.elsewhere.Store(true)
			case watch.Added, watch.Modified:
				if l, ok := ev.Object.(*coordinationv1.Lease); ok && ptr.Deref(l.Spec.HolderIdentity, "") != r.Identity() {
					r.elsewhere.Store(true)
				}
			}
		}
		w.Stop()
	}
}

// Safety is kept between a call's deadline and the Lease's earliest expiry, for the
// clocks' drift between the holder and a standby: a tenth of the lease duration.
func Safety(leaseDuration time.Duration) time.Duration { return leaseDuration / 10 }

// expiry is the earliest instant another process could hold the Lease, less Safety;
// zero before the first write; now once the Lease was found gone or another's.
func (r *Tracker) Expiry(leaseDuration time.Duration) time.Time {
	last := r.last.Load()
	if last == 0 {
		return time.Time{}
	}
	if !r.Held() {
		return time.Now()
	}
	return time.Unix(0, last).Add(leaseDuration - Safety(leaseDuration))
}
