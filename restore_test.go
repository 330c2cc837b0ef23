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
			c := condition(st, ConditionSuccessful)
			return st != nil && st.Status.ObservedSpecVersion() == v && c.Status == ConditionTrue && c.ObservedGeneration == v
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
			return fmt.Sprintf("live v=%s, status answers %d: %+v", liveV(), st.Status.ObservedSpecVersion(), condition(st, ConditionSuccessful))
		})
}
