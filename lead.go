package kubeapplier

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
)

// lead runs leadership term t until ctx ends: it starts the term's desire informers (stream
// positions, then a Scan of each specs table), waits for them to sync, and reconciles. When
// it returns, the controllers have drained, the informers have stopped and a fresh set is
// ready for the next term.
//
// It returns an error wrapping fencing.ErrNewerTerm when a write met a newer term: another replica
// leads, and this one must not write on.
//
// The steps, in order (each undone, in reverse, when the term ends): enterTerm fences every
// call by t; the target watches and the prewarm start (startPrewarm); runInformers starts the
// term's informers; syncTerm waits for them, the status caches preloading beside them;
// beginLeading marks the replica leading; reconcileTerm runs the controllers, the heartbeat
// and the term's timers until the term ends.
func (a *Applier) lead(ctx context.Context, t term) error {
	ctx, endTerm := context.WithCancelCause(ctx)
	defer endTerm(nil)
	t, start := a.enterTerm(t, endTerm)
	defer a.logTermEnd(ctx, t, start)
	a.setPhase(phaseSyncing)
	defer a.setPhase(phaseStandby)
	// Target watches belong to a term: a standby holds none, and a desire deleted while
	// another replica led leaves nothing behind here. They start with the term, before its
	// informers: the first desires the specs Scan decodes prewarm the watches they need.
	a.watches.Begin(ctx)
	defer a.watches.End()
	pw := a.startPrewarm(ctx)
	defer pw.stop()
	inf := a.informers.Load()
	stopInformers := a.runInformers(ctx, inf)
	defer stopInformers()
	// Before the informers stop: the last heartbeat still counts this term's desires.
	defer a.stopHeartbeat(ctx, t)
	starts, synced := a.syncTerm(ctx, t, inf)
	if !synced {
		return lostTerm(ctx)
	}
	pw.end() // relists later in the term start no watch ahead of their desires
	took := time.Since(start)
	endLeading := a.beginLeading(took)
	defer endLeading()
	a.opts.Log.Info("reconciling", "managementCluster", a.opts.ManagementCluster, "term", t.Number, "synced", took.Round(time.Millisecond).String(),
		"applyDesires", len(inf.ApplyDesires.Lister.List()), "deleteDesires", inf.deleteCount(),
		"readDesires", len(inf.ReadDesires.Lister.List()), "workers", a.opts.Workers)
	a.reconcileTerm(ctx, t, starts)
	return lostTerm(ctx)
}

// enterTerm makes t the term every call is fenced by, and returns it with the time it
// started. The returned term ends (endTerm, the cause wrapping fencing.ErrNewerTerm) once a
// write meets a newer term, and then no call of it starts any more, in-flight reconciles
// included; the newest term met is kept (a.newestTerm) for the next term to be taken above
// it. From its return every cluster change of the default reconcilers is checked against t
// (a.led): a term is led only once the last one's reconciles have drained.
func (a *Applier) enterTerm(t term, endTerm context.CancelCauseFunc) (term, time.Time) {
	over, valid := new(atomic.Bool), t.Valid
	t.Valid = func() bool { return !over.Load() && (valid == nil || valid()) }
	t.Lost = func(err error) {
		if n := fencing.NewerTermOf(err); n > 0 {
			storeMax(&a.newestTerm, n)
		}
		if !over.Swap(true) {
			a.opts.Log.Info("a write met a newer leadership term: ending this term", "term", t.Number, "err", err.Error())
		}
		endTerm(err)
	}
	storeMax(&a.newestTerm, t.Number)
	start := time.Now()
	if t.Start.IsZero() {
		t.Start = start
	}
	a.led.Store(&t)
	if a.opts.LeaderElection {
		a.opts.Log.Info("leadership won: syncing", "managementCluster", a.opts.ManagementCluster, "term", t.Number,
			"identity", a.opts.Identity, "lease", a.opts.LeaseNamespace+"/"+a.opts.LeaseName)
	} else {
		a.opts.Log.Info("syncing (no election of its own: Options.LeaderElection off, e.g. under a manager's election)",
			"managementCluster", a.opts.ManagementCluster, "term", t.Number, "leader", t.Leader)
	}
	return t, start
}

// logTermEnd logs the end of term t, led since start, with its cause: a newer term met (term,
// the term's context, says so), a shutdown, or the Lease lost or passed on.
func (a *Applier) logTermEnd(term context.Context, t fencing.Term, start time.Time) {
	var cause string
	switch {
	case lostTerm(term) != nil:
		cause = "a write met a newer leadership term in DynamoDB: another replica leads"
	case a.stopping():
		cause = "shutdown: in-flight status writes finished"
		if a.opts.LeaderElection {
			cause += ", then the lease is released"
		}
	case a.opts.LeaderElection:
		cause = "lease lost: not renewed within the renew deadline; another replica may take over"
	default:
		cause = "the followed Lease may have passed to another holder"
	}
	a.opts.Log.Info("leadership term ended", "managementCluster", a.opts.ManagementCluster, "term", t.Number,
		"leader", t.Leader, "led", time.Since(start).Round(time.Millisecond).String(), "cause", cause)
}

// runInformers runs the term's informers inf until the returned stop is called (or term, the
// term's context, ends). stop returns once they have stopped, and puts a fresh, unstarted set
// in their place for the next term (client-go informers cannot be restarted).
func (a *Applier) runInformers(term context.Context, inf *Informers) (stop func()) {
	ctx, stopInformers := context.WithCancel(term)
	var informers sync.WaitGroup
	for _, i := range inf.All() {
		informers.Go(func() { i.RunWithContext(ctx) })
	}
	return func() {
		stopInformers()
		informers.Wait()
		next, err := a.newInformers()
		if err != nil { // cannot happen: the informers are new
			a.opts.Log.Error(err, "preparing the next term's informers")
		}
		a.useInformers(next)
	}
}

// termStarts are the three controllers' starts of one term (controller.Begin): each kind's
// status cache, preloading.
type termStarts struct {
	apply  *controller.TermStart[*ApplyDesire]
	delete *controller.TermStart[*DeleteDesire]
	read   *controller.TermStart[*ReadDesire]
}

// syncTerm waits for the term's informers inf to sync while each controller preloads its
// status cache for term t: the specs and status Scans overlap. It reports false when the term
// ended first; the controllers' starts are then abandoned.
func (a *Applier) syncTerm(ctx context.Context, t term, inf *Informers) (termStarts, bool) {
	s := termStarts{apply: a.apply.Begin(ctx, t), read: a.read.Begin(ctx, t)}
	if !a.opts.Tables.FoldedDeletes { // the folded layout has no DeleteDesire table to read
		s.delete = a.delete.Begin(ctx, t)
	}
	if err := inf.WaitForSync(ctx); err != nil {
		s.apply.Abandon()
		if s.delete != nil {
			s.delete.Abandon()
		}
		s.read.Abandon()
		return termStarts{}, false
	}
	return s, true
}

// beginLeading marks this replica leading (phaseLeading, kube_applier_leader; the sync's
// duration synced in kube_applier_leader_sync_seconds) and returns its undoing: the default
// reconcilers end their term, then the replica is marked standing by.
func (a *Applier) beginLeading(synced time.Duration) (end func()) {
	a.metrics.SetLeaderSync(synced)
	a.setPhase(phaseLeading)
	a.metrics.SetLeader(true)
	return func() {
		a.applyRec.EndTerm()
		a.readRec.EndTerm()
		a.setPhase(phaseStandby)
		a.metrics.SetLeader(false)
	}
}

// reconcileTerm runs term t until ctx, the term's context, ends: the three controllers from
// their starts, the heartbeat, the end of the prewarm after its grace and the condition log's
// flush. It returns once the controllers have drained.
func (a *Applier) reconcileTerm(ctx context.Context, t term, starts termStarts) {
	// The outcomes of another term answer nothing now: cleared before the heartbeat's first
	// look (each controller's run clears them too, but starts beside the heartbeat).
	a.apply.ClearOutcomes()
	a.delete.ClearOutcomes()
	a.read.ClearOutcomes()
	var wg sync.WaitGroup
	wg.Go(func() { a.apply.RunStarted(ctx, starts.apply) })
	if starts.delete != nil { // nil in the folded layout
		wg.Go(func() { a.delete.RunStarted(ctx, starts.delete) })
	}
	wg.Go(func() { a.read.RunStarted(ctx, starts.read) })
	wg.Go(func() { a.heartbeat.Run(ctx, t, t.Start) })
	wg.Go(func() { a.endPrewarmAfterGrace(ctx) })
	wg.Go(func() { a.flushConditionLog(ctx) })
	wg.Wait()
}

// stopHeartbeat writes term t's last heartbeat, saying the leader stopped
// (heartbeat.Writer.Stop), when the term ends by shutdown (Run's context ended, not a newer
// term met): its status writes have finished and its Lease is released only after it. term
// is the term's context, over by then; the write gets its own deadline.
func (a *Applier) stopHeartbeat(term context.Context, t fencing.Term) {
	if !a.stopping() || lostTerm(term) != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(term), a.opts.CallTimeout)
	defer cancel()
	if err := a.heartbeat.Stop(ctx, t, t.Start); err != nil {
		a.opts.Log.Info("the last heartbeat, saying the leader stopped, was not written", "term", t.Number, "err", err.Error())
		return
	}
	a.opts.Log.V(1).Info("last heartbeat written: the leader stopped", "term", t.Number)
}

// lostTerm returns why a term's context ended when a newer term ended it, else nil.
func lostTerm(ctx context.Context) error {
	if err := context.Cause(ctx); errors.Is(err, fencing.ErrNewerTerm) {
		return err
	}
	return nil
}

// storeMax raises v to n.
func storeMax(v *atomic.Int64, n int64) {
	for {
		cur := v.Load()
		if n <= cur || v.CompareAndSwap(cur, n) {
			return
		}
	}
}

// conditionLogFlush is how often a term logs the desire condition changes held back by the
// per-desire rate limit (internal/conditionlog).
const conditionLogFlush = 10 * time.Second

// flushConditionLog logs the condition changes held back every conditionLogFlush, and once
// more when ctx, the term's context, ends.
func (a *Applier) flushConditionLog(ctx context.Context) {
	tick := time.NewTicker(conditionLogFlush)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			a.conditions.Flush()
			return
		case <-tick.C:
			a.conditions.Flush()
		}
	}
}

// term is the leadership term (internal/fencing: every rule that fences the applier's writes).
type term = fencing.Term

// unelected is the term of parts run on their own in tests: no number, no Lease.
var unelected = term{CallTimeout: defaultCallTimeout}

// stopping reports whether Run's context ended.
func (a *Applier) stopping() bool { c := a.runCtx.Load(); return c != nil && (*c).Err() != nil }
