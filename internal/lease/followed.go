package lease

import (
	"context"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/ptr"
)

// Followed is the Lease of the election that runs the applier, read every retry period:
// its holder when the term began, and when that holder last renewed it.
type Followed struct {
	get      func(context.Context) (*coordinationv1.Lease, error)
	ns, nm   string
	holder   string
	mu       sync.Mutex
	renew    time.Time
	duration time.Duration
	lost     bool
}

// Follow reads the Lease namespace/name with get (each read bounded by timeout); it must be
// held. Errors: the read's, or one saying the Lease has no holder.
func Follow(ctx context.Context, get func(context.Context) (*coordinationv1.Lease, error), namespace, name string, timeout time.Duration) (*Followed, error) {
	f := &Followed{ns: namespace, nm: name, get: get}
	gctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	l, err := f.get(gctx)
	if err != nil {
		return nil, fmt.Errorf("FollowLease: get lease %s: %w", f.Name(), err)
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		return nil, fmt.Errorf("FollowLease: lease %s has no holder", f.Name())
	}
	f.holder = *l.Spec.HolderIdentity
	f.Observe(l)
	return f, nil
}

// Name is "namespace/name".
func (f *Followed) Name() string { return f.ns + "/" + f.nm }

// Holder is the identity that held the Lease when it was first read.
func (f *Followed) Holder() string { return f.holder }

// Observe records l; a Lease held by another holder than the term's is lost for good.
func (f *Followed) Observe(l *coordinationv1.Lease) (lost bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != f.holder {
		f.lost = true
	}
	if l.Spec.RenewTime != nil {
		f.renew = l.Spec.RenewTime.Time
	}
	if l.Spec.LeaseDurationSeconds != nil {
		f.duration = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return f.lost
}

// Margin is how long before the Lease could expire no call starts: a third of its duration
// (the slack client-go's defaults leave between the renew deadline and the lease duration,
// 5 s of 15), at least 500 ms; the Lease's own duration, not Options', is the manager's.
func (f *Followed) Margin() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return max(f.duration/3, 500*time.Millisecond)
}

// Valid reports whether a call started now ends margin before the Lease could expire.
func (f *Followed) Valid(margin time.Duration) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.lost && time.Now().Before(f.renew.Add(f.duration-margin))
}

// Expiry is the Lease's earliest expiry as last read, less safety.
func (f *Followed) Expiry() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.renew.Add(f.duration - safety(f.duration))
}

// Run reads the Lease every period until ctx ends or another holder has it (then it calls
// lost once). A failed read (the Lease deleted, the apiserver unreachable) keeps the last
// observation, which expires by itself: no call starts meanwhile, and the term goes on if the
// same holder renews it again.
func (f *Followed) Run(ctx context.Context, period, timeout time.Duration, lost func(why string)) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		gctx, cancel := context.WithTimeout(ctx, timeout)
		l, err := f.get(gctx)
		cancel()
		if err != nil {
			// Deleted (the manager re-creates it) or unreadable: the last observation expires
			// by itself, and the term goes on if the same holder renews it again.
			continue
		}
		if f.Observe(l) {
			lost(fmt.Sprintf("held by %q now", ptr.Deref(l.Spec.HolderIdentity, "")))
			return
		}
	}
}
