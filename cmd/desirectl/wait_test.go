package main

import (
	"strings"
	"testing"

	"github.com/kube-applier-aws/kubeapplier"
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
				h.mustRun("apply", "-f", file) // version 2
			case kubeapplier.KindDeleteDesire:
				h.mustRun("delete", "-f", file)
			case kubeapplier.KindReadDesire:
				h.writeStatus(kubeapplier.KindReadDesire, idFoo, 1, outcome{successful: true, reason: kubeapplier.ReasonNoErrors, content: liveFoo})
				h.mustRun("read", "configmaps", "foo")
				h.db.DropTable(tableName(kubeapplier.StatusTable, kubeapplier.KindReadDesire))
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
			"error: applydesire/" + id("", "v1", "configmaps", "default", "nope") + " (ConfigMap default/nope) not found\n"},
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
