package kubeapplier

import (
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
)

// conditionLog writes, at the default verbosity, the lines an on-call person acts on about
// single desires: a desire entering or leaving Degraded (the applier failed at its job),
// DriftConflict (another writer fights over the applied fields) or TargetConflict (another
// ApplyDesire targets the same object).
//
// It is rate-limited per desire: once a desire's state was logged, its next change is logged
// no sooner than every later, and the changes in between are counted ("changes", the flaps of
// a fight) in that next line; flush logs the pending ones whose time has come, so a desire
// that left Degraded is never left logged as Degraded. Across desires, at most burst lines at
// once and limit per second: the others are counted and summed up in one line per flush
// (kube_applier_desires has every count).
type conditionLog struct {
	log   logr.Logger
	every time.Duration
	now   func() time.Time
	lines *rate.Limiter

	mu      sync.Mutex
	desires map[loggedDesire]*loggedState // desires whose logged state is not "" or that changed since
	dropped map[string]int                // state -> changes not logged by the global limit since the last flush
}

// loggedDesire names one desire across kinds.
type loggedDesire struct {
	kind DesireKind
	id   string
}

// loggedState is what the log last said about one desire, and what it has not said yet.
type loggedState struct {
	state   string    // "" (none of the states), "Degraded", "DriftConflict" or "TargetConflict"
	at      time.Time // when that was logged; zero: never
	pending *conditionChange
	changes int // changes seen since the last line
}

// conditionChange is a desire's newest change not logged yet.
type conditionChange struct {
	state, reason, message string
}

// Defaults of conditionLog.
const (
	conditionLogEvery = time.Minute
	conditionLogLimit = 5 // lines per second across desires
	conditionLogBurst = 50
	// conditionLogMessageMax shortens a condition's message in the log line.
	conditionLogMessageMax = 300
)

func newConditionLog(log logr.Logger, now func() time.Time) *conditionLog {
	return &conditionLog{log: log, every: conditionLogEvery, now: now,
		lines:   rate.NewLimiter(conditionLogLimit, conditionLogBurst),
		desires: map[loggedDesire]*loggedState{}, dropped: map[string]int{}}
}

// stateOf is the logged state of a verdict.
func stateOf(v Verdict) string {
	switch {
	case v.degraded:
		return "Degraded"
	case v.reason == ReasonDriftConflict, v.reason == ReasonTargetConflict:
		return v.reason
	}
	return ""
}

// observe takes the verdict just recorded in a desire's status; Pending means its spec is
// gone.
func (l *conditionLog) observe(kind DesireKind, id string, v Verdict) {
	if !v.decided {
		l.forget(kind, id)
		return
	}
	ref := loggedDesire{kind: kind, id: id}
	state := stateOf(v)
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.desires[ref]
	if s == nil {
		if state == "" {
			return // never logged, nothing to say
		}
		s = &loggedState{}
		l.desires[ref] = s
	}
	if state == s.state && s.pending == nil {
		return
	}
	s.changes++
	s.pending = &conditionChange{state: state, reason: v.reason, message: v.message}
	l.emit(ref, s)
}

// flush logs the pending changes whose time has come, and a summary of the lines the global
// limit held back. Call it periodically (the leader's term does, every 10 s).
func (l *conditionLog) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	refs := make([]loggedDesire, 0, len(l.desires))
	for ref, s := range l.desires {
		if s.pending != nil {
			refs = append(refs, ref)
		} else {
			l.forgetIfClear(ref, s)
		}
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].id < refs[j].id })
	for _, ref := range refs {
		l.emit(ref, l.desires[ref])
	}
	if len(l.dropped) > 0 {
		kv := []any{}
		for _, st := range []string{"Degraded", "DriftConflict", "TargetConflict", ""} {
			if n := l.dropped[st]; n > 0 {
				name := st
				if name == "" {
					name = "recovered"
				}
				kv = append(kv, name, n)
			}
		}
		l.log.Info("desire condition changes not logged one by one (log rate limit); see kube_applier_desires", kv...)
		l.dropped = map[string]int{}
	}
}

// emit logs s's pending change when its desire's last line is old enough and the global limit
// allows; l.mu is held.
func (l *conditionLog) emit(ref loggedDesire, s *loggedState) {
	now := l.now()
	if !s.at.IsZero() && now.Sub(s.at) < l.every {
		return // logged recently: the change waits for flush
	}
	c := s.pending
	if c.state == s.state {
		// It went back to what was logged: nothing to say, the flaps are in the next line.
		s.pending = nil
		return
	}
	if !l.lines.AllowN(now, 1) {
		l.dropped[c.state]++
		s.state, s.at, s.pending, s.changes = c.state, now, nil, 0
		l.forgetIfClear(ref, s)
		return
	}
	kv := []any{"kind", ref.kind, "desire", ref.id, "reason", c.reason, "message", shortenLogMessage(c.message, conditionLogMessageMax)}
	if s.changes > 1 {
		kv = append(kv, "changes", s.changes)
	}
	switch {
	case c.state == "":
		l.log.Info("desire left "+s.state, kv...)
	case s.state == "":
		l.log.Info("desire entered "+c.state, kv...)
	default:
		l.log.Info("desire left "+s.state+" for "+c.state, kv...)
	}
	s.state, s.at, s.pending, s.changes = c.state, now, nil, 0
	l.forgetIfClear(ref, s)
}

// forgetIfClear drops a desire whose logged state is none of the states, with nothing
// pending, once its last line is older than every (until then, a new entry waits like any
// change).
func (l *conditionLog) forgetIfClear(ref loggedDesire, s *loggedState) {
	if s.state == "" && s.pending == nil && l.now().Sub(s.at) >= l.every {
		delete(l.desires, ref)
	}
}

// forget drops a desire whose spec is gone.
func (l *conditionLog) forget(kind DesireKind, id string) {
	l.mu.Lock()
	delete(l.desires, loggedDesire{kind: kind, id: id})
	l.mu.Unlock()
}

// shortenLogMessage cuts s to at most n bytes, marking the cut.
func shortenLogMessage(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
