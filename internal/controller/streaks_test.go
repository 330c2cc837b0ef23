package controller

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// TestSameFailureRepeatedIsTheDesires: a 500 that repeats for one spec version with the same
// message while other desires succeed is refused (not Degraded, no back-off retries) after
// SameFailureLimit tries; the same failure with no success anywhere (the cluster is down)
// stays the applier's; a new spec version or another message starts over.
func TestSameFailureRepeatedIsTheDesires(t *testing.T) {
	t0 := testTime
	m := &api.DynamoDBMetadata{DocumentID: "a", Version: 3, CreateTime: t0}
	fail := Transient(api.ReasonKubeAPIError, errors.New("500: decoding failed"))
	var f failureStreaks
	for i := 1; i <= SameFailureLimit+2; i++ {
		if v := f.judge(m, fail, t0.Add(time.Duration(i)*time.Second)); !v.Degraded() {
			t.Fatalf("try %d with no success anywhere: %v, want still Degraded", i, v)
		}
	}
	f.judge(&api.DynamoDBMetadata{DocumentID: "other"}, Applied(1, "ok"), t0.Add(10*time.Second))
	var v Verdict
	for i := 0; i < SameFailureLimit; i++ {
		v = f.judge(m, fail, t0.Add(time.Duration(11+i)*time.Second))
	}
	if v.Degraded() || v.Reason() != api.ReasonKubeAPIError || v.again != LookPeriodic || !strings.Contains(v.Message(), "taken for a problem of the desire") {
		t.Fatalf("after %d identical failures while others succeed: %v (again %v)", SameFailureLimit, v, v.again)
	}
	m2 := *m
	m2.Version = 4
	if v := f.judge(&m2, fail, t0.Add(20*time.Second)); !v.Degraded() {
		t.Fatalf("a new spec version starts over: %v", v)
	}
	if v := f.judge(&m2, Transient(api.ReasonKubeAPIError, errors.New("another")), t0.Add(21*time.Second)); !v.Degraded() {
		t.Fatalf("another message starts over: %v", v)
	}
	if v := f.judge(m, NotYet(api.ReasonKindNotServed, "x"), t0); v.Reason() != api.ReasonKindNotServed {
		t.Fatalf("other verdicts pass through: %v", v)
	}
}
