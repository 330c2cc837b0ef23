package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
)

// putHeartbeat stores hb as the leader writes it.
func putHeartbeat(t *testing.T, h *harness, hb api.Heartbeat) {
	t.Helper()
	item, err := attributevalue.MarshalMap(hb)
	if err != nil {
		t.Fatal(err)
	}
	item["documentID"] = &types.AttributeValueMemberS{Value: api.HeartbeatID}
	h.db.PutRaw(api.TableName(testPrefix, testMC, api.StatusTable, kubeapplier.KindApplyDesire), item)
}

func sampleHeartbeat(written time.Time) api.Heartbeat {
	w := written.Add(-10 * time.Second)
	newest := written.Add(-20 * time.Second)
	return api.Heartbeat{ManagementCluster: testMC, Leader: "pod-a_1234", Version: "v0.1.0 abc go1.26", ApplierTerm: 3,
		TermStart: written.Add(-time.Hour), UpdateTime: written, KeepaliveSeconds: 300,
		Kinds: map[string]api.HeartbeatKind{
			"ApplyDesire": {Desires: 12, Unanswered: 1, Watermark: &w, QueueDepth: 2, NewestRecord: &newest, StreamLagSeconds: 0.25,
				Successful: map[string]int{"True/NoErrors": 10, "False/KubeAPIError": 1, "Unknown/Pending": 1}, Degraded: map[string]int{"KubeAPIError": 1}},
			"DeleteDesire": {},
			"ReadDesire":   {Desires: 1, Watermark: &w, Successful: map[string]int{"True/NotFound": 1}},
		}}
}

func TestStatusCommand(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		heartbeat *api.Heartbeat
		age       time.Duration
		stopped   bool // the heartbeat is the last of a term ended by shutdown
		wantCode  int
		wantOut   []string
		wantErr   string
	}{
		{name: "fresh", age: 30 * time.Second, wantCode: exitOK, wantOut: []string{
			"Leader:              pod-a_1234", "Term:                3, since 2025-03-01T10:59:30Z (1h0m30s ago)",
			"Heartbeat written:   2025-03-01T11:59:30Z (30s ago), next by 2025-03-01T12:04:30Z",
			"ApplyDesire   12       1           2025-03-01T11:59:20Z  2      0.2s        2025-03-01T11:59:10Z  False/KubeAPIError=1 True/NoErrors=10 Unknown/Pending=1 (Degraded: KubeAPIError=1)",
			"DeleteDesire  0        0           -                     0      -           -                     -"}},
		{name: "cluster-info alias", args: []string{"cluster-info"}, age: time.Second, wantCode: exitOK, wantOut: []string{"Management cluster:  mc1"}},
		{name: "idle: 4 minutes old is not overdue", age: 4 * time.Minute, wantCode: exitOK},
		{name: "more than 2 minutes overdue: printed, then exit 1", age: 7*time.Minute + time.Second, wantCode: exitFailed, wantOut: []string{"Leader:"},
			wantErr: "error: the heartbeat is 7m1s old (more than 7m0s): is kube-applier-aws running and leading for management cluster mc1?\n"},
		{name: "shorter staleness", args: []string{"status", "--stale-after", "10s"}, age: 30 * time.Second, wantCode: exitFailed,
			wantErr: "error: the heartbeat is 30s old (more than 10s): is kube-applier-aws running and leading for management cluster mc1?\n"},
		{name: "json", args: []string{"status", "-o", "json"}, age: time.Second, wantCode: exitOK, wantOut: []string{`"leader": "pod-a_1234"`, `"watermark": "2025-03-01T11:59:49Z"`}},
		{name: "none", args: []string{"status"}, heartbeat: &api.Heartbeat{}, wantCode: exitFailed,
			wantErr: "error: no heartbeat for management cluster mc1: is kube-applier-aws running for it?\n"},
		{name: "yaml", args: []string{"status", "-o", "yaml"}, age: time.Second, wantCode: exitOK, wantOut: []string{`leader: pod-a_1234`, `watermark: "2025-03-01T11:59:49Z"`}},
		{name: "bad output", args: []string{"status", "-o", "wide"}, age: time.Second, wantCode: exitUsage},
		{name: "the leader stopped: printed, then exit 1 at once", age: 5 * time.Second, stopped: true, wantCode: exitFailed,
			wantOut: []string{"Heartbeat written:   2025-03-01T11:59:55Z (5s ago)\n", "Stopped:             2025-03-01T11:59:55Z (5s ago): the leader shut down; no applier writes until another replica takes a term"},
			wantErr: "error: the leader pod-a_1234 stopped 5s ago (shut down): no kube-applier-aws leads management cluster mc1 until another replica takes a term\n"},
		{name: "stopped, json", args: []string{"status", "-o", "json"}, age: time.Second, stopped: true, wantCode: exitFailed,
			wantOut: []string{`"stopped": "2025-03-01T11:59:59Z"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			if tt.heartbeat == nil {
				hb := sampleHeartbeat(h.clock.now.Add(-tt.age))
				if tt.stopped {
					hb.Stopped = &hb.UpdateTime
				}
				putHeartbeat(t, h, hb)
			}
			args := tt.args
			if args == nil {
				args = []string{"status"}
			}
			out, errOut, code := h.run(args...)
			assertExit(t, code, tt.wantCode, errOut)
			for _, want := range tt.wantOut {
				if !strings.Contains(out, want) {
					t.Fatalf("stdout lacks %q:\n%s", want, out)
				}
			}
			if tt.wantErr != "" && errOut != tt.wantErr {
				t.Fatalf("stderr %q, want %q", errOut, tt.wantErr)
			}
			if tt.name == "json" {
				var hb api.Heartbeat
				if err := json.Unmarshal([]byte(out), &hb); err != nil || hb.Kinds["ApplyDesire"].Desires != 12 {
					t.Fatalf("json %v: %s", err, out)
				}
			}
		})
	}
}

func TestWaitWatermark(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		advance  int // the heartbeat's watermark moves past the target after this many polls; 0: never
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{name: "reached", args: []string{"--for=watermark=2025-03-01T11:59:00Z"}, wantCode: exitOK,
			wantOut: "ApplyDesire watermark 2025-03-01T11:59:50Z reached 2025-03-01T11:59:00Z\n"},
		{name: "reached later", args: []string{"--for=watermark=2025-03-01T12:00:02Z", "--timeout", "10s"}, advance: 3, wantCode: exitOK},
		{name: "times out", args: []string{"--for=watermark=2025-03-01T13:00:00Z", "--timeout", "3s"}, wantCode: exitFailed,
			wantErr: "error: timed out after 3s waiting for the ApplyDesire watermark to reach 2025-03-01T13:00:00Z: watermark 2025-03-01T11:59:50Z\n"},
		{name: "kind without desires", args: []string{"--for=watermark=2025-03-01T11:00:00Z", "--kind", "delete", "--timeout", "1s"}, wantCode: exitFailed,
			wantErr: "error: timed out after 1s waiting for the DeleteDesire watermark to reach 2025-03-01T11:00:00Z: no watermark (no DeleteDesire in the leader's cache)\n"},
		{name: "read kind", args: []string{"--for=watermark=2025-03-01T11:00:00Z", "--kind", "read"}, wantCode: exitOK},
		{name: "bad time", args: []string{"--for=watermark=yesterday"}, wantCode: exitUsage},
		{name: "no TYPE NAME with a watermark", args: []string{"configmaps", "foo", "--for=watermark=2025-03-01T11:00:00Z"}, wantCode: exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			putHeartbeat(t, h, sampleHeartbeat(h.clock.now))
			if tt.advance > 0 {
				h.clock.onSleep = func(n int) {
					if n == tt.advance {
						putHeartbeat(t, h, sampleHeartbeat(h.clock.now.Add(20*time.Second)))
					}
				}
			}
			out, errOut, code := h.run(append([]string{"wait"}, tt.args...)...)
			assertExit(t, code, tt.wantCode, errOut)
			if tt.wantOut != "" && out != tt.wantOut {
				t.Fatalf("stdout %q, want %q", out, tt.wantOut)
			}
			if tt.wantErr != "" && errOut != tt.wantErr {
				t.Fatalf("stderr %q, want %q", errOut, tt.wantErr)
			}
		})
	}
}
