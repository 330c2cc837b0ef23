package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-applier-aws/kubeapplier"
)

// defaultTimeout bounds waits.
const defaultTimeout = 60 * time.Second

// conditionWant is what --for asks: a condition type and status.
type conditionWant struct {
	typ    string
	status metav1.ConditionStatus
}

var successfulTrue = conditionWant{typ: kubeapplier.ConditionSuccessful, status: metav1.ConditionTrue}

func (w conditionWant) String() string { return w.typ + "=" + string(w.status) }

// parseFor parses --for=condition=TYPE[=STATUS]; STATUS defaults to True.
func parseFor(s string) (conditionWant, error) {
	rest, ok := strings.CutPrefix(s, "condition=")
	if !ok || rest == "" {
		return conditionWant{}, usageErrorf("--for must be condition=TYPE[=STATUS], e.g. condition=Successful, not %q", s)
	}
	typ, status, hasStatus := strings.Cut(rest, "=")
	w := conditionWant{typ: typ, status: metav1.ConditionTrue}
	if hasStatus {
		switch strings.ToLower(status) {
		case "true":
		case "false":
			w.status = metav1.ConditionFalse
		case "unknown":
			w.status = metav1.ConditionUnknown
		default:
			return conditionWant{}, usageErrorf("--for condition status must be True, False or Unknown, not %q", status)
		}
	}
	for _, known := range []string{kubeapplier.ConditionSuccessful, kubeapplier.ConditionDegraded} {
		if strings.EqualFold(typ, known) {
			w.typ = known
		}
	}
	return w, nil
}

// waitItem is one desire being waited for.
type waitItem struct {
	kind    kubeapplier.DesireKind
	id      string
	label   string // "ConfigMap default/foo"
	version int64  // the spec Version the status must have observed
	status  func(context.Context) (kubeapplier.Desire, error)
	last    kubeapplier.Desire // the last status document read; nil when there was none
}

func (w *waitItem) ref() string { return desireRef(w.kind, w.id) }

// desireRef is "applydesire/<id>".
func desireRef(kind kubeapplier.DesireKind, id string) string {
	return strings.ToLower(string(kind)) + "/" + id
}

// waitState is where a desire stands for a wait.
type waitState int

const (
	waitPending waitState = iota
	waitMet
	waitFailed // Successful=False for a reason that will not heal by itself
)

// evaluate compares a status document with want, at spec version.
func evaluate(kind kubeapplier.DesireKind, d kubeapplier.Desire, version int64, want conditionWant) waitState {
	if d == nil {
		return waitPending
	}
	s := d.StatusCommon()
	c := meta.FindStatusCondition(s.Conditions, want.typ)
	if c == nil || c.ObservedGeneration < version {
		return waitPending
	}
	if c.Status == want.status {
		return waitMet
	}
	if want == successfulTrue && c.Status == metav1.ConditionFalse && permanentFailure(kind, s) {
		return waitFailed
	}
	return waitPending
}

// permanentFailure tells a Successful=False the applier will not retry on its own from one
// it is retrying: transient errors (Degraded=True), objects still being deleted, and
// ApplyDesires whose kind the cluster does not serve yet (typically a CRD applied alongside).
func permanentFailure(kind kubeapplier.DesireKind, s *kubeapplier.CommonStatus) bool {
	if meta.IsStatusConditionTrue(s.Conditions, kubeapplier.ConditionDegraded) {
		return false
	}
	c := meta.FindStatusCondition(s.Conditions, kubeapplier.ConditionSuccessful)
	switch c.Reason {
	case kubeapplier.ReasonWaitingForDeletion:
		return false
	case kubeapplier.ReasonPreCheckFailed:
		return !(kind == kubeapplier.KindApplyDesire && strings.Contains(c.Message, kubeapplier.ErrKindNotServed.Error()))
	}
	return true
}

// waitFor polls the status of items until each meets want, fails, or timeout passes. Met
// items are reported on stdout when report is set. Failures and timeouts are exit-1 errors,
// one line per desire.
func (a *app) waitFor(ctx context.Context, items []*waitItem, want conditionWant, timeout time.Duration, report bool) error {
	deadline := a.clock.Now().Add(timeout)
	pending := items
	var failed []error
	for {
		var next []*waitItem
		for _, it := range pending {
			d, err := it.status(ctx)
			if err != nil {
				return err
			}
			it.last = d
			switch evaluate(it.kind, d, it.version, want) {
			case waitMet:
				if report {
					fmt.Fprintf(a.stdout, "%s condition met\n", it.ref())
				}
			case waitFailed:
				failed = append(failed, failedErrorf("%s (%s): %s", it.ref(), it.label, describeStatus(d, it.version, want.typ)))
			default:
				next = append(next, it)
			}
		}
		pending = next
		if len(pending) == 0 {
			return errors.Join(failed...)
		}
		now := a.clock.Now()
		if !now.Before(deadline) {
			for _, it := range pending {
				failed = append(failed, failedErrorf("timed out after %s waiting for %s (%s) to be %s: %s",
					timeout, it.ref(), it.label, want, describeStatus(it.last, it.version, want.typ)))
			}
			return errors.Join(failed...)
		}
		if err := a.clock.Sleep(ctx, min(a.pollInterval, deadline.Sub(now))); err != nil {
			return failedErrorf("interrupted while waiting for %s: %v", pending[0].ref(), err)
		}
	}
}

// describeStatus says what a status document holds about condition typ, for errors.
func describeStatus(d kubeapplier.Desire, version int64, typ string) string {
	if d == nil {
		return "the applier has written no status yet"
	}
	c := meta.FindStatusCondition(d.StatusCommon().Conditions, typ)
	if c == nil {
		return "the status has no " + typ + " condition"
	}
	s := fmt.Sprintf("%s=%s", c.Type, c.Status)
	if c.Reason != "" {
		s += ", reason " + c.Reason
	}
	if c.Message != "" {
		s += ": " + oneLine(c.Message)
	}
	if c.ObservedGeneration < version {
		s = fmt.Sprintf("the status is for spec version %d, not yet %d (%s)", c.ObservedGeneration, version, s)
	}
	return s
}
