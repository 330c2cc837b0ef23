package target

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// TestHealthRules: the first true of failed, inProgress and current decides the Ready reason
// (in that order), none true is InProgress, and a rule that does not compile, is not a bool,
// errors on the object or exceeds the cost limit is HealthRuleInvalid naming the rule. A
// field the object lacks is an error, not false (as Flux treats it): has() guards it.
func TestHealthRules(t *testing.T) {
	pod := func(phase string) *unstructured.Unstructured {
		return object(t, "example.com/v1", "Widget", 1, map[string]any{"phase": phase})
	}
	bare := object(t, "v1", "ConfigMap", 0, nil) // no status at all
	secret := unstructuredObj("v1", "Secret", "ns", "s", map[string]any{"data": map[string]any{"token": "c2VjcmV0"}})
	items := make([]any, 2000)
	for i := range items {
		items[i] = int64(i)
	}
	// 2000 searches of a 100 KB string: past the cost limit in a few milliseconds.
	big := object(t, "example.com/v1", "Widget", 1, map[string]any{"items": items, "log": strings.Repeat("a", 100_000)})
	const (
		failed     = `self.status.phase == "Failed"`
		inProgress = `self.status.phase == "Pending"`
		current    = `self.status.phase == "Running"`
	)
	all := api.HealthRules{Failed: failed, InProgress: inProgress, Current: current}
	cases := []struct {
		name        string
		rules       api.HealthRules
		obj         *unstructured.Unstructured
		wantStatus  string
		wantMessage string // a substring
	}{
		{"failed", all, pod("Failed"), "Failed", "health.failed: " + failed},
		{"inProgress", all, pod("Pending"), "InProgress", "health.inProgress: " + inProgress},
		{"current", all, pod("Running"), "Current", "health.current: " + current},
		{"none true", all, pod("Unknown"), "InProgress", "no health rule is true yet"},
		{"only current, not yet", api.HealthRules{Current: current}, pod("Pending"), "InProgress", "no health rule is true yet"},
		{"failed before inProgress and current", api.HealthRules{Failed: "true", InProgress: "true", Current: "true"}, bare, "Failed", "health.failed: true"},
		{"inProgress before current", api.HealthRules{Failed: "false", InProgress: "true", Current: "true"}, bare, "InProgress", "health.inProgress: true"},
		{"does not compile", api.HealthRules{Current: `self.status.phase ==`}, pod("Running"), api.ReasonHealthRuleInvalid, "health.current: self.status.phase ==: does not compile: <input>:1:21: Syntax error: mismatched input '<EOF>'"},
		{"unknown function", api.HealthRules{Failed: `frobnicate(self)`}, pod("Running"), api.ReasonHealthRuleInvalid, "health.failed: frobnicate(self): does not compile"},
		{"not a bool at compile time", api.HealthRules{Current: `1 + 1`}, pod("Running"), api.ReasonHealthRuleInvalid, "the rule must return a bool, not int"},
		{"not a bool at run time", api.HealthRules{Current: `self.status.phase`}, pod("Running"), api.ReasonHealthRuleInvalid, "the rule must return a bool, not string"},
		{"missing key is an error", api.HealthRules{Current: `self.status.phase == "Running"`}, bare, api.ReasonHealthRuleInvalid, "health.current: self.status.phase == \"Running\": no such key: status"},
		{"has() guards a missing key", api.HealthRules{Current: `has(self.status) && self.status.phase == "Running"`}, bare, "InProgress", "no health rule is true yet"},
		{"an invalid rule stops the order", api.HealthRules{Failed: `self.nope`, Current: "true"}, bare, api.ReasonHealthRuleInvalid, "health.failed: self.nope: no such key: nope"},
		{"a Secret's rule is not shown", api.HealthRules{Current: `self.data.token == "c2VjcmV0"`}, secret, "Current", "health.current is true"},
		{"nor its error", api.HealthRules{Current: `int(self.data.token) > 0`}, secret, api.ReasonHealthRuleInvalid, "health.current is invalid (on a Secret, the rule and its error are not shown)"},
		{"cost limit", api.HealthRules{Current: `self.status.items.all(i, !self.status.log.contains("error"))`}, big, api.ReasonHealthRuleInvalid, "cost limit exceeded"},
		{"a rule too long to compile or quote", api.HealthRules{Current: strings.Repeat("true && ", 2100) + "true"}, bare, api.ReasonHealthRuleInvalid,
			"…: the rule is 16804 bytes, over the limit of 16384"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := evaluateRules(tc.rules, tc.obj)
			if strings.Contains(r.Message, "c2VjcmV0") {
				t.Fatalf("a Secret's value in the message: %q", r.Message)
			}
			if strings.Contains(r.Message, "\n") {
				t.Fatalf("a message of more than one line: %q", r.Message)
			}
			if r.Status != tc.wantStatus || !strings.Contains(r.Message, tc.wantMessage) {
				t.Fatalf("readiness %q %q; want %q containing %q", r.Status, r.Message, tc.wantStatus, tc.wantMessage)
			}
			if r.Ready() != (tc.wantStatus == "Current") || r.Unknown() != (tc.wantStatus == api.ReasonHealthRuleInvalid) {
				t.Fatalf("Ready() %v Unknown() %v for %s", r.Ready(), r.Unknown(), r.Status)
			}
		})
	}
}

// TestHealthRuleDeadline: an evaluation the cost limit lets run is interrupted at its deadline.
func TestHealthRuleDeadline(t *testing.T) {
	c := newProgramCache(4, 1<<62)
	items := make([]any, 3000)
	for i := range items {
		items[i] = int64(i)
	}
	start := time.Now()
	_, err := c.evaluate(`self.items.all(a, self.items.all(b, a == b || a != b))`, map[string]any{"items": items}, 10*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("err %v, want the deadline's", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("interrupted after %v", d)
	}
}

// TestHealthProgramsCompiledOnce: one program per rule text, shared, the least recently used
// dropped past the bound; a compile error is kept too (not compiled again on every event).
func TestHealthProgramsCompiledOnce(t *testing.T) {
	c := newProgramCache(2, healthRuleCostLimit)
	p1, _ := c.program("true")
	p2, _ := c.program("true")
	if p1 != p2 {
		t.Fatal("compiled twice")
	}
	if _, err := c.program("true &&"); err == nil {
		t.Fatal("no compile error")
	}
	if _, err := c.program("false"); err != nil {
		t.Fatal(err)
	}
	if c.order.Len() != 2 {
		t.Fatalf("%d programs kept, want 2", c.order.Len())
	}
	if _, ok := c.byKey["true"]; ok {
		t.Fatal("the least recently used program was kept")
	}
	if _, err := c.evaluate("1", nil, time.Second); !errors.Is(err, errNotBool) {
		t.Fatalf("err %v, want errNotBool", err)
	}
}

// TestHealthRulesReadiness: a desire with rules has its Ready condition from them, through
// both the apply's response and the sightings, even for a kind without status (a GET per new
// resourceVersion, none for one already evaluated); rules changed are evaluated again;
// without rules (or after Forget) it is kstatus's again.
func TestHealthRulesReadiness(t *testing.T) {
	ctx := context.Background()
	kube := &fakeGet{objects: map[string]*unstructured.Unstructured{}}
	h := NewHealthCheck(kube.get)
	cm := schema.GroupKind{Kind: "ConfigMap"}
	tgt := api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "ns", Name: "o"}
	at := func(rv, ready string) *unstructured.Unstructured {
		u := unstructuredObj("v1", "ConfigMap", "ns", "o", map[string]any{"data": map[string]any{"ready": ready}})
		u.SetResourceVersion(rv)
		return u
	}
	rules := &api.HealthRules{Current: `has(self.data) && self.data.ready == "yes"`}
	if !h.UseRules("a", rules) || h.UseRules("b", &api.HealthRules{}) || h.UseRules("c", nil) {
		t.Fatal("UseRules: only non-empty rules count")
	}
	if r := h.OfObject("a", tgt, at("10", "no")); r.Status != "InProgress" {
		t.Fatalf("applied: %v", r)
	}
	if r, err := h.OfSighting(ctx, "a", tgt, cm, &Sighting{resourceVersion: "10"}, true); err != nil || r.Status != "InProgress" || kube.gets != 0 {
		t.Fatalf("at the applied version: %v, %v, %d GETs", r, err, kube.gets)
	}
	kube.objects["ns/o"] = at("11", "yes")
	for range 2 {
		if r, err := h.OfSighting(ctx, "a", tgt, cm, &Sighting{resourceVersion: "11"}, true); err != nil || r.Status != "Current" {
			t.Fatalf("after another writer: %v, %v", r, err)
		}
	}
	if kube.gets != 1 {
		t.Fatalf("%d GETs for one new resourceVersion, want 1", kube.gets)
	}
	h.UseRules("a", &api.HealthRules{Failed: `self.data.ready == "yes"`})
	if r, err := h.OfSighting(ctx, "a", tgt, cm, &Sighting{resourceVersion: "11"}, true); err != nil || r.Status != "Failed" {
		t.Fatalf("new rules: %v, %v", r, err)
	}
	if r, err := h.OfSighting(ctx, "a", tgt, cm, &Sighting{resourceVersion: "12", deleting: true}, true); err != nil || r.Status != "Terminating" {
		t.Fatalf("being deleted: %v, %v", r, err)
	}
	h.Forget("a")
	gets := kube.gets
	if r, err := h.OfSighting(ctx, "a", tgt, cm, &Sighting{resourceVersion: "11"}, true); err != nil || r.Status != "Current" || kube.gets != gets {
		t.Fatalf("forgotten: kstatus's %v, %v, %d GETs", r, err, kube.gets-gets)
	}
	h.UseRules("a", rules)
	h.EndTerm()
	if _, ok := h.rulesOf("a"); ok {
		t.Fatal("rules kept past the term")
	}
}

// ExampleReadiness_Unknown shows the Ready reason and message of an invalid rule.
func ExampleReadiness_Unknown() {
	r := evaluateRules(api.HealthRules{Current: `self.status.ready`}, unstructuredObj("v1", "ConfigMap", "ns", "o", nil))
	fmt.Println(r.Unknown(), r.Status, r.Message)
	// Output: true HealthRuleInvalid health.current: self.status.ready: no such key: status
}

// BenchmarkHealthRules is what health rules cost per readiness (a compiled rule, the usual
// condition lookups over a Deployment-like object), next to kstatus's compute of the same.
func BenchmarkHealthRules(b *testing.B) {
	cond := func(typ, status string) map[string]any { return map[string]any{"type": typ, "status": status} }
	u := unstructuredObj("apps/v1", "Deployment", "ns", "o", map[string]any{"spec": map[string]any{"replicas": int64(1)}})
	u.SetGeneration(2)
	u.Object["status"] = map[string]any{"observedGeneration": int64(2), "replicas": int64(1), "updatedReplicas": int64(1),
		"readyReplicas": int64(1), "availableReplicas": int64(1),
		"conditions": []any{cond("Available", "True"), cond("Progressing", "True")}}
	rules := api.HealthRules{
		Failed:     `has(self.status) && has(self.status.conditions) && self.status.conditions.exists(c, c.type == "ReplicaFailure" && c.status == "True")`,
		InProgress: `!has(self.status) || self.status.observedGeneration != self.metadata.generation`,
		Current:    `self.status.conditions.exists(c, c.type == "Available" && c.status == "True")`,
	}
	b.Run("rules", func(b *testing.B) {
		for b.Loop() {
			if r := evaluateRules(rules, u); r.Status != "Current" {
				b.Fatal(r)
			}
		}
	})
	b.Run("kstatus", func(b *testing.B) {
		for b.Loop() {
			if r := compute(u); r.Status != "Current" {
				b.Fatal(r)
			}
		}
	})
}
