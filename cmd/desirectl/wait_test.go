package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
)

func TestWait(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		kind     kubeapplier.DesireKind
		status   *outcome // written after the second poll, at the spec version
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{name: "successful", args: []string{"--for=condition=Successful"}, kind: kubeapplier.KindApplyDesire, status: &okOutcome,
			wantOut: "applydesire/" + idFoo + " condition met\n"},
		{name: "default for", kind: kubeapplier.KindApplyDesire, status: &okOutcome,
			wantOut: "applydesire/" + idFoo + " condition met\n"},
		{name: "delete kind", args: []string{"--kind", "delete"}, kind: kubeapplier.KindDeleteDesire, status: &okOutcome,
			wantOut: "deletedesire/" + idFoo + " condition met\n"},
		{name: "read kind", args: []string{"--kind=read"}, kind: kubeapplier.KindReadDesire, status: &okOutcome,
			wantOut: "readdesire/" + idFoo + " condition met\n"},
		{name: "ready", args: []string{"--for=condition=ready"}, kind: kubeapplier.KindApplyDesire,
			status:  &outcome{successful: true, reason: kubeapplier.ReasonNoErrors, message: "applied", ready: "True"},
			wantOut: "applydesire/" + idFoo + " condition met\n"},
		{name: "ready not yet", args: []string{"--for=condition=Ready", "--timeout=10s"}, kind: kubeapplier.KindApplyDesire, status: &okOutcome, wantCode: exitFailed,
			wantErr: "error: timed out after 10s waiting for applydesire/" + idFoo + " (ConfigMap default/foo) to be Ready=True: the status has no Ready condition\n"},
		{name: "degraded false", args: []string{"--for=condition=Degraded=False"}, kind: kubeapplier.KindApplyDesire, status: &okOutcome,
			wantOut: "applydesire/" + idFoo + " condition met\n"},
		{name: "timeout", args: []string{"--timeout=10s"}, kind: kubeapplier.KindApplyDesire, wantCode: exitFailed,
			wantErr: "error: timed out after 10s waiting for applydesire/" + idFoo + " (ConfigMap default/foo) to be Successful=True: the status is for spec version 1, not yet 2 (Successful=True, reason NoErrors: done)\n"},
		{name: "permanent failure", kind: kubeapplier.KindApplyDesire, wantCode: exitFailed,
			status:  &outcome{reason: kubeapplier.ReasonContentTooLarge, message: "too big"},
			wantErr: "error: applydesire/" + idFoo + " (ConfigMap default/foo): Successful=False, reason ContentTooLarge: too big\n"},
		{name: "waiting for false", args: []string{"--for", "condition=Successful=False"}, kind: kubeapplier.KindApplyDesire,
			status: &outcome{reason: kubeapplier.ReasonContentTooLarge, message: "too big"}, wantOut: "applydesire/" + idFoo + " condition met\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			file := h.writeFile("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: foo}\n")
			switch tc.kind {
			case kubeapplier.KindApplyDesire:
				h.mustRun("apply", "-f", file)
				h.mustRun("apply", "-f", h.writeFile("cm2.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: foo}\ndata: {a: '2'}\n")) // version 2
			case kubeapplier.KindDeleteDesire:
				h.mustRun("delete", "-f", file)
			case kubeapplier.KindReadDesire:
				h.clock.onSleep = func(int) {
					h.writeStatus(kubeapplier.KindReadDesire, idFoo, 1, outcome{successful: true, reason: kubeapplier.ReasonNoErrors, content: liveFoo})
				}
				h.mustRun("read", "configmaps", "foo", "--keep")
				h.db.DropTable(tableName(api.StatusTable, kubeapplier.KindReadDesire))
				h.clock.sleeps = 0
			}
			// A status for an older version never satisfies a wait.
			h.writeStatus(tc.kind, idFoo, h.specVersion(tc.kind, idFoo)-1, okOutcome)
			h.clock.onSleep = func(n int) {
				if n == 2 && tc.status != nil {
					h.writeStatus(tc.kind, idFoo, h.specVersion(tc.kind, idFoo), *tc.status)
				}
			}
			out, errOut, code := h.run(append([]string{"wait", "configmaps", "foo"}, tc.args...)...)
			assertExit(t, code, tc.wantCode, errOut)
			if out != tc.wantOut || errOut != tc.wantErr {
				t.Fatalf("stdout:\n%s\nwant:\n%s\nstderr:\n%s\nwant:\n%s", out, tc.wantOut, errOut, tc.wantErr)
			}
		})
	}
}

func TestWaitErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"not found", []string{"configmaps", "nope"}, exitFailed,
			"error: no desire found for ConfigMap default/nope (ID " + id("", "v1", "configmaps", "default", "nope") + ")\n"},
		{"kind not found", []string{"configmaps", "nope", "--kind", "read"}, exitFailed,
			"error: readdesire/" + id("", "v1", "configmaps", "default", "nope") + " (ConfigMap default/nope) not found\n"},
		{"bad for", []string{"configmaps", "foo", "--for=delete"}, exitUsage,
			"error: --for must be condition=TYPE[=STATUS], e.g. condition=Successful, not \"delete\"\n"},
		{"bad kind", []string{"configmaps", "foo", "--kind", "patch"}, exitUsage,
			"error: --kind must be apply, delete or read, not \"patch\"\n"},
		{"bad timeout", []string{"configmaps", "foo", "--timeout", "soon"}, exitUsage, ""},
		{"missing name", []string{"configmaps"}, exitUsage,
			"error: accepts 2 arg(s), received 1; see 'desirectl wait --help'\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			_, errOut, code := h.run(append([]string{"wait"}, tc.args...)...)
			assertExit(t, code, tc.wantCode, errOut)
			if tc.wantErr != "" && errOut != tc.wantErr {
				t.Fatalf("stderr %q, want %q", errOut, tc.wantErr)
			}
			if strings.Count(errOut, "\n") != 1 {
				t.Fatalf("stderr is not one line: %q", errOut)
			}
		})
	}
}

// Without --kind, wait finds the desire the object has: its ApplyDesire or DeleteDesire, else
// its ReadDesire; both an ApplyDesire and a DeleteDesire need --kind.
func TestWaitPicksTheDesireKind(t *testing.T) {
	file := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: foo}\n"
	for _, tc := range []struct {
		name     string
		setup    func(h *harness)
		args     []string
		wantCode int
		wantKind kubeapplier.DesireKind
		wantErr  string
	}{
		{name: "delete after apply", setup: func(h *harness) {
			h.mustRun("apply", "-f", h.writeFile("cm.yaml", file))
			h.mustRun("delete", "configmaps", "foo")
		}, wantKind: kubeapplier.KindDeleteDesire},
		{name: "apply beside a read", setup: func(h *harness) {
			h.mustRun("apply", "-f", h.writeFile("cm.yaml", file))
			putRaw(h.db, tableName(api.SpecsTable, kubeapplier.KindReadDesire), &kubeapplier.ReadDesire{
				DynamoDBMetadata: kubeapplier.DynamoDBMetadata{DocumentID: idFoo, Version: 1, CreateTime: testStart, UpdateTime: testStart}})
		}, wantKind: kubeapplier.KindApplyDesire},
		{name: "read only", setup: func(h *harness) {
			putRaw(h.db, tableName(api.SpecsTable, kubeapplier.KindReadDesire), &kubeapplier.ReadDesire{
				DynamoDBMetadata: kubeapplier.DynamoDBMetadata{DocumentID: idFoo, Version: 1, CreateTime: testStart, UpdateTime: testStart}})
		}, wantKind: kubeapplier.KindReadDesire},
		{name: "apply and delete need --kind", setup: func(h *harness) {
			h.mustRun("apply", "-f", h.writeFile("cm.yaml", file))
			putRaw(h.db, tableName(api.SpecsTable, kubeapplier.KindDeleteDesire), &kubeapplier.DeleteDesire{
				DynamoDBMetadata: kubeapplier.DynamoDBMetadata{DocumentID: idFoo, Version: 1, CreateTime: testStart, UpdateTime: testStart}})
		}, wantCode: exitUsage,
			wantErr: "error: ConfigMap default/foo has both an ApplyDesire and a DeleteDesire (ID " + idFoo + "): choose one with --kind apply or --kind delete\n"},
		{name: "--kind chooses", setup: func(h *harness) {
			h.mustRun("apply", "-f", h.writeFile("cm.yaml", file))
			putRaw(h.db, tableName(api.SpecsTable, kubeapplier.KindDeleteDesire), &kubeapplier.DeleteDesire{
				DynamoDBMetadata: kubeapplier.DynamoDBMetadata{DocumentID: idFoo, Version: 1, CreateTime: testStart, UpdateTime: testStart}})
		}, args: []string{"--kind", "delete"}, wantKind: kubeapplier.KindDeleteDesire},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			tc.setup(h)
			h.clock.onSleep = func(n int) {
				if n == 1 && tc.wantKind != "" {
					h.writeStatus(tc.wantKind, idFoo, h.specVersion(tc.wantKind, idFoo), okOutcome)
				}
			}
			out, errOut, code := h.run(append([]string{"wait", "configmaps", "foo", "--for=condition=Successful"}, tc.args...)...)
			assertExit(t, code, tc.wantCode, errOut)
			wantOut := ""
			if tc.wantKind != "" {
				wantOut = desireRef(tc.wantKind, idFoo) + " condition met\n"
			}
			if out != wantOut || errOut != tc.wantErr {
				t.Fatalf("stdout:\n%s\nwant:\n%s\nstderr:\n%s\nwant:\n%s", out, wantOut, errOut, tc.wantErr)
			}
		})
	}
}

// TestWaitProgress: on a terminal a wait rewrites one stderr line each poll with the elapsed
// time, the count done and each pending desire's state (counted by state when there are
// many), and erases it before printing results; in a pipe it prints nothing.
func TestWaitProgress(t *testing.T) {
	const clear = "\r\x1b[K"
	manifests := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm%d}\n", i)
		}
		return b.String()
	}
	for _, tc := range []struct {
		name      string
		tty       bool
		n         int
		wantLines []string // progress lines, in order (each after a clear)
	}{
		{"one desire on a terminal", true, 1, []string{
			"waiting 0s of 1m0s: 0/1 done; applydesire/%s no status yet",
			"waiting 1s of 1m0s: 0/1 done; applydesire/%s Successful=False Degraded KubeAPIError",
		}},
		{"many desires on a terminal", true, 5, []string{
			"waiting 0s of 1m0s: 0/5 done; 5 pending: 5 no status yet",
			"waiting 1s of 1m0s: 0/5 done; 5 pending: 4 no status yet, 1 Successful=False Degraded KubeAPIError",
		}},
		{"in a pipe", false, 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.tty = tc.tty
			file := h.writeFile("cms.yaml", manifests(tc.n))
			h.mustRun("apply", "-f", file) // version 1; the run below writes version 2
			ids := h.specIDs(kubeapplier.KindApplyDesire)
			first := ids[0]
			h.clock.onSleep = func(n int) {
				switch n {
				case 1:
					h.writeStatus(kubeapplier.KindApplyDesire, first, 2, outcome{degraded: true, reason: kubeapplier.ReasonKubeAPIError, message: "503"})
				case 2:
					for _, id := range ids {
						h.writeStatus(kubeapplier.KindApplyDesire, id, 2, okOutcome)
					}
				}
			}
			out, errOut, code := h.run("apply", "-f", file, "--wait")
			assertExit(t, code, 0, errOut)
			if strings.Count(out, "condition met\n") != tc.n {
				t.Fatalf("stdout %q: want %d 'condition met' lines", out, tc.n)
			}
			if !tc.tty {
				if errOut != "" {
					t.Fatalf("stderr %q in a pipe, want nothing", errOut)
				}
				return
			}
			var lines []string
			for _, l := range strings.Split(errOut, clear) {
				if l != "" {
					lines = append(lines, l)
				}
			}
			if !strings.HasSuffix(errOut, clear) {
				t.Fatalf("stderr %q does not end erasing the progress line", errOut)
			}
			if len(lines) != len(tc.wantLines) {
				t.Fatalf("progress lines %q, want %d", lines, len(tc.wantLines))
			}
			for i, want := range tc.wantLines {
				if strings.Contains(want, "%s") {
					want = fmt.Sprintf(want, first)
				}
				if lines[i] != want {
					t.Fatalf("progress line %d:\n%q\nwant\n%q", i, lines[i], want)
				}
			}
		})
	}
}
