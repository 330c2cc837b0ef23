// Package lease holds what the applier knows of a Lease: the campaigns for its own (Campaign:
// client-go's leader election, each won election one term handed to Lead, released only once
// the term's work is done), its renewals (tracker: when it last renewed, whether the Lease is
// still its own), the span one campaign leads (leadership), and a manager's Lease it follows
// (Followed). Every rule on how long a Lease can be trusted is here; the fencing term built on
// it is internal/fencing's.
package lease

import (
	"context"
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

// tracker is the applier's Lease lock, recording when the last successful write of the
// Lease (an acquire or a renewal) started: no other process can hold the Lease until
// LeaseDuration after that (client-go's standbys wait LeaseDuration from when they saw it
// change, which is later).
type tracker struct {
	resourcelock.Interface
	last atomic.Int64 // unix nanoseconds; 0: never written
	// elsewhere: the last read found the Lease gone (deleted: a standby may create it at once,
	// without waiting for it to expire) or held by another; cleared by our own next write.
	elsewhere atomic.Bool
	// absentSince: when a read first found the Lease gone (unix nanoseconds; 0: not missing
	// since). client-go's standbys create a missing Lease at once, but a holder whose Lease
	// was deleted may not know (its watch may lag or be forbidden, its renewal be slow, it may
	// be cut off) and calls it started stay valid until its expiry. A missing Lease is
	// therefore treated as one last renewed when it was first seen missing: it is created only
	// leaseDuration later, by when every holder's expiry has passed (their last renewal began
	// before the deletion), as client-go's standbys wait for a Lease that is not renewed.
	absentSince   atomic.Int64
	leaseDuration time.Duration
	waiting       func(left time.Duration)
}

// newTracker wraps lock; a missing Lease is created only once it has been seen missing for
// leaseDuration (the election's LeaseDuration): Create waits until then, calling waiting
// (unless nil) with the time left when it starts to wait.
func newTracker(lock resourcelock.Interface, leaseDuration time.Duration, waiting func(left time.Duration)) *tracker {
	return &tracker{Interface: lock, leaseDuration: leaseDuration, waiting: waiting}
}

// Get reads the Lease, noting when it is gone or held by another process: from then on the
// term is not valid, whatever the last renewal (client-go's standbys take a deleted Lease at once).
func (r *tracker) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
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

// Create creates the Lease once it has been missing for the lease duration, waiting until
// then (ctx's error if it ends first); a Lease another process created meanwhile makes it fail
// as AlreadyExists. client-go calls it only after a Get found the Lease missing.
func (r *tracker) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	since := r.absentSince.Load()
	if since == 0 { // not seen missing by this tracker's own read: time the absence from now
		r.absentSince.CompareAndSwap(0, time.Now().UnixNano())
		since = r.absentSince.Load()
	}
	if left := time.Until(time.Unix(0, since).Add(r.leaseDuration)); left > 0 {
		if r.waiting != nil {
			r.waiting(left)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(left):
		}
	}
	start := time.Now()
	err := r.Interface.Create(ctx, ler)
	if err == nil {
		r.last.Store(start.UnixNano())
		r.elsewhere.Store(ler.HolderIdentity != r.Identity())
		r.absentSince.Store(0) // the next absence is timed afresh
	}
	return err
}

func (r *tracker) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	start := time.Now()
	err := r.Interface.Update(ctx, ler)
	if err == nil {
		r.last.Store(start.UnixNano())
		r.elsewhere.Store(ler.HolderIdentity != r.Identity())
		r.absentSince.Store(0)
	}
	return err
}

// Held reports whether the Lease, as last read, written or watched, is ours.
func (r *tracker) Held() bool { return !r.elsewhere.Load() }

// Watch follows the Lease until ctx ends: a Lease deleted or held by another ends the term's
// validity within the watch's latency, not at the leader's next renewal. A failed watch is
// opened again after a second; failed (unless nil) hears of each failure whose message differs
// from the last one's (RBAC must grant watch on the Lease; a deletion is then seen at the next
// renewal, and the lease-duration wait before a re-creation still keeps two terms apart).
func (r *tracker) Watch(ctx context.Context, leases coordinationv1client.LeaseInterface, name string, failed func(error)) {
	last := ""
	for ctx.Err() == nil {
		w, err := leases.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
		if err != nil {
			if failed != nil && err.Error() != last && ctx.Err() == nil {
				failed(err)
			}
			last = err.Error()
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		last = ""
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

// safety is kept between a call's deadline and the Lease's earliest expiry, for the
// clocks' drift between the holder and a standby: a tenth of the lease duration.
func safety(leaseDuration time.Duration) time.Duration { return leaseDuration / 10 }

// expiry is the earliest instant another process could hold the Lease, less safety;
// zero before the first write; now once the Lease was found gone or another's.
func (r *tracker) Expiry(leaseDuration time.Duration) time.Time {
	last := r.last.Load()
	if last == 0 {
		return time.Time{}
	}
	if !r.Held() {
		return time.Now()
	}
	return time.Unix(0, last).Add(leaseDuration - safety(leaseDuration))
}
