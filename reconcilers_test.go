package kubeapplier

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestReconcilerWrappers: a wrapper set in Options refuses some desires with a verdict of its
// own and delegates the others to the default reconciler; the controller writes both verdicts.
func TestReconcilerWrappers(t *testing.T) {
	o, opts := newOffline(t)
	var seen atomic.Int32
	opts.Reconcilers.Apply = func(def Reconciler[*ApplyDesire]) Reconciler[*ApplyDesire] {
		return ReconcilerFunc[*ApplyDesire](func(ctx context.Context, d *ApplyDesire) Verdict {
			seen.Add(1)
			if strings.Contains(string(d.Spec.KubeContent), `"namespace":"forbidden"`) {
				return Refused(ReasonPreCheckFailed, "namespace forbidden is reserved")
			}
			return def.Reconcile(ctx, d)
		})
	}
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	runApplier(t, a)
	o.put(t, applyDesire("ok", cmJSON("ok")))
	o.put(t, applyDesire("no", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"no","namespace":"forbidden"}}`))
	var okSt, noSt *ApplyDesire
	waitFor(t, 10*time.Second, "both statuses", func() bool {
		okSt, noSt = statusOf[*ApplyDesire](t, o, KindApplyDesire, "ok"), statusOf[*ApplyDesire](t, o, KindApplyDesire, "no")
		return okSt != nil && noSt != nil
	})
	if c := condition(okSt, ConditionSuccessful); c.Status != ConditionTrue || c.Reason != ReasonNoErrors {
		t.Fatalf("delegated desire: %+v", c)
	}
	if c := condition(noSt, ConditionSuccessful); c.Status != ConditionFalse || c.Reason != ReasonPreCheckFailed || c.Message != "namespace forbidden is reserved" {
		t.Fatalf("refused desire: %+v", c)
	}
	if c := condition(noSt, ConditionDegraded); c.Status != ConditionFalse {
		t.Fatalf("refused desire Degraded: %+v", c)
	}
	o.kube.mu.Lock()
	calls := strings.Join(o.kube.calls, ";")
	o.kube.mu.Unlock()
	if !strings.Contains(calls, "apply ok") || strings.Contains(calls, "apply no") {
		t.Fatalf("kube calls %q: want the delegated desire applied, the refused one not", calls)
	}
	if seen.Load() < 2 {
		t.Fatal("the wrapper was not called")
	}
}

// TestReadWrapperKeepsCleanup: a ReadDesire reconciled through a wrapper that delegates holds
// a target watch; when its spec is deleted, the controller still runs the default
// reconciler's cleanup, and the watch stops.
func TestReadWrapperKeepsCleanup(t *testing.T) {
	cm := unstructuredObj("v1", "ConfigMap", "default", "c1", map[string]any{"data": map[string]any{"k": "v"}})
	o, opts := newOffline(t, cm)
	var wrapped atomic.Int32
	opts.Reconcilers.Read = func(def Reconciler[*ReadDesire]) Reconciler[*ReadDesire] {
		return ReconcilerFunc[*ReadDesire](func(ctx context.Context, d *ReadDesire) Verdict {
			wrapped.Add(1)
			return def.Reconcile(ctx, d)
		})
	}
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	runApplier(t, a)
	o.put(t, readDesire("r1", TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "c1"}))
	waitFor(t, 10*time.Second, "r1 mirrored", func() bool {
		st := statusOf[*ReadDesire](t, o, KindReadDesire, "r1")
		return st != nil && condition(st, ConditionSuccessful).Status == ConditionTrue
	})
	if a.watches.Count() != 1 || wrapped.Load() == 0 {
		t.Fatalf("watches %d, wrapper calls %d: want 1 watch, the wrapper called", a.watches.Count(), wrapped.Load())
	}
	o.remove(KindReadDesire, "r1")
	waitFor(t, 10*time.Second, "status deleted and watch stopped", func() bool {
		return statusOf[*ReadDesire](t, o, KindReadDesire, "r1") == nil && a.watches.Count() == 0
	})
}

// TestReconcilerWrapperNil: a wrapper that returns no reconciler is an invalid option.
func TestReconcilerWrapperNil(t *testing.T) {
	_, opts := newOffline(t)
	opts.Reconcilers.Delete = func(Reconciler[*DeleteDesire]) Reconciler[*DeleteDesire] { return nil }
	if _, err := New(opts); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "DeleteDesire reconciler wrapper returned nil") {
		t.Fatalf("New = %v", err)
	}
}

// TestPreCheckErrorMessage: a PreCheckError says its Message and nothing more (it becomes the
// status's message).
func TestPreCheckErrorMessage(t *testing.T) {
	if pc := (&PreCheckError{Message: "kubeContent is empty"}); pc.Error() != "kubeContent is empty" {
		t.Fatalf("PreCheckError message %q", pc.Error())
	}
}
