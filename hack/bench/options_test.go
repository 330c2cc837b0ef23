package main

import (
	"reflect"
	"testing"

	kubeapplier "github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
)

// TestWithOption: each way sets only its own option, and the api module accepts it (a desire
// it refused would measure PreCheckFailed, not the option).
func TestWithOption(t *testing.T) {
	b := &bench{cfg: config{cmSize: 256}, ns: "ns"}
	for _, way := range optionWays {
		d := b.applyDesire("id", "cm", 0, 1, b.createTime)
		d.Spec.ManagementCluster, d.Spec.ClusterID = cluster, benchName
		withOption(d, way)
		if err := api.CheckOptions(d); err != nil {
			t.Errorf("%s: CheckOptions: %v", way, err)
		}
		if got := d.Spec.StatusFeedback != nil; got != (way == "feedback") {
			t.Errorf("%s: statusFeedback set = %v", way, got)
		}
		if got := d.Spec.Health != nil; got != (way == "health") {
			t.Errorf("%s: health set = %v", way, got)
		}
	}
}

// TestOptionItemsRoundTrip: the options survive the item encoding the scenario writes with.
func TestOptionItemsRoundTrip(t *testing.T) {
	b := &bench{cfg: config{cmSize: 256}, ns: "ns"}
	run := &optRun{Way: "feedback", N: 1, ids: []string{"id"}, names: []string{"cm"}, vers: []int64{1}}
	item, err := api.EncodeItem(b.optDesire(run, 0, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	got := &kubeapplier.ApplyDesire{}
	if err := api.DecodeItem(item, got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Spec.StatusFeedback, benchFeedback) {
		t.Fatalf("statusFeedback after the round trip: %+v", got.Spec.StatusFeedback)
	}
}

func TestReversed(t *testing.T) {
	if got := reversed([]string{"a", "b", "c"}); !reflect.DeepEqual(got, []string{"c", "b", "a"}) {
		t.Fatalf("reversed = %v", got)
	}
}

// TestChangeCPUNet: in both phases, the idle rate over the window is subtracted, never below zero.
func TestChangeCPUNet(t *testing.T) {
	r := &optRun{ChangeCPU: 1.0, IdleCPUPerSec: 0.01, ChangeSeconds: 20}
	if got := r.changeCPUNet(); got < 0.7999 || got > 0.8001 {
		t.Fatalf("changeCPUNet = %v, want 0.8", got)
	}
	r.IdleCPUPerSec = 1
	if got := r.changeCPUNet(); got != 0 {
		t.Fatalf("changeCPUNet = %v, want 0", got)
	}
	r = &optRun{CreateCPU: 0.5, IdleCPUPerSec: 0.01, CreateQuietSeconds: 10}
	if got := r.createCPUNet(); got < 0.3999 || got > 0.4001 {
		t.Fatalf("createCPUNet = %v, want 0.4", got)
	}
}
