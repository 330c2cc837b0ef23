package controller

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// TestStatusFeedback: the writer records a verdict's feedback in status.feedback; a Transient
// verdict without feedback keeps the last status's, any other drops it; a desire whose
// statusFeedback was removed drops it even when the verdict carries some; a feedback change
// alone makes another status (so it is written).
func TestStatusFeedback(t *testing.T) {
	now := time.Date(2026, 12, 4, 11, 0, 0, 0, time.UTC)
	rules := &api.StatusFeedback{JSONPaths: []api.FeedbackRule{{Name: "ready", Path: ".status.readyReplicas"}}}
	withRules := func() *api.ApplyDesire {
		d := applyDesire("a", cmJSON("o"))
		d.Spec.StatusFeedback = rules
		d.CreateTime = testTime
		return d
	}
	otherRules := func() *api.ApplyDesire {
		d := applyDesire("a", cmJSON("o"))
		d.Spec.StatusFeedback = &api.StatusFeedback{JSONPaths: []api.FeedbackRule{{Name: "ready", Path: ".spec.replicas"}}}
		return d
	}
	reborn := func() *api.ApplyDesire {
		d := withRules()
		d.CreateTime = d.CreateTime.Add(time.Hour) // deleted and created again under the same documentID
		return d
	}
	old := []api.FeedbackValue{{Name: "ready", Type: api.FeedbackInteger, Value: "1"}}
	fresh := []api.FeedbackValue{{Name: "ready", Type: api.FeedbackInteger, Value: "2"}}
	cur := StatusDocument(withRules(), WithFeedback(Applied(1, "applied"), old), false, nil, false, now)
	if !reflect.DeepEqual(cur.Status.Feedback, old) {
		t.Fatalf("first status feedback = %v, want %v", cur.Status.Feedback, old)
	}
	for _, tc := range []struct {
		name string
		spec *api.ApplyDesire
		v    Verdict
		want []api.FeedbackValue
	}{
		{"new values replace the last", withRules(), WithFeedback(Applied(1, "applied"), fresh), fresh},
		{"a Transient verdict keeps the last values", withRules(), Transient(api.ReasonKubeAPIError, errors.New("timeout")), old},
		{"a Transient verdict with values reports them", withRules(), WithFeedback(Transient(api.ReasonKubeAPIError, errors.New("timeout")), fresh), fresh},
		{"a refusal drops them", withRules(), Refused(api.ReasonPreCheckFailed, "bad"), nil},
		{"an apply that observed none drops them", withRules(), Applied(1, "applied"), nil},
		{"rules changed: a Transient verdict does not carry values read by the old rules", otherRules(), Transient(api.ReasonKubeAPIError, errors.New("timeout")), nil},
		{"another incarnation: a Transient verdict does not carry the old one's values", reborn(), Transient(api.ReasonKubeAPIError, errors.New("timeout")), nil},
		{"statusFeedback removed: dropped", applyDesire("a", cmJSON("o")), Applied(1, "applied"), nil},
		{"statusFeedback removed: dropped, even through a Transient verdict", applyDesire("a", cmJSON("o")), Transient(api.ReasonKubeAPIError, errors.New("timeout")), nil},
		{"statusFeedback removed: dropped, even when the verdict carries values", applyDesire("a", cmJSON("o")), WithFeedback(Applied(1, "applied"), fresh), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := StatusDocument(tc.spec, tc.v, false, cur, true, now)
			if !reflect.DeepEqual(next.Status.Feedback, tc.want) {
				t.Fatalf("status.feedback = %v, want %v", next.Status.Feedback, tc.want)
			}
		})
	}
	t.Run("a feedback change alone is another status", func(t *testing.T) {
		same := StatusDocument(withRules(), WithFeedback(Applied(1, "applied"), old), false, cur, true, now)
		changed := StatusDocument(withRules(), WithFeedback(Applied(1, "applied"), fresh), false, cur, true, now)
		if !SameStatus(cur, same) || SameStatus(cur, changed) {
			t.Fatalf("SameStatus: unchanged feedback %v, changed feedback %v; want true, false", SameStatus(cur, same), SameStatus(cur, changed))
		}
	})
	t.Run("Feedback reads the observation back", func(t *testing.T) {
		if _, ok := Feedback(Applied(1, "x")); ok {
			t.Fatal("a verdict without feedback says it observed some")
		}
		if got, ok := Feedback(WithFeedback(Applied(1, "x"), fresh)); !ok || !reflect.DeepEqual(got, fresh) {
			t.Fatalf("Feedback = %v, %v", got, ok)
		}
	})
}
