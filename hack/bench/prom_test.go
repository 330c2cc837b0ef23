package main

import "testing"

// TestParseProm: labels (escapes, commas), label-less samples and comments; sum and by
// select on a subset of the labels.
func TestParseProm(t *testing.T) {
	snap := parseProm(`# HELP x y
# TYPE kube_applier_status_writes_total counter
kube_applier_status_writes_total{kind="ApplyDesire",result="created"} 3
kube_applier_status_writes_total{kind="ReadDesire",result="created"} 2
kube_applier_status_writes_total{kind="ApplyDesire",result="unchanged"} 5
odd{msg="a \"b\"\nc"} 1.5
go_goroutines 42
`)
	if got := snap.sum("kube_applier_status_writes_total", map[string]string{"result": "created"}); got != 5 {
		t.Errorf("sum created = %v, want 5", got)
	}
	if got := snap.by("kube_applier_status_writes_total", "result", kindApply); got["created"] != 3 || got["unchanged"] != 5 {
		t.Errorf("by result of ApplyDesire = %v, want created 3, unchanged 5", got)
	}
	if got := snap.sum("go_goroutines", nil); got != 42 {
		t.Errorf("go_goroutines = %v, want 42", got)
	}
	if len(snap) != 5 || snap[3].labels["msg"] != "a \"b\"\nc" {
		t.Errorf("parsed %d samples, odd's msg %q", len(snap), snap[3].labels["msg"])
	}
}

// TestDiffBy leaves out labels whose count did not change.
func TestDiffBy(t *testing.T) {
	before := parseProm("r{verb=\"get\"} 1\nr{verb=\"apply\"} 4\n")
	after := parseProm("r{verb=\"get\"} 3\nr{verb=\"apply\"} 4\nr{verb=\"list\"} 1\n")
	got := diffBy(before, after, "r", "verb", nil)
	if len(got) != 2 || got["get"] != 2 || got["list"] != 1 {
		t.Fatalf("diffBy = %v, want get 2, list 1", got)
	}
}
