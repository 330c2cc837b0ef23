package main

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
)

const liveFoo = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"foo","namespace":"default"},"data":{"a":"1"}}`

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		status   outcome // written after the first poll
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{name: "yaml", args: []string{"configmaps", "foo"},
			status:  outcome{successful: true, reason: kubeapplier.ReasonNoErrors, content: liveFoo},
			wantOut: "apiVersion: v1\ndata:\n  a: \"1\"\nkind: ConfigMap\nmetadata:\n  name: foo\n  namespace: default\n"},
		{name: "json", args: []string{"cm", "foo", "-n", "default", "-o", "json"},
			status: outcome{successful: true, reason: kubeapplier.ReasonNoErrors, content: liveFoo},
			wantOut: `{
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {
        "name": "foo",
        "namespace": "default"
    },
    "data": {
        "a": "1"
    }
}
`},
		{name: "not found", args: []string{"configmaps", "foo"},
			status:   outcome{successful: true, reason: kubeapplier.ReasonNotFound, message: "configmaps/v1 default/foo does not exist"},
			wantCode: exitFailed, wantErr: "error: configmaps/v1 default/foo does not exist\n"},
		{name: "precheck failed", args: []string{"configmaps", "foo"},
			status:   outcome{reason: kubeapplier.ReasonPreCheckFailed, message: "spec.managementCluster is \"x\" but this applier serves \"y\""},
			wantCode: exitFailed, wantErr: "error: readdesire/" + idFoo + " (ConfigMap default/foo): Successful=False, reason PreCheckFailed: spec.managementCluster is \"x\" but this applier serves \"y\"\n"},
		{name: "timeout", args: []string{"configmaps", "foo", "--timeout", "3s"},
			wantCode: exitFailed, wantErr: "error: timed out after 3s waiting for readdesire/" + idFoo + " (ConfigMap default/foo) to be Successful=True: the applier has written no status yet\n" +
				"error: " + noStatusHint(testMC) + "\n"},
		{name: "kind not served heals", args: []string{"configmaps", "foo", "--timeout", "3s"},
			status:   outcome{reason: kubeapplier.ReasonKindNotServed, message: "resource configmaps/v1 is not served by the cluster"},
			wantCode: exitFailed, wantErr: "error: timed out after 3s waiting for readdesire/" + idFoo + " (ConfigMap default/foo) to be Successful=True: Successful=False, reason KindNotServed: resource configmaps/v1 is not served by the cluster\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, keep := range []bool{false, true} {
				t.Run(fmt.Sprintf("keep=%v", keep), func(t *testing.T) {
					h := newHarness(t)
					var during *kubeapplier.ReadDesire // the ReadDesire while read waits
					h.clock.onSleep = func(n int) {
						if n == 1 {
							during = readSpec(t, h)
							if tc.status.reason != "" {
								h.writeStatus(kubeapplier.KindReadDesire, idFoo, 1, tc.status)
							}
						}
					}
					args := append([]string{"read"}, tc.args...)
					if keep {
						args = append(args, "--keep")
					}
					out, errOut, code := h.run(args...)
					assertExit(t, code, tc.wantCode, errOut)
					if out != tc.wantOut || errOut != tc.wantErr {
						t.Fatalf("stdout:\n%s\nwant:\n%s\nstderr:\n%s\nwant:\n%s", out, tc.wantOut, errOut, tc.wantErr)
					}
					want := kubeapplier.ReadDesireSpec{CommonSpec: testCommon,
						TargetItem: kubeapplier.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "foo"}}
					if during == nil || during.Version != 1 || !reflect.DeepEqual(during.Spec, want) {
						t.Fatalf("ReadDesire while waiting: %+v", during)
					}
					after := readSpec(t, h)
					if keep != (after != nil) {
						t.Fatalf("--keep=%v: ReadDesire after read: %+v", keep, after)
					}
				})
			}
		})
	}
}

// An existing ReadDesire with the same spec is reused: no write, and its status answers.
func TestReadReusesDesire(t *testing.T) {
	h := newHarness(t)
	h.clock.onSleep = func(n int) {
		h.writeStatus(kubeapplier.KindReadDesire, idFoo, h.specVersion(kubeapplier.KindReadDesire, idFoo), outcome{successful: true, reason: kubeapplier.ReasonNoErrors, content: liveFoo})
	}
	h.mustRun("read", "configmaps", "foo", "--keep")
	writes, sleeps := h.db.Writes(), h.clock.sleeps
	out := h.mustRun("read", "configmaps", "foo")
	if h.db.Writes() != writes || h.clock.sleeps != sleeps {
		t.Fatalf("second read wrote %d times and polled %d times", h.db.Writes()-writes, h.clock.sleeps-sleeps)
	}
	if out == "" {
		t.Fatal("no output")
	}
	if readSpec(t, h) == nil {
		t.Fatal("read removed a ReadDesire it did not create")
	}
	// A different spec (here the cluster ID, with the task key pinned) replaces the desire.
	h.mustRun("read", "configmaps", "foo", "--task-key", testCluster, "--cluster-id", "other")
	if v := h.specVersion(kubeapplier.KindReadDesire, idFoo); v != 2 {
		t.Fatalf("version %d, want 2", v)
	}
}

// readSpec returns the ReadDesire of foo, or nil.
func readSpec(t *testing.T, h *harness) *kubeapplier.ReadDesire {
	t.Helper()
	d, err := specs[*kubeapplier.ReadDesire](h, kubeapplier.KindReadDesire).Get(context.Background(), idFoo)
	if kubeapplier.IsNotFoundError(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// The applier redacts a Secret's values in a ReadDesire's status (SecretRedaction): read
// prints them marked as redacted, never the placeholder as if it were the value; values the
// applier let through (SecretRedaction.AllowKeys) are printed as they are.
func TestReadSecretRedacted(t *testing.T) {
	live := `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"foo","namespace":"default"},` +
		`"data":{"password":"` + api.RedactedValue + `","user":"YWRtaW4="},"stringData":"` + api.RedactedValue + `","type":"Opaque"}`
	for _, tc := range []struct {
		output, want string
	}{
		{"yaml", "apiVersion: v1\ndata:\n  password: <redacted>\n  user: YWRtaW4=\nkind: Secret\nmetadata:\n  name: foo\n  namespace: default\nstringData: <redacted>\ntype: Opaque\n"},
		{"json", `{
    "apiVersion": "v1",
    "data": {
        "password": "<redacted>",
        "user": "YWRtaW4="
    },
    "kind": "Secret",
    "metadata": {
        "name": "foo",
        "namespace": "default"
    },
    "stringData": "<redacted>",
    "type": "Opaque"
}
`},
	} {
		t.Run(tc.output, func(t *testing.T) {
			h := newHarness(t)
			id := id("", "v1", "secrets", "default", "foo")
			h.clock.onSleep = func(n int) {
				if n == 1 {
					h.writeStatus(kubeapplier.KindReadDesire, id, 1, outcome{successful: true, reason: kubeapplier.ReasonNoErrors, content: live})
				}
			}
			out, errOut, code := h.run("read", "secrets", "foo", "-o", tc.output)
			assertExit(t, code, 0, errOut)
			if out != tc.want {
				t.Fatalf("stdout:\n%s\nwant:\n%s", out, tc.want)
			}
			if want := "warning: the applier redacted 2 values of Secret default/foo (data.password, stringData): " + redactedNote + "\n"; errOut != want {
				t.Fatalf("stderr %q, want %q", errOut, want)
			}
		})
	}
}
