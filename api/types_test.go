package api

import (
	"testing"
	"time"
)

// TestSetCondition: the rules of Kubernetes' meta.SetStatusCondition — a new condition is
// appended; an update keeps lastTransitionTime unless the status changes; a zero time is now;
// times are stored in UTC — and whether anything changed.
func TestSetCondition(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := time.Date(2026, 1, 2, 4, 0, 0, 0, time.FixedZone("CET", 3600))
	base := func() CommonStatus {
		return CommonStatus{Conditions: []Condition{{Type: ConditionSuccessful, Status: ConditionTrue, Reason: ReasonNoErrors,
			Message: "ok", ObservedGeneration: 1, LastTransitionTime: t0}}}
	}
	cases := []struct {
		name    string
		set     Condition
		changed bool
		want    Condition // the condition of set's type afterwards
		n       int       // conditions afterwards
	}{
		{"same", Condition{Type: ConditionSuccessful, Status: ConditionTrue, Reason: ReasonNoErrors, Message: "ok", ObservedGeneration: 1},
			false, Condition{Type: ConditionSuccessful, Status: ConditionTrue, Reason: ReasonNoErrors, Message: "ok", ObservedGeneration: 1, LastTransitionTime: t0}, 1},
		{"new message, same status: the transition time stays", Condition{Type: ConditionSuccessful, Status: ConditionTrue, Reason: ReasonNoErrors, Message: "again", ObservedGeneration: 2},
			true, Condition{Type: ConditionSuccessful, Status: ConditionTrue, Reason: ReasonNoErrors, Message: "again", ObservedGeneration: 2, LastTransitionTime: t0}, 1},
		{"status changes: now, in UTC", Condition{Type: ConditionSuccessful, Status: ConditionFalse, Reason: ReasonKubeAPIError, Message: "boom", ObservedGeneration: 2},
			true, Condition{Type: ConditionSuccessful, Status: ConditionFalse, Reason: ReasonKubeAPIError, Message: "boom", ObservedGeneration: 2, LastTransitionTime: now.UTC()}, 1},
		{"a time of its own, in UTC", Condition{Type: ConditionDegraded, Status: ConditionFalse, Reason: ReasonNoErrors, LastTransitionTime: t0.In(time.FixedZone("X", -7200))},
			true, Condition{Type: ConditionDegraded, Status: ConditionFalse, Reason: ReasonNoErrors, LastTransitionTime: t0}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := base()
			if changed := s.SetCondition(tc.set, now); changed != tc.changed {
				t.Fatalf("changed = %v, want %v", changed, tc.changed)
			}
			got := s.Condition(tc.set.Type)
			if got == nil || *got != tc.want || len(s.Conditions) != tc.n || got.LastTransitionTime.Location() != time.UTC {
				t.Fatalf("after SetCondition: %+v (%d conditions), want %+v (%d)", got, len(s.Conditions), tc.want, tc.n)
			}
		})
	}
	s := base()
	if !s.IsTrue(ConditionSuccessful) || s.IsTrue(ConditionDegraded) {
		t.Fatal("IsTrue")
	}
	if !s.RemoveCondition(ConditionSuccessful) || s.RemoveCondition(ConditionSuccessful) || len(s.Conditions) != 0 {
		t.Fatalf("RemoveCondition: %+v", s.Conditions)
	}
}

// TestObserve: a status answers the spec item's own spelling of its times, and reads them
// back as instants; a missing or unparsable one is the zero time.
func TestObserve(t *testing.T) {
	var m DynamoDBMetadata
	m.CreateTime = time.Date(2026, 1, 1, 0, 0, 0, 100_000_000, time.UTC)
	m.UpdateTime = m.CreateTime.Add(time.Second)
	m.KeepTimeSpellings(Item{})
	var s CommonStatus
	s.Observe(&m)
	created, updated := m.StoredTimes()
	if s.ObservedDesireCreateTime != created || s.ObservedDesireUpdateTime != updated {
		t.Fatalf("observed %q %q, want %q %q", s.ObservedDesireCreateTime, s.ObservedDesireUpdateTime, created, updated)
	}
	u, c := s.ObservedTimes()
	if !u.Equal(m.UpdateTime) || !c.Equal(m.CreateTime) {
		t.Fatalf("ObservedTimes = %v %v, want %v %v", u, c, m.UpdateTime, m.CreateTime)
	}
	bad := CommonStatus{ObservedDesireUpdateTime: "yesterday"}
	if u, c := bad.ObservedTimes(); !u.IsZero() || !c.IsZero() {
		t.Fatalf("unparsable or missing times read as %v %v, want zero", u, c)
	}
}

// TestObservedSpecVersion: the highest spec version any condition was computed from.
func TestObservedSpecVersion(t *testing.T) {
	s := &CommonStatus{Conditions: []Condition{{Type: "A", ObservedGeneration: 3}, {Type: "B", ObservedGeneration: 5}}}
	if v := s.ObservedSpecVersion(); v != 5 {
		t.Fatalf("ObservedSpecVersion = %d, want 5", v)
	}
	if v := (&CommonStatus{}).ObservedSpecVersion(); v != 0 {
		t.Fatalf("without conditions = %d, want 0", v)
	}
}
