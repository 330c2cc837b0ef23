package kubeapplier

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestSpecTakenBackToALowerVersion: the specs table goes back within one incarnation (a
// restore from a backup, an undo: a saved item put back with its createTime): version 2 comes
// after version 3 was applied and answered. The cluster gets version 2's content and the
// status answers version 2; before the fix the status write was refused as stale, and the
// status kept claiming version 3's content, which the cluster no longer had.
func TestSpecTakenBackToALowerVersion(t *testing.T) {
	o, opts := newOffline(t)
	created := time.Now().UTC().Add(-time.Hour)
	spec := func(v int64) *ApplyDesire {
		d := applyDesire("a", fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"default"},"data":{"v":"%d"}}`, v))
		d.Version, d.CreateTime, d.UpdateTime = v, created, created.Add(time.Duration(v)*time.Minute)
		return d
	}
	liveV := func() string {
		obj, err := o.kube.Get(context.Background(), cmGVR, "default", "a")
		if err != nil {
			return err.Error()
		}
		data, _ := obj.Object["data"].(map[string]any)
		return fmt.Sprint(data["v"])
	}
	answered := func(v int64) func() bool {
		return func() bool {
			st := statusOf[*ApplyDesire](t, o, KindApplyDesire, "a")
			if st == nil {
				return false
			}
			c := condition(st, ConditionSuccessful)
			return st.Status.ObservedSpecVersion() == v && c.Status == ConditionTrue && c.ObservedGeneration == v
		}
	}
	o.put(t, spec(3))
	a, err := newApplier(opts, tuning{})
	if err != nil {
		t.Fatal(err)
	}
	runApplier(t, a)
	waitFor(t, 10*time.Second, "version 3 applied and answered", func() bool { return liveV() == "3" && answered(3)() })

	o.put(t, spec(2)) // the table taken back
	waitFor(t, 10*time.Second, "version 2 applied and answered", func() bool { return liveV() == "2" && answered(2)() },
		func() string {
			st := statusOf[*ApplyDesire](t, o, KindApplyDesire, "a")
			if st == nil {
				return "live v=" + liveV() + ", no status"
			}
			return fmt.Sprintf("live v=%s, status answers %d: %+v", liveV(), st.Status.ObservedSpecVersion(), condition(st, ConditionSuccessful))
		})
}

// TestSameVersionOtherContentAfterRestore: once a version can go down (a restore, an
// undo), (createTime, version) no longer names one content: v3 (content "3") applied and
// answered; the table is restored to v2 and a new write makes v3 again with content "Z" and
// another updateTime (the reconciler sees only the latest). The drift record, keyed by
// (createTime, version) only, verifies the object "as applied" without applying Z, and the
// status says Successful for the new v3 (its updateTime) while the cluster holds "3".
func TestSameVersionOtherContentAfterRestore(t *testing.T) {
	o, opts := newOffline(t)
	created := time.Now().UTC().Add(-time.Hour)
	spec := func(v int64, val string, upd time.Time) *ApplyDesire {
		d := applyDesire("a", fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"default"},"data":{"v":%q}}`, val))
		d.Version, d.CreateTime, d.UpdateTime = v, created, upd
		return d
	}
	liveV := func() string {
		obj, err := o.kube.Get(context.Background(), cmGVR, "default", "a")
		if err != nil {
			return err.Error()
		}
		data, _ := obj.Object["data"].(map[string]any)
		return fmt.Sprint(data["v"])
	}
	answered := func(upd time.Time) bool {
		st := statusOf[*ApplyDesire](t, o, KindApplyDesire, "a")
		if st == nil {
			return false
		}
		c := condition(st, ConditionSuccessful)
		u, _ := st.Status.ObservedTimes()
		return c.Status == ConditionTrue && c.ObservedGeneration == 3 && u.Equal(upd)
	}
	u1 := created.Add(3 * time.Minute)
	o.put(t, spec(3, "3", u1))
	a, err := newApplier(opts, tuning{})
	if err != nil {
		t.Fatal(err)
	}
	runApplier(t, a)
	waitFor(t, 10*time.Second, "v3 applied and answered", func() bool { return liveV() == "3" && answered(u1) })

	u2 := time.Now().UTC()
	o.put(t, spec(3, "Z", u2)) // restored to v2, then written again: v3 with other content
	waitFor(t, 5*time.Second, "the new v3 answered", func() bool { return answered(u2) })
	time.Sleep(500 * time.Millisecond)
	if got := liveV(); got != "Z" {
		st := statusOf[*ApplyDesire](t, o, KindApplyDesire, "a")
		t.Fatalf("status says Successful for v3 updated %s (%q) but the cluster holds v=%s", st.Status.ObservedDesireUpdateTime,
			condition(st, ConditionSuccessful).Message, got)
	}
}
