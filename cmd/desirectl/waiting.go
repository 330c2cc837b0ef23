package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// defaultTimeout bounds waits.
const defaultTimeout = 60 * time.Second

// conditionWant is what --for asks: a condition type and status.
type conditionWant struct {
	typ    string
	status string
}

var successfulTrue = conditionWant{typ: api.ConditionSuccessful, status: api.ConditionTrue}

func (w conditionWant) String() string { return w.typ + "=" + string(w.status) }

// parseFor parses --for=condition=TYPE[=STATUS]; STATUS defaults to True.
func parseFor(s string) (conditionWant, error) {
	rest, ok := strings.CutPrefix(s, "condition=")
	if !ok || rest == "" {
		return conditionWant{}, usageErrorf("--for must be condition=TYPE[=STATUS], e.g. condition=Successful, not %q", s)
	}
	typ, status, hasStatus := strings.Cut(rest, "=")
	w := conditionWant{typ: typ, status: api.ConditionTrue}
	if hasStatus {
		switch strings.ToLower(status) {
		case "true":
		case "false":
			w.status = api.ConditionFalse
		case "unknown":
			w.status = api.ConditionUnknown
		default:
			return conditionWant{}, usageErrorf("--for condition status must be True, False or Unknown, not %q", status)
		}
	}
	for _, known := range []string{api.ConditionSuccessful, api.ConditionDegraded, api.ConditionReady} {
		if strings.EqualFold(typ, known) {
			w.typ = known
		}
	}
	return w, nil
}

// waitItem is one desire being waited for.
type waitItem struct {
	tables desireTables
	id     string
	label  string               // "ConfigMap default/foo"
	spec   api.DynamoDBMetadata // the spec document the status must answer
	// applyType is the waited ApplyDesire's spec.type (ApplyType), "" for other kinds: in the
	// folded layout a later version may be of the other type, and answers nothing of this wait.
	applyType string
	last      api.Desire // the last status document read; nil when there was none
}

// newWaitItem waits for the status of the spec document spec (as stored) of tables' kind.
func newWaitItem(tables desireTables, spec api.Desire, label string) *waitItem {
	m := *spec.Meta()
	w := &waitItem{tables: tables, id: m.DocumentID, label: label, spec: m}
	if ad, ok := spec.(*api.ApplyDesire); ok {
		w.applyType = ad.Spec.ApplyType()
	}
	return w
}

func (w *waitItem) ref() string { return desireRef(w.tables.desireKind(), w.id) }

// evaluate compares status document d with want, for w's spec. A status that answers a later
// version (or incarnation) of the desire as another type (otherType) fails the wait: whatever
// it says is not of the deletion, or apply, waited for, and the desire no longer asks for it.
func (w *waitItem) evaluate(d api.Desire, want conditionWant) waitState {
	if _, other := w.otherType(d, want); other {
		return waitFailed
	}
	return evaluate(d, &w.spec, want)
}

// otherType returns the spec.type of the ApplyDesire status document d when d answers w's
// spec or a later one (answers) and its type differs from the waited one's: a later version,
// or incarnation, written by another delete or apply (the folded layout). A status of an
// earlier spec is only not yet answered; a status without its spec (left out for size) tells
// no type.
func (w *waitItem) otherType(d api.Desire, want conditionWant) (string, bool) {
	ad, ok := d.(*api.ApplyDesire)
	if !ok || w.applyType == "" || ad.Spec.ManagementCluster == "" {
		return "", false
	}
	if c := ad.Status.Condition(want.typ); c == nil || !answers(&ad.Status.CommonStatus, c, &w.spec) {
		return "", false
	}
	t := ad.Spec.ApplyType()
	return t, t != w.applyType
}

// desireRef is "applydesire/<id>".
func desireRef(kind api.DesireKind, id string) string {
	return strings.ToLower(string(kind)) + "/" + id
}

// waitState is where a desire stands for a wait.
type waitState int

const (
	waitPending waitState = iota
	waitMet
	waitFailed // Successful=False for a reason that will not heal by itself
)

// evaluate compares a status document with want, for the spec document spec.
func evaluate(d api.Desire, spec *api.DynamoDBMetadata, want conditionWant) waitState {
	if d == nil {
		return waitPending
	}
	s := d.StatusCommon()
	c := s.Condition(want.typ)
	if c == nil || !answers(s, c, spec) {
		return waitPending
	}
	if c.Status == want.status {
		return waitMet
	}
	if want == successfulTrue && c.Status == api.ConditionFalse && permanentFailure(s) {
		return waitFailed
	}
	return waitPending
}

// answers reports whether condition c of status s was computed for the spec document spec:
// at its version or a later one, of the same incarnation. Desire IDs are deterministic, so a
// spec deleted and written again starts at version 1 again while the status of the earlier
// one may still be there (Successful, at version 1 or more); observedDesireUpdateTime, the
// updateTime of the spec the status answers, tells them apart. A status without it (an
// applier that does not write it) is judged by the version alone.
func answers(s *api.CommonStatus, c *api.Condition, spec *api.DynamoDBMetadata) bool {
	if c.ObservedGeneration < spec.Version {
		return false
	}
	updated, _ := s.ObservedTimes()
	return s.ObservedDesireUpdateTime == "" || !updated.Before(spec.UpdateTime)
}

// permanentFailure tells a Successful=False the applier will not retry on its own from one
// that heals by itself, by the verdict's reason alone: transient errors (Degraded=True), a
// kind the cluster does not serve yet (KindNotServed: typically a CRD applied alongside) and
// an object still being deleted (WaitingForDeletion) are retried by the applier; PreCheckFailed
// and every other reason wait for a new spec.
func permanentFailure(s *api.CommonStatus) bool {
	if s.IsTrue(api.ConditionDegraded) {
		return false
	}
	switch s.Condition(api.ConditionSuccessful).Reason {
	case api.ReasonKindNotServed, api.ReasonWaitingForDeletion:
		return false
	}
	return true
}

// waitFor polls the status of items until each meets want, fails, or timeout passes. Met
// items are reported on stdout when report is set. Failures and timeouts are exit-1 errors,
// one line per desire; when no item has any status, a last line asks whether an applier runs
// for the management cluster.
func (a *app) waitFor(ctx context.Context, items []*waitItem, want conditionWant, timeout time.Duration, report bool) error {
	start := a.clock.Now()
	deadline := start.Add(timeout)
	pending := items
	var failed []error
	prog := a.newProgress()
	defer prog.clear()
	for {
		var next []*waitItem
		for _, it := range pending {
			d, err := it.tables.getStatus(ctx, it.id)
			if err != nil {
				return err
			}
			it.last = d
			switch it.evaluate(d, want) {
			case waitMet:
				if report {
					prog.clear()
					a.line(outputRecord{Event: "condition met", Desire: it.ref(), Object: it.label, Detail: want.String()},
						it.ref()+" condition met")
				}
			case waitFailed:
				desc := describeStatus(d, &it.spec, want.typ)
				if typ, other := it.otherType(d, want); other {
					desc = fmt.Sprintf("the desire was written again as spec.type %s (its status answers version %d, not this %s of version %d: %s)",
						typ, d.StatusCommon().ObservedSpecVersion(), it.applyType, it.spec.Version, desc)
				}
				failed = append(failed, failedErrorf("%s (%s): %s", it.ref(), it.label, desc))
			default:
				next = append(next, it)
			}
		}
		pending = next
		if len(pending) == 0 {
			return errors.Join(failed...)
		}
		now := a.clock.Now()
		prog.show(now.Sub(start), timeout, len(items), pending, want)
		if !now.Before(deadline) {
			return errors.Join(append(failed, a.timeoutErrors(items, pending, want, timeout)...)...)
		}
		if err := a.clock.Sleep(ctx, min(a.pollInterval, deadline.Sub(now))); err != nil {
			return failedErrorf("interrupted while waiting for %s: %v", pending[0].ref(), err)
		}
	}
}

// timeoutErrors are the errors of the items still pending at the deadline. When none of the
// items has a status document, the applier most likely does not run (or serves other tables):
// a last line says what to check.
func (a *app) timeoutErrors(items, pending []*waitItem, want conditionWant, timeout time.Duration) []error {
	var errs []error
	for _, it := range pending {
		errs = append(errs, failedErrorf("timed out after %s waiting for %s (%s) to be %s: %s",
			timeout, it.ref(), it.label, want, describeStatus(it.last, &it.spec, want.typ)))
	}
	for _, it := range items {
		if it.last != nil {
			return errs
		}
	}
	return append(errs, failedErrorf("%s", noStatusHint(a.managementCluster)))
}

// noStatusHint is the last line of a wait that saw no status document at all.
func noStatusHint(managementCluster string) string {
	return fmt.Sprintf("no status at all: is kube-applier-aws running for management cluster %q on these tables "+
		"(same DynamoDB endpoint, region and table prefix)? See its log and its /readyz", managementCluster)
}

// describeStatus says what a status document holds about condition typ, for errors.
func describeStatus(d api.Desire, spec *api.DynamoDBMetadata, typ string) string {
	if d == nil {
		return "the applier has written no status yet"
	}
	s := d.StatusCommon()
	c := s.Condition(typ)
	if c == nil {
		return "the status has no " + typ + " condition"
	}
	desc := fmt.Sprintf("%s=%s", c.Type, c.Status)
	if c.Reason != "" {
		desc += ", reason " + c.Reason
	}
	if c.Message != "" {
		desc += ": " + oneLine(c.Message)
	}
	switch {
	case c.ObservedGeneration < spec.Version:
		desc = fmt.Sprintf("the status is for spec version %d, not yet %d (%s)", c.ObservedGeneration, spec.Version, desc)
	case !answers(s, c, spec):
		desc = fmt.Sprintf("the status is for an earlier spec written at %s, not yet the one written at %s (%s)",
			s.ObservedDesireUpdateTime, spec.UpdateTime.UTC().Format(time.RFC3339Nano), desc)
	}
	return desc
}
