package main

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kube-applier-aws/kubeapplier"
)

const multiDoc = `apiVersion: v1
kind: ConfigMap
metadata:
  name: foo
data:
  a: "1"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  replicas: 2
---
---
apiVersion: v1
kind: Namespace
metadata:
  name: shop
`

var (
	idFoo  = id("", "v1", "configmaps", "default", "foo")
	idWeb  = id("apps", "v1", "deployments", "shop", "web")
	idShop = id("", "v1", "namespaces", "", "shop")
)

func contentOf(t *testing.T, d *kubeapplier.ApplyDesire) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(d.Spec.KubeContent, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestApplyMultiDocument(t *testing.T) {
	h := newHarness(t)
	out, errOut, code := h.run("apply", "-f", h.writeFile("objs.yaml", multiDoc))
	assertExit(t, code, 0, errOut)
	want := "applydesire/" + idFoo + " created (ConfigMap default/foo)\n" +
		"applydesire/" + idWeb + " created (Deployment shop/web)\n" +
		"applydesire/" + idShop + " created (Namespace shop)\n"
	if out != want {
		t.Fatalf("stdout:\n%s\nwant:\n%s", out, want)
	}
	if errOut != "" {
		t.Fatalf("stderr: %q", errOut)
	}
	for _, tc := range []struct {
		id      string
		content map[string]any
	}{
		{idFoo, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "foo", "namespace": "default"}, "data": map[string]any{"a": "1"}}},
		{idWeb, map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "shop"}, "spec": map[string]any{"replicas": float64(2)}}},
		{idShop, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop"}}},
	} {
		d := h.applySpec(tc.id)
		if d.Version != 1 || d.Spec.ManagementCluster != testMC || d.Spec.ClusterID != testCluster {
			t.Errorf("%s: version %d spec %+v", tc.id, d.Version, d.Spec.CommonSpec)
		}
		if got := contentOf(t, d); !reflect.DeepEqual(got, tc.content) {
			t.Errorf("%s: kubeContent %v, want %v", tc.id, got, tc.content)
		}
	}
}

func TestReapplyReplaces(t *testing.T) {
	h := newHarness(t)
	h.mustRun("apply", "-f", h.writeFile("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: foo}\ndata: {a: '1'}\n"))
	first := h.applySpec(idFoo)
	out := h.mustRun("apply", "-f", h.writeFile("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: foo}\ndata: {a: '2'}\n"))
	if out != "applydesire/"+idFoo+" configured (ConfigMap default/foo)\n" {
		t.Fatalf("stdout %q", out)
	}
	d := h.applySpec(idFoo)
	if d.Version != 2 || !d.CreateTime.Equal(first.CreateTime) {
		t.Fatalf("version %d createTime %v (first %v)", d.Version, d.CreateTime, first.CreateTime)
	}
	if got := contentOf(t, d)["data"]; !reflect.DeepEqual(got, map[string]any{"a": "2"}) {
		t.Fatalf("data %v", got)
	}
}

// A writer that replaces the spec between our Get and Replace makes the Replace fail its
// version precondition; apply reads again and retries once.
func TestApplyRetriesPreconditionFailure(t *testing.T) {
	h := newHarness(t)
	file := h.writeFile("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: foo}\n")
	h.mustRun("apply", "-f", file)
	raced := false
	h.db.BeforePut = func(in *dynamodb.PutItemInput) {
		if raced || !strings.Contains(*in.ConditionExpression, "=") {
			return
		}
		raced = true
		tbl := specs[*kubeapplier.ApplyDesire](h, kubeapplier.KindApplyDesire)
		cur, err := tbl.Get(context.Background(), idFoo)
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := tbl.Replace(context.Background(), cur); err != nil {
			t.Error(err)
		}
	}
	out := h.mustRun("apply", "-f", h.writeFile("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: foo}\ndata: {a: '1'}\n"))
	if !raced || out != "applydesire/"+idFoo+" configured (ConfigMap default/foo)\n" {
		t.Fatalf("raced %v stdout %q", raced, out)
	}
	if v := h.applySpec(idFoo).Version; v != 3 {
		t.Fatalf("version %d, want 3", v)
	}
}

func TestApplyInputs(t *testing.T) {
	cm := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n"
	}
	for _, tc := range []struct {
		name  string
		setup func(h *harness) []string // returns the apply arguments
		want  []string                  // names of the ConfigMaps, in output order
	}{
		{"stdin", func(h *harness) []string { h.stdin = cm("a") + "---\n" + cm("b"); return []string{"-f", "-"} }, []string{"a", "b"}},
		{"json stream", func(h *harness) []string {
			return []string{"-f", h.writeFile("x.json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}} {"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}`)}
		}, []string{"a", "b"}},
		{"list", func(h *harness) []string {
			return []string{"-f", h.writeFile("l.yaml", "apiVersion: v1\nkind: List\nitems:\n- "+strings.ReplaceAll(cm("a"), "\n", "\n  ")+"\n- "+strings.ReplaceAll(cm("b"), "\n", "\n  "))}
		}, []string{"a", "b"}},
		{"directory in name order", func(h *harness) []string {
			h.writeFile("d/b.yml", cm("b"))
			h.writeFile("d/a.json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`)
			h.writeFile("d/c.yaml", cm("c"))
			h.writeFile("d/notes.txt", "not a manifest")
			return []string{"-f", h.dir + "/d"}
		}, []string{"a", "b", "c"}},
		{"namespace flag", func(h *harness) []string { return []string{"-f", h.writeFile("a.yaml", cm("a")), "-n", "team"} }, []string{"team/a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			out := h.mustRun(append([]string{"apply"}, tc.setup(h)...)...)
			var want string
			for _, n := range tc.want {
				ns, name, ok := strings.Cut(n, "/")
				if !ok {
					ns, name = "default", n
				}
				want += "applydesire/" + id("", "v1", "configmaps", ns, name) + " created (ConfigMap " + ns + "/" + name + ")\n"
			}
			if out != want {
				t.Fatalf("stdout:\n%s\nwant:\n%s", out, want)
			}
		})
	}
}

// Without discovery, resources are guessed with a warning, except for kinds whose CRD is in
// the same input.
func TestApplyWithoutDiscovery(t *testing.T) {
	h := newHarness(t)
	h.discovery = false
	h.env["KUBECONFIG"] = "/nowhere"
	in := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gizmos.example.com}
spec:
  group: example.com
  scope: Cluster
  names: {kind: Gizmo, plural: gizmoes}
---
apiVersion: example.com/v1
kind: Gizmo
metadata: {name: g1}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny, namespace: shop}
---
apiVersion: v1
kind: Endpoints
metadata: {name: ep}
`
	out, errOut, code := h.run("apply", "-f", h.writeFile("in.yaml", in))
	assertExit(t, code, 0, errOut)
	want := "applydesire/" + id("apiextensions.k8s.io", "v1", "customresourcedefinitions", "", "gizmos.example.com") + " created (CustomResourceDefinition gizmos.example.com)\n" +
		"applydesire/" + id("example.com", "v1", "gizmoes", "", "g1") + " created (Gizmo g1)\n" +
		"applydesire/" + id("networking.k8s.io", "v1", "networkpolicies", "shop", "deny") + " created (NetworkPolicy shop/deny)\n" +
		"applydesire/" + id("", "v1", "endpoints", "default", "ep") + " created (Endpoints default/ep)\n"
	if out != want {
		t.Fatalf("stdout:\n%s\nwant:\n%s", out, want)
	}
	wantErr := "warning: cluster discovery unavailable (/nowhere), resource names are guessed: connection refused\n" +
		"warning: no cluster discovery (set --kubeconfig or KUBECONFIG): guessed resource \"customresourcedefinitions\" (cluster-scoped) for kind CustomResourceDefinition.apiextensions.k8s.io\n" +
		"warning: no cluster discovery (set --kubeconfig or KUBECONFIG): guessed resource \"networkpolicies\" (namespaced) for kind NetworkPolicy.networking.k8s.io\n" +
		"warning: no cluster discovery (set --kubeconfig or KUBECONFIG): guessed resource \"endpoints\" (namespaced) for kind Endpoints\n"
	if errOut != wantErr {
		t.Fatalf("stderr:\n%s\nwant:\n%s", errOut, wantErr)
	}
}

func TestApplyClusterScopedDropsNamespace(t *testing.T) {
	h := newHarness(t)
	out, errOut, code := h.run("apply", "-f", h.writeFile("cr.yaml", "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r, namespace: x}\n"))
	assertExit(t, code, 0, errOut)
	rid := id("rbac.authorization.k8s.io", "v1", "clusterroles", "", "r")
	if out != "applydesire/"+rid+" created (ClusterRole r)\n" || !strings.Contains(errOut, `ClusterRole r is cluster-scoped; ignoring metadata.namespace "x"`) {
		t.Fatalf("stdout %q stderr %q", out, errOut)
	}
	if md := contentOf(t, h.applySpec(rid))["metadata"]; !reflect.DeepEqual(md, map[string]any{"name": "r"}) {
		t.Fatalf("metadata %v", md)
	}
}

func TestApplyTaskKeyFlag(t *testing.T) {
	h := newHarness(t)
	out := h.mustRun("apply", "--task-key", "task-7", "-f", h.writeFile("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: foo}\n"))
	want := kubeapplier.DesireID("task-7", kubeapplier.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "foo"})
	if !strings.HasPrefix(out, "applydesire/"+want+" created") {
		t.Fatalf("stdout %q, want ID %s", out, want)
	}
}

func TestApplyUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file, extra, wantErr string
	}{
		{"no name", "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n", "", "object is missing metadata.name"},
		{"generateName", "apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: x-}\n", "", `metadata.generateName "x-" without metadata.name`},
		{"no kind", "apiVersion: v1\nmetadata: {name: a}\n", "", "object is missing kind"},
		{"not yaml", "a: [\n", "", "in.yaml#1"},
		{"namespace conflict", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: x}\n", "y", `the namespace from the object "x" does not match --namespace "y"`},
		{"empty", "---\n", "", "no objects found in"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			args := []string{"apply", "-f", h.writeFile("in.yaml", tc.file)}
			if tc.extra != "" {
				args = append(args, "-n", tc.extra)
			}
			_, errOut, code := h.run(args...)
			assertExit(t, code, exitUsage, errOut)
			if !strings.Contains(errOut, tc.wantErr) || strings.Count(errOut, "\n") != 1 {
				t.Fatalf("stderr %q, want one line with %q", errOut, tc.wantErr)
			}
			if h.db.Writes() != 0 {
				t.Fatalf("%d writes", h.db.Writes())
			}
		})
	}
}

func TestApplyWait(t *testing.T) {
	notServed := kubeapplier.ErrKindNotServed.Error() + ": kind example.com/v1, Kind=Gizmo is not known to the cluster"
	for _, tc := range []struct {
		name string
		// statuses[n] is written after the n-th poll (0: before apply, at spec version 1).
		statuses   map[int]outcome
		staleFirst bool // the status before apply is for the previous spec version
		wantCode   int
		wantSleeps int
		wantOut    string // after the "configured" line
		wantErr    string
	}{
		{name: "success after one poll", statuses: map[int]outcome{1: okOutcome}, wantSleeps: 1,
			wantOut: "applydesire/" + idFoo + " condition met\n"},
		{name: "stale success ignored", staleFirst: true, statuses: map[int]outcome{0: okOutcome, 2: okOutcome}, wantSleeps: 2,
			wantOut: "applydesire/" + idFoo + " condition met\n"},
		{name: "permanent failure", statuses: map[int]outcome{1: {reason: kubeapplier.ReasonKubeAPIError, message: "admission webhook denied it"}},
			wantCode: 1, wantSleeps: 1,
			wantErr: "error: applydesire/" + idFoo + " (ConfigMap default/foo): Successful=False, reason KubeAPIError: admission webhook denied it\n"},
		{name: "transient then success", statuses: map[int]outcome{
			1: {degraded: true, reason: kubeapplier.ReasonKubeAPIError, message: "etcd timeout"},
			3: okOutcome}, wantSleeps: 3, wantOut: "applydesire/" + idFoo + " condition met\n"},
		{name: "kind not served yet then success", statuses: map[int]outcome{
			1: {reason: kubeapplier.ReasonKindNotServed, message: notServed},
			2: okOutcome}, wantSleeps: 2, wantOut: "applydesire/" + idFoo + " condition met\n"},
		{name: "precheck failure is permanent whatever its message", statuses: map[int]outcome{
			1: {reason: kubeapplier.ReasonPreCheckFailed, message: notServed},
			2: okOutcome}, wantCode: 1, wantSleeps: 1,
			wantErr: "error: applydesire/" + idFoo + " (ConfigMap default/foo): Successful=False, reason PreCheckFailed: " + notServed + "\n"},
		{name: "timeout", statuses: map[int]outcome{2: {degraded: true, reason: kubeapplier.ReasonKubeAPIError, message: "throttled"}},
			wantCode: 1, wantSleeps: 5,
			wantErr: "error: timed out after 5s waiting for applydesire/" + idFoo + " (ConfigMap default/foo) to be Successful=True: Successful=False, reason KubeAPIError: throttled\n"},
		{name: "timeout without status", wantCode: 1, wantSleeps: 5,
			wantErr: "error: timed out after 5s waiting for applydesire/" + idFoo + " (ConfigMap default/foo) to be Successful=True: the applier has written no status yet\n" +
				"error: " + noStatusHint(testMC) + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			file := h.writeFile("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: foo}\n")
			verb := "created"
			if tc.staleFirst {
				h.mustRun("apply", "-f", h.writeFile("cm0.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: foo}\ndata: {a: '0'}\n"))
				verb = "configured"
			}
			if o, ok := tc.statuses[0]; ok {
				h.writeStatus(kubeapplier.KindApplyDesire, idFoo, 1, o)
			}
			h.clock.onSleep = func(n int) {
				if o, ok := tc.statuses[n]; ok {
					h.writeStatus(kubeapplier.KindApplyDesire, idFoo, h.specVersion(kubeapplier.KindApplyDesire, idFoo), o)
				}
			}
			out, errOut, code := h.run("apply", "-f", file, "--wait", "--timeout", "5s")
			assertExit(t, code, tc.wantCode, errOut)
			wantOut := "applydesire/" + idFoo + " " + verb + " (ConfigMap default/foo)\n" + tc.wantOut
			if out != wantOut || errOut != tc.wantErr {
				t.Fatalf("stdout:\n%s\nwant:\n%s\nstderr:\n%s\nwant:\n%s", out, wantOut, errOut, tc.wantErr)
			}
			if h.clock.sleeps != tc.wantSleeps {
				t.Fatalf("%d polls slept, want %d", h.clock.sleeps, tc.wantSleeps)
			}
		})
	}
}

// With several desires, a permanent failure of one is reported once the others are settled.
func TestApplyWaitSeveral(t *testing.T) {
	h := newHarness(t)
	h.clock.onSleep = func(n int) {
		if n == 1 {
			h.writeStatus(kubeapplier.KindApplyDesire, idFoo, 1, okOutcome)
			h.writeStatus(kubeapplier.KindApplyDesire, idShop, 1, outcome{reason: kubeapplier.ReasonPreCheckFailed, message: "spec.managementCluster is wrong"})
		}
		if n == 2 {
			h.writeStatus(kubeapplier.KindApplyDesire, idWeb, 1, okOutcome)
		}
	}
	out, errOut, code := h.run("apply", "-f", h.writeFile("objs.yaml", multiDoc), "--wait")
	assertExit(t, code, exitFailed, errOut)
	if !strings.HasSuffix(out, "applydesire/"+idFoo+" condition met\napplydesire/"+idWeb+" condition met\n") {
		t.Fatalf("stdout:\n%s", out)
	}
	if errOut != "error: applydesire/"+idShop+" (Namespace shop): Successful=False, reason PreCheckFailed: spec.managementCluster is wrong\n" {
		t.Fatalf("stderr:\n%s", errOut)
	}
}

// apply after delete removes the DeleteDesire, as delete removes the ApplyDesire: otherwise
// the object would be deleted and re-created forever.
func TestApplyRemovesTheDeleteDesire(t *testing.T) {
	h := newHarness(t)
	file := h.writeFile("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: foo}\n")
	h.mustRun("delete", "configmaps", "foo")
	out := h.mustRun("apply", "-f", file)
	want := "deletedesire/" + idFoo + " deleted (ConfigMap default/foo)\napplydesire/" + idFoo + " created (ConfigMap default/foo)\n"
	if out != want {
		t.Fatalf("stdout:\n%s\nwant:\n%s", out, want)
	}
	if v := h.specVersion(kubeapplier.KindDeleteDesire, idFoo); v != 0 {
		t.Fatalf("DeleteDesire still there at version %d", v)
	}
	// Without a DeleteDesire, apply prints only its own line.
	if out := h.mustRun("apply", "-f", file); out != "applydesire/"+idFoo+" unchanged (ConfigMap default/foo)\n" {
		t.Fatalf("stdout %q", out)
	}
}

// A spec deleted and written again starts at version 1 again: the status of the earlier one
// (Successful at version 1) must not end the wait, nor show as the new one's in get.
func TestApplyWaitIgnoresTheStatusOfAnEarlierSpec(t *testing.T) {
	h := newHarness(t)
	file := h.writeFile("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: foo}\n")
	h.mustRun("apply", "-f", file)
	h.writeStatusAt(kubeapplier.KindApplyDesire, idFoo, 1, testStart, okOutcome)
	h.mustRun("delete", "configmaps", "foo")
	var got string
	h.clock.onSleep = func(n int) {
		switch n {
		case 1:
			got = h.mustRun("get", "configmaps", "foo", "-o", "wide")
		case 2:
			h.writeStatus(kubeapplier.KindApplyDesire, idFoo, 1, okOutcome)
		}
	}
	out, errOut, code := h.run("apply", "-f", file, "--wait")
	assertExit(t, code, 0, errOut)
	if !strings.HasSuffix(out, "applydesire/"+idFoo+" condition met\n") || h.clock.sleeps != 2 {
		t.Fatalf("stdout %q after %d polls, want the condition met after the status of the new spec (2 polls)", out, h.clock.sleeps)
	}
	if v := h.specVersion(kubeapplier.KindApplyDesire, idFoo); v != 1 {
		t.Fatalf("re-created spec at version %d", v)
	}
	if !strings.Contains(got, " Unknown ") || !strings.Contains(got, "the status is for an earlier spec written at 2025-03-01T12:00:00Z") {
		t.Fatalf("get shows the earlier spec's status as the new one's:\n%s", got)
	}
}

// Applying a manifest whose desire is stored as it is writes nothing (no new version, so no
// reconcile and no status write) and says so, as kubectl does; so does a repeated delete.
func TestReapplyUnchanged(t *testing.T) {
	h := newHarness(t)
	h.mustRun("apply", "-f", h.writeFile("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: foo}\ndata: {a: '1', b: '2'}\n"))
	for _, tc := range []struct{ name, manifest string }{
		{"the same file", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: foo}\ndata: {a: '1', b: '2'}\n"},
		{"other key order and layout", "kind: ConfigMap\napiVersion: v1\ndata:\n  b: \"2\"\n  a: \"1\"\nmetadata:\n  namespace: default\n  name: foo\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			writes := h.db.Writes()
			out := h.mustRun("apply", "-f", h.writeFile("cm.yaml", tc.manifest))
			if out != "applydesire/"+idFoo+" unchanged (ConfigMap default/foo)\n" {
				t.Fatalf("stdout %q", out)
			}
			if n := h.db.Writes() - writes; n != 0 {
				t.Fatalf("%d writes", n)
			}
			if v := h.specVersion(kubeapplier.KindApplyDesire, idFoo); v != 1 {
				t.Fatalf("version %d, want 1", v)
			}
		})
	}
	// Another cluster ID is a change.
	out := h.mustRun("apply", "-f", h.writeFile("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: foo}\ndata: {a: '1', b: '2'}\n"),
		"--task-key", testCluster, "--cluster-id", "other")
	if out != "applydesire/"+idFoo+" configured (ConfigMap default/foo)\n" || h.specVersion(kubeapplier.KindApplyDesire, idFoo) != 2 {
		t.Fatalf("stdout %q, version %d", out, h.specVersion(kubeapplier.KindApplyDesire, idFoo))
	}
	// delete: the first removes the ApplyDesire and writes the DeleteDesire; the second
	// finds it as it would write it.
	h.mustRun("delete", "configmaps", "foo")
	writes := h.db.Writes()
	if out := h.mustRun("delete", "configmaps", "foo"); out != "deletedesire/"+idFoo+" unchanged (ConfigMap default/foo)\n" || h.db.Writes() != writes {
		t.Fatalf("second delete: stdout %q, %d writes", out, h.db.Writes()-writes)
	}
}
