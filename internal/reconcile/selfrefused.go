package reconcile

import (
	"sync"
	"time"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/stream"
)

// A desire the reconciler refuses for its own spec (PreCheckFailed: a JSONPath that does not
// parse, a scope mismatch, ...) applies nothing until its spec changes, so it must not keep
// its object from the other desires that target it (docs/design.md "Two desires, one
// object"): the rival rules (rivals.Rules.SelfRefused) skip it. Which desire is refused is
// only known once its reconciler has judged it, so the refusal is recorded per spec (version
// and incarnation) in this term, and the others of its object are looked at again whenever it
// starts or stops being refused.

// selfRefusals are the ApplyDesires (by documentID) whose reconciler refused their current
// spec, in this term. An entry of a deleted desire stays until the term ends (a new spec of
// the same documentID replaces or clears it); it refuses nobody, since nothing targets by it.
type selfRefusals struct {
	mu   sync.Mutex
	byID map[string]specOf
}

// specOf is one spec of a desire: its version in its incarnation.
type specOf struct {
	version int64
	created time.Time
}

func specOfDesire(ad *api.ApplyDesire) specOf {
	return specOf{version: ad.Version, created: ad.CreateTime}
}

// refused reports whether ad's spec (this version of this incarnation) was refused for
// itself.
func (s *selfRefusals) refused(ad *api.ApplyDesire) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.byID[ad.DocumentID]
	return ok && at == specOfDesire(ad)
}

// set records whether ad's spec is refused for itself, and reports whether that changed
// whether ad is a rival.
func (s *selfRefusals) set(ad *api.ApplyDesire, refused bool) (changed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, had := s.byID[ad.DocumentID]
	was := had && at == specOfDesire(ad)
	switch {
	case refused:
		if s.byID == nil {
			s.byID = map[string]specOf{}
		}
		s.byID[ad.DocumentID] = specOfDesire(ad)
	case had:
		delete(s.byID, ad.DocumentID)
	}
	// An entry of an earlier spec was no longer in force: ad was a rival already.
	return was != refused
}

// reset forgets every desire (a new term judges afresh).
func (s *selfRefusals) reset() {
	s.mu.Lock()
	s.byID = nil
	s.mu.Unlock()
}

// selfRefused is the verdict of a reconciler that refuses the desire for its own spec.
func selfRefused(v controller.Verdict) bool {
	return !v.IsPending() && v.Reason() == api.ReasonPreCheckFailed
}

// Judged records the reconciler's verdict v on ad (controller.ObjectRules): a desire refused
// for its own spec is no rival until its spec changes. It returns the other desires of ad's
// object to look at again when that changed whether ad is a rival, and whether the keeper's
// note still holds (a desire refused for itself kept the object against nobody).
func (c *Conflicts) Judged(ad *api.ApplyDesire, v controller.Verdict) (again []string, keeps bool) {
	refused := selfRefused(v)
	if c.selfRefused.set(ad, refused) {
		if rules := c.rules.Load(); rules != nil {
			again = rules.Others(stream.Wrap(ad))
		}
	}
	return again, !refused
}
