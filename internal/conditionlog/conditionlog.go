// Package conditionlog writes the log lines an on-call person acts on about single desires:
// a desire entering or leaving Degraded, DriftConflict or TargetConflict, rate-limited per
// desire and across desires.
package conditionlog

import (
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// Log writes, at the default verbosity, the lines an on-call person acts on about
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
type Log struct {
	log logr.Logger
	// Every is how long after a desire's line its next change waits (New sets defaultEvery).
	Every time.Duration
	now   func() time.Time
	lines *rate.Limiter

	mu      sync.Mutex
	desires map[loggedDesire]*loggedState // desires whose logged state is not "" or that changed since
	dropped map[string]int                // state -> changes not logged by the global limit since the last flush
}

// loggedDesire names one desire across kinds.
type loggedDesire struct {
	kind api.DesireKind
	id   string
}

// loggedState is what the log last said about one desire, and what it has not said yet.
type loggedState struct {
	state   string    // "" (none of the states), "Degraded", "DriftConflict" or "TargetConflict"
	at      time.Time // when that was logged; zero: never
	pending *conditionChange
	changes int // changes seen since the last line
}

// conditionChange is a desire's condition as a status now says it: State is "" (none of the
// logged states), "Degraded", "DriftConflict" or "TargetConflict"; Reason and Message are the
// Successful condition's (the Degraded one's when degraded).
type conditionChange struct {
	State, Reason, Message string
}

// Defaults of Log.
const (
	defaultEvery = time.Minute
	lineLimit    = 5 // lines per second across desires
	lineBurst    = 50
	// messageMax shortens a condition's message in the log line.
	messageMax = 300
)

// New returns a Log writing to log, with clock now.
func New(log logr.Logger, now func() time.Time) *Log {
	return &Log{log: log, Every: defaultEvery, now: now,
		lines:   rate.NewLimiter(lineLimit, lineBurst),
		desires: map[loggedDesire]*loggedState{}, dropped: map[string]int{}}
}

// observe takes the condition c just recorded in a desire's status.
func (l *Log) observe(kind api.DesireKind, id string, c conditionChange) {
	ref := loggedDesire{kind: kind, id: id}
	state := c.State
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
	s.pending = &c
	l.emit(ref, s)
}

// Flush logs the pending changes whose time has come, and a summary of the lines the global
// limit held back. Call it periodically (the leader's term does, every 10 s).
func (l *Log) Flush() {
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
		for _, st := range []string{"Degraded", "DriftConflict", "TargetConflict", "", removed} {
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
func (l *Log) emit(ref loggedDesire, s *loggedState) {
	now := l.now()
	if !s.at.IsZero() && now.Sub(s.at) < l.Every {
		return // logged recently: the change waits for flush
	}
	c := s.pending
	if c.State == s.state {
		// It went back to what was logged: nothing to say, the flaps are in the next line.
		s.pending = nil
		return
	}
	if !l.lines.AllowN(now, 1) {
		l.dropped[c.State]++
		s.state, s.at, s.pending, s.changes = c.State, now, nil, 0
		l.forgetIfClear(ref, s)
		return
	}
	kv := []any{"kind", ref.kind, "desire", ref.id, "reason", c.Reason, "message", shortenLogMessage(c.Message, messageMax)}
	if s.changes > 1 {
		kv = append(kv, "changes", s.changes)
	}
	switch {
	case c.State == "":
		l.log.Info("desire left "+s.state, kv...)
	case s.state == "":
		l.log.Info("desire entered "+c.State, kv...)
	default:
		l.log.Info("desire left "+s.state+" for "+c.State, kv...)
	}
	s.state, s.at, s.pending, s.changes = c.State, now, nil, 0
	l.forgetIfClear(ref, s)
}

// forgetIfClear drops a desire whose logged state is none of the states, with nothing
// pending, once its last line is older than every (until then, a new entry waits like any
// change).
func (l *Log) forgetIfClear(ref loggedDesire, s *loggedState) {
	if s.state == "" && s.pending == nil && l.now().Sub(s.at) >= l.Every {
		delete(l.desires, ref)
	}
}

// forget drops what the log holds of a desire without a line: a change not logged yet is
// never logged.
func (l *Log) forget(kind api.DesireKind, id string) {
	l.mu.Lock()
	delete(l.desires, loggedDesire{kind: kind, id: id})
	l.mu.Unlock()
}

// reasonSpecDeleted is the reason of the line that says a desire whose spec was deleted left
// the state its last line said it entered (specGone).
const reasonSpecDeleted = "SpecDeleted"

// specGone drops a desire whose spec is gone. When its last line said it entered a state, it
// logs that it left it, reason reasonSpecDeleted, at once (no later line of the desire can
// follow it, so the per-desire wait does not apply) within the limit across desires (else it
// is summed up as "removed"): the log never leaves a deleted desire in a state. A change not
// logged yet is dropped: nothing was said of it.
func (l *Log) specGone(kind api.DesireKind, id string) {
	ref := loggedDesire{kind: kind, id: id}
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.desires[ref]
	delete(l.desires, ref)
	if s == nil || s.state == "" {
		return
	}
	if !l.lines.AllowN(l.now(), 1) {
		l.dropped[removed]++
		return
	}
	kv := []any{"kind", ref.kind, "desire", ref.id, "reason", reasonSpecDeleted, "message", "its spec was deleted: the applier no longer acts on it"}
	if s.changes > 0 {
		kv = append(kv, "changes", s.changes)
	}
	l.log.Info("desire left "+s.state, kv...)
}

// removed is the summary's key of the specGone lines the limit across desires held back.
const removed = "removed"

// shortenLogMessage cuts s to at most n bytes, marking the cut.
func shortenLogMessage(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
