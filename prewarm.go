package kubeapplier

import (
	"context"
	"sync"
	"time"
)

// prewarmMax is how many of the ApplyDesires a new term's specs Scan decodes start the
// watches of their targets' resources before the listing ends (prewarm): a first page meets
// every common kind, and parsing every desire's content twice would cost more than the
// watches save.
const prewarmMax = 1000

// prewarmer takes the desires of one term's specs Scan to the prewarm of their watches, in a
// goroutine of its own: the Scan does not wait for the parse or the RESTMapper.
type prewarmer struct {
	mu      sync.Mutex
	stopped bool
	left    int
	desires chan *ApplyDesire
	done    chan struct{}
}

// startPrewarm starts term's prewarmer; Applier.prewarm feeds it until stop.
func (a *Applier) startPrewarm(term context.Context) *prewarmer {
	p := newPrewarmer(term, a.applyRec.Prewarm)
	a.prewarming.Store(p)
	return p
}

// newPrewarmer returns a prewarmer handing the first prewarmMax desires offered to start,
// with term, in a goroutine of its own.
func newPrewarmer(term context.Context, start func(context.Context, *ApplyDesire)) *prewarmer {
	p := &prewarmer{left: prewarmMax, desires: make(chan *ApplyDesire, prewarmMax), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for d := range p.desires {
			if term.Err() == nil {
				start(term, d)
			}
		}
	}()
	return p
}

// offer hands d over unless the prewarmer stopped or took prewarmMax desires already.
func (p *prewarmer) offer(d *ApplyDesire) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || p.left <= 0 {
		return
	}
	p.left--
	p.desires <- d // never blocks: prewarmMax fit
}

// end takes no more desires (idempotent); those handed over are still prewarmed, within the
// term, without the caller waiting for them.
func (p *prewarmer) end() {
	p.mu.Lock()
	if !p.stopped {
		p.stopped = true
		close(p.desires)
	}
	p.mu.Unlock()
}

// stop is end, then waits for the desires handed over.
func (p *prewarmer) stop() {
	p.end()
	<-p.done
}

// prewarm hands d, when an ApplyDesire of this management cluster (decoded, no spec attribute
// this applier does not know: it is refused, nothing read for it) that the term's specs Scan
// has just decoded, to the term's prewarmer.
func (a *Applier) prewarm(d Desire) {
	ad, ok := d.(*ApplyDesire)
	p := a.prewarming.Load()
	if ok && p != nil && ad.Invalid == "" && len(ad.Spec.UnknownAttributes()) == 0 && ad.Spec.ManagementCluster == a.opts.ManagementCluster {
		p.offer(ad)
	}
}

// prewarmGrace is how long after the informers synced a prewarmed target watch is kept
// without a desire (target.Watches.EndPrewarm): the first pass has reached most desires by
// then; a watch stopped before its desires were reached is listed again when they are.
const prewarmGrace = 5 * time.Minute

// endPrewarmAfterGrace ends the prewarm of target watches (target.Watches.EndPrewarm) once
// prewarmGrace has passed in the term, unless ctx, the term's context, ends first: by then
// the first pass has registered most desires with their watches.
func (a *Applier) endPrewarmAfterGrace(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(a.wiring.prewarmGrace):
		a.watches.EndPrewarm()
	}
}
