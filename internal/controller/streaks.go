package controller

import (
	"fmt"
	"sync"
	"time"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// SameFailureLimit is how many times one spec version may fail the same way, while other
// desires succeed, before the failure is taken for the desire's and no longer for the
// applier's.
const SameFailureLimit = 5

// failureStreaks records, per desire, the run of identical transient failures of one spec
// version, and when any desire last succeeded. A 500 from the apiserver is usually the
// cluster's trouble, but some bad manifests get one too; repeated for the same spec version,
// with the same message, while other desires are carried out, it is the desire's: Degraded
// would blame the applier and back-off retries would go on for ever.
type failureStreaks struct {
	mu          sync.Mutex
	byID        map[string]*failureStreak
	lastSuccess time.Time
}

type failureStreak struct {
	created time.Time // the spec's incarnation
	version int64
	message string
	count   int
	since   time.Time
}

// judge returns v, or, once the same spec version has failed the same way SameFailureLimit
// times and some desire succeeded since the first of them, v as a refusal (not Degraded,
// retried only on a spec change or the periodic resync).
func (f *failureStreaks) judge(m *api.DynamoDBMetadata, v Verdict, now time.Time) Verdict {
	f.mu.Lock()
	defer f.mu.Unlock()
	if v.successful {
		f.lastSuccess = now
		delete(f.byID, m.DocumentID)
		return v
	}
	if !v.degraded || v.reason != api.ReasonKubeAPIError {
		delete(f.byID, m.DocumentID)
		return v
	}
	if f.byID == nil {
		f.byID = map[string]*failureStreak{}
	}
	s := f.byID[m.DocumentID]
	if s == nil || s.version != m.Version || !s.created.Equal(m.CreateTime) || s.message != v.message {
		s = &failureStreak{created: m.CreateTime, version: m.Version, message: v.message, since: now}
		f.byID[m.DocumentID] = s
	}
	s.count++
	if s.count < SameFailureLimit || !f.lastSuccess.After(s.since) {
		return v
	}
	out := Refused(v.reason, fmt.Sprintf("%s (failed the same way %d times for spec version %d while other desires succeeded: "+
		"taken for a problem of the desire, retried when the spec changes or at the periodic resync)", v.message, s.count, m.Version))
	out.applied = v.applied
	return out
}

func (f *failureStreaks) forget(id string) {
	f.mu.Lock()
	delete(f.byID, id)
	f.mu.Unlock()
}
