package main

import (
	"maps"
	"testing"
)

// TestCPUPerItemComparesOneProcess: a process restarted between two readings (another pid)
// is left out, not counted negative; the rest are ms per item by name.
func TestCPUPerItemComparesOneProcess(t *testing.T) {
	before := map[string]float64{"etcd 10": 100, "applier 7": 5, "dynamodb 3": 1}
	after := map[string]float64{"etcd 11": 2, "applier 7": 7.5, "dynamodb 3": 2}
	got := cpuPerItem(before, after, 1000)
	want := map[string]float64{"applier": 2.5, "dynamodb": 1}
	if !maps.Equal(got, want) {
		t.Fatalf("cpuPerItem = %v, want %v", got, want)
	}
}

// TestCPUSecondsCountsANewProcessWhole: a process started between two readings (the restarted
// applier) counts all its CPU; one read both times counts the difference.
func TestCPUSecondsCountsANewProcessWhole(t *testing.T) {
	got := cpuSeconds(map[string]float64{"dynamodb 7": 10, "applier 8": 50}, map[string]float64{"dynamodb 7": 14.5, "applier 9": 3.25})
	if len(got) != 2 || got["dynamodb"] != 4.5 || got["applier"] != 3.25 {
		t.Fatalf("cpuSeconds = %v, want dynamodb 4.5, applier 3.25", got)
	}
	if s := busyShare(100, 1000, 250, 1200); s != 0.75 {
		t.Fatalf("busyShare = %v, want 0.75", s)
	}
}
