package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
)

// seeded desire IDs of seedDesires.
var (
	seedApplyFoo  = id("", "v1", "configmaps", "default", "foo")
	seedApplyBar  = id("", "v1", "configmaps", "team", "bar")
	seedApplyWeb  = id("apps", "v1", "deployments", "shop", "web")
	seedDeleteOld = id("", "v1", "configmaps", "default", "old")
	seedReadFoo   = seedApplyFoo // the same target has the same ID in every kind
	seedReadSec   = id("", "v1", "secrets", "default", "foo")
)

func docMeta(id string, version int64, age time.Duration) kubeapplier.DynamoDBMetadata {
	t := testStart.Add(-age)
	return kubeapplier.DynamoDBMetadata{DocumentID: id, Version: version, CreateTime: t, UpdateTime: t}
}

var testCommon = kubeapplier.CommonSpec{ManagementCluster: testMC, ClusterID: testCluster}

// seedDesires writes desires of all kinds, some about other types, with fixed times.
func seedDesires(h *harness) {
	put := func(k kubeapplier.DesireKind, d kubeapplier.Desire) {
		putRaw(h.db, tableName(api.SpecsTable, k), d)
	}
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	put(kubeapplier.KindApplyDesire, &kubeapplier.ApplyDesire{DynamoDBMetadata: docMeta(seedApplyFoo, 2, 2*time.Hour),
		Spec: kubeapplier.ApplyDesireSpec{CommonSpec: testCommon, KubeContent: raw(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"foo","namespace":"default"},"data":{"a":"1"}}`)}})
	put(kubeapplier.KindApplyDesire, &kubeapplier.ApplyDesire{DynamoDBMetadata: docMeta(seedApplyBar, 1, 5*time.Minute),
		Spec: kubeapplier.ApplyDesireSpec{CommonSpec: testCommon, KubeContent: raw(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bar","namespace":"team"}}`)}})
	put(kubeapplier.KindApplyDesire, &kubeapplier.ApplyDesire{DynamoDBMetadata: docMeta(seedApplyWeb, 1, time.Hour),
		Spec: kubeapplier.ApplyDesireSpec{CommonSpec: testCommon, KubeContent: raw(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop"}}`)}})
	put(kubeapplier.KindDeleteDesire, &kubeapplier.DeleteDesire{DynamoDBMetadata: docMeta(seedDeleteOld, 1, 3*24*time.Hour),
		Spec: kubeapplier.DeleteDesireSpec{CommonSpec: testCommon, TargetItem: kubeapplier.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "old"}}})
	put(kubeapplier.KindReadDesire, &kubeapplier.ReadDesire{DynamoDBMetadata: docMeta(seedReadFoo, 3, 90*time.Second),
		Spec: kubeapplier.ReadDesireSpec{CommonSpec: testCommon, TargetItem: kubeapplier.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "foo"}}})
	// A reserved documentID is no desire: get lists none of its kind (TestGetTable's rows).
	put(kubeapplier.KindApplyDesire, &kubeapplier.ApplyDesire{DynamoDBMetadata: docMeta(api.HeartbeatID, 1, time.Minute),
		Spec: kubeapplier.ApplyDesireSpec{CommonSpec: testCommon, KubeContent: raw(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"reserved","namespace":"default"}}`)}})
	put(kubeapplier.KindReadDesire, &kubeapplier.ReadDesire{DynamoDBMetadata: docMeta(seedReadSec, 1, time.Minute),
		Spec: kubeapplier.ReadDesireSpec{CommonSpec: testCommon, TargetItem: kubeapplier.TargetItem{Version: "v1", Resource: "secrets", Namespace: "default", Name: "foo"}}})

	h.writeStatus(kubeapplier.KindApplyDesire, seedApplyFoo, 2, outcome{successful: true, reason: kubeapplier.ReasonNoErrors, message: "applied ConfigMap default/foo", ready: kubeapplier.ConditionTrue})
	h.writeStatus(kubeapplier.KindDeleteDesire, seedDeleteOld, 1, outcome{reason: kubeapplier.ReasonWaitingForDeletion, message: "configmaps/v1 default/old is being deleted; waiting for finalizers: x"})
	h.writeStatus(kubeapplier.KindReadDesire, seedReadFoo, 2, outcome{successful: true, reason: kubeapplier.ReasonNoErrors, message: "mirrored", content: `{"kind":"ConfigMap"}`})
}

func TestGetTable(t *testing.T) {
	all := []string{
		"KIND           NAMESPACE   NAME   SUCCESSFUL   REASON               READY     AGE",
		"ApplyDesire    default     foo    True         NoErrors             True      120m",
		"ReadDesire     default     foo    Unknown      Pending              -         90s",
		"DeleteDesire   default     old    False        WaitingForDeletion   -         3d",
		"ApplyDesire    team        bar    Unknown      Pending              Unknown   5m",
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"plural", []string{"configmaps"}, all},
		{"short name", []string{"cm"}, all},
		{"singular", []string{"configmap"}, all},
		{"namespace", []string{"cm", "-n", "default"}, []string{
			"KIND           NAMESPACE   NAME   SUCCESSFUL   REASON               READY   AGE",
			"ApplyDesire    default     foo    True         NoErrors             True    120m",
			"ReadDesire     default     foo    Unknown      Pending              -       90s",
			"DeleteDesire   default     old    False        WaitingForDeletion   -       3d"}},
		{"name", []string{"configmaps", "foo"}, []string{
			"KIND          NAMESPACE   NAME   SUCCESSFUL   REASON     READY   AGE",
			"ApplyDesire   default     foo    True         NoErrors   True    120m",
			"ReadDesire    default     foo    Unknown      Pending    -       90s"}},
		{"other type", []string{"deployments.apps"}, []string{
			"KIND          NAMESPACE   NAME   SUCCESSFUL   REASON    READY     AGE",
			"ApplyDesire   shop        web    Unknown      Pending   Unknown   60m"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			seedDesires(h)
			out, errOut, code := h.run(append([]string{"get"}, tc.args...)...)
			assertExit(t, code, 0, errOut)
			if want := strings.Join(tc.want, "\n") + "\n"; out != want {
				t.Fatalf("stdout:\n%s\nwant:\n%s", out, want)
			}
			if h.db.Writes() != 0 {
				t.Fatalf("get wrote %d times", h.db.Writes())
			}
		})
	}
}

func TestGetWide(t *testing.T) {
	h := newHarness(t)
	seedDesires(h)
	out := h.mustRun("get", "configmaps", "-n", "default", "-o", "wide")
	want := strings.Join([]string{
		"KIND           NAMESPACE   NAME   SUCCESSFUL   REASON               READY   AGE    ID                                     VERSION   MESSAGE",
		"ApplyDesire    default     foo    True         NoErrors             True    120m   " + seedApplyFoo + "   2         applied ConfigMap default/foo",
		"ReadDesire     default     foo    Unknown      Pending              -       90s    " + seedReadFoo + "   3         the status is for spec version 2, not yet 3 (Successful=True, reason NoErrors: mirrored)",
		"DeleteDesire   default     old    False        WaitingForDeletion   -       3d     " + seedDeleteOld + "   1         configmaps/v1 default/old is being deleted; waiting for finalizers: x",
	}, "\n") + "\n"
	if out != want {
		t.Fatalf("stdout:\n%s\nwant:\n%s", out, want)
	}
}

func TestGetJSON(t *testing.T) {
	h := newHarness(t)
	seedDesires(h)
	out := h.mustRun("get", "configmaps", "-n", "default", "-o", "json")
	var list struct {
		Kind  string `json:"kind"`
		Items []struct {
			Kind       string          `json:"kind"`
			DocumentID string          `json:"documentID"`
			Version    int64           `json:"version"`
			CreateTime time.Time       `json:"createTime"`
			Spec       json.RawMessage `json:"spec"`
			Status     *struct {
				Conditions []struct {
					Type, Status, Reason string
					ObservedGeneration   int64
				} `json:"conditions"`
				KubeContent json.RawMessage `json:"kubeContent"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if list.Kind != "List" || len(list.Items) != 3 {
		t.Fatalf("list: %s", out)
	}
	apply, read, del := list.Items[0], list.Items[1], list.Items[2]
	if apply.Kind != "ApplyDesire" || apply.DocumentID != seedApplyFoo || apply.Version != 2 || !apply.CreateTime.Equal(testStart.Add(-2*time.Hour)) {
		t.Errorf("apply item: %+v", apply)
	}
	var spec struct {
		ManagementCluster string          `json:"managementCluster"`
		KubeContent       json.RawMessage `json:"kubeContent"`
	}
	if err := json.Unmarshal(apply.Spec, &spec); err != nil || spec.ManagementCluster != testMC || !strings.Contains(compact(t, spec.KubeContent), `"data":{"a":"1"}`) {
		t.Errorf("apply spec: %s (%v)", apply.Spec, err)
	}
	if apply.Status == nil || len(apply.Status.Conditions) != 3 || apply.Status.Conditions[0].Type != "Successful" ||
		apply.Status.Conditions[0].Status != "True" || apply.Status.Conditions[0].ObservedGeneration != 2 {
		t.Errorf("apply status: %+v", apply.Status)
	}
	if read.Kind != "ReadDesire" || read.Status == nil || compact(t, read.Status.KubeContent) != `{"kind":"ConfigMap"}` {
		t.Errorf("read item: %+v", read)
	}
	if del.Kind != "DeleteDesire" || !strings.Contains(compact(t, del.Spec), `"targetItem":{"group":"","version":"v1","resource":"configmaps","namespace":"default","name":"old"}`) {
		t.Errorf("delete item: %s", del.Spec)
	}

	// One desire by name: the document itself, as YAML here.
	out = h.mustRun("get", "configmaps", "old", "-o", "yaml")
	for _, want := range []string{"kind: DeleteDesire\n", "documentID: " + seedDeleteOld + "\n", "reason: WaitingForDeletion\n", "  targetItem:\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("yaml lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "kind: List") {
		t.Errorf("single document printed as a list:\n%s", out)
	}
}

func compact(t *testing.T, raw []byte) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestGetWithoutDiscovery(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		wantOut  int // rows, header excluded
		wantErr  string
	}{
		{"needs group and version", []string{"configmaps"}, exitUsage, 0,
			"error: cannot resolve resource type \"configmaps\" without cluster discovery: pass --group and --version, write it as RESOURCE.VERSION.GROUP (e.g. deployments.v1.apps, or configmaps.v1 for the core group), or set --kubeconfig\n"},
		{"resource.version", []string{"configmaps.v1"}, 0, 4, ""},
		{"flags", []string{"configmaps", "--version", "v1"}, 0, 4, ""},
		{"resource.version.group", []string{"deployments.v1.apps"}, 0, 1, ""},
		{"group flag", []string{"deployments", "--group", "apps", "--version", "v1"}, 0, 1, ""},
		{"group without version", []string{"deployments", "--group", "apps"}, exitUsage, 0, "error: --group needs --version\n"},
		{"wrong version", []string{"configmaps.v2"}, 0, 0, "No resources found.\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.discovery = false
			seedDesires(h)
			out, errOut, code := h.run(append([]string{"get"}, tc.args...)...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d; stderr %s", code, tc.wantCode, errOut)
			}
			if rows := strings.Count(out, "\n") - 1; tc.wantOut > 0 && rows != tc.wantOut {
				t.Fatalf("%d rows, want %d:\n%s", rows, tc.wantOut, out)
			}
			if tc.wantErr != "" && errOut != tc.wantErr {
				t.Fatalf("stderr %q, want %q", errOut, tc.wantErr)
			}
		})
	}
}

func TestGetNotFound(t *testing.T) {
	h := newHarness(t)
	out, errOut, code := h.run("get", "configmaps")
	assertExit(t, code, 0, errOut)
	if out != "" || errOut != "No resources found.\n" {
		t.Fatalf("stdout %q stderr %q", out, errOut)
	}
	_, errOut, code = h.run("get", "configmaps", "nope", "-n", "x")
	assertExit(t, code, exitFailed, errOut)
	if errOut != "error: no desire found for ConfigMap x/nope\n" {
		t.Fatalf("stderr %q", errOut)
	}
	_, errOut, code = h.run("get", "widgets")
	assertExit(t, code, exitUsage, errOut)
	if errOut != "error: the server doesn't have a resource type \"widgets\"\n" {
		t.Fatalf("stderr %q", errOut)
	}
}

func TestGetMissingTable(t *testing.T) {
	h := newHarness(t)
	h.db.SetMissing(tableName(api.SpecsTable, kubeapplier.KindApplyDesire))
	_, errOut, code := h.run("get", "configmaps")
	assertExit(t, code, exitUsage, errOut)
	if !strings.Contains(errOut, "check the management cluster, table prefix, region and endpoint") || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("stderr %q", errOut)
	}
}

// get --all-kinds lists the desires about objects of every type (what an alert that names no
// type needs), --degraded only those whose status says Degraded=True.
func TestGetAllKindsDegraded(t *testing.T) {
	h := newHarness(t)
	seedDesires(h)
	h.writeStatus(kubeapplier.KindApplyDesire, seedApplyWeb, 1, outcome{degraded: true, reason: kubeapplier.ReasonKubeAPIError, message: "namespaces \"shop\" not found"})
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"every type", []string{"--all-kinds"}, []string{
			"KIND           TYPE               NAMESPACE   NAME   SUCCESSFUL   REASON               READY     AGE",
			"ApplyDesire    configmaps         default     foo    True         NoErrors             True      120m",
			"ReadDesire     configmaps         default     foo    Unknown      Pending              -         90s",
			"ReadDesire     secrets            default     foo    Unknown      Pending              -         60s",
			"DeleteDesire   configmaps         default     old    False        WaitingForDeletion   -         3d",
			"ApplyDesire    deployments.apps   shop        web    False        KubeAPIError         Unknown   60m",
			"ApplyDesire    configmaps         team        bar    Unknown      Pending              Unknown   5m"}},
		{"degraded", []string{"--all-kinds", "--degraded"}, []string{
			"KIND          TYPE               NAMESPACE   NAME   SUCCESSFUL   REASON         READY     AGE",
			"ApplyDesire   deployments.apps   shop        web    False        KubeAPIError   Unknown   60m"}},
		{"degraded, wide", []string{"--all-kinds", "--degraded", "-o", "wide"}, []string{
			"KIND          TYPE               NAMESPACE   NAME   SUCCESSFUL   REASON         READY     AGE   ID                                     VERSION   MESSAGE",
			"ApplyDesire   deployments.apps   shop        web    False        KubeAPIError   Unknown   60m   " + seedApplyWeb + "   1         namespaces \"shop\" not found"}},
		{"degraded of one type", []string{"configmaps", "--degraded"}, nil},
		{"degraded of one kind, in one namespace", []string{"--all-kinds", "--degraded", "--kind", "apply", "-n", "shop"}, []string{
			"KIND          TYPE               NAMESPACE   NAME   SUCCESSFUL   REASON         READY     AGE",
			"ApplyDesire   deployments.apps   shop        web    False        KubeAPIError   Unknown   60m"}},
		{"degraded of another kind", []string{"--all-kinds", "--degraded", "--kind", "delete"}, nil},
		{"the kind as the alert's label spells it", []string{"--all-kinds", "--degraded", "--kind", "ApplyDesire"}, []string{
			"KIND          TYPE               NAMESPACE   NAME   SUCCESSFUL   REASON         READY     AGE",
			"ApplyDesire   deployments.apps   shop        web    False        KubeAPIError   Unknown   60m"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := h.run(append([]string{"get"}, tc.args...)...)
			assertExit(t, code, 0, errOut)
			want := strings.Join(tc.want, "\n") + "\n"
			wantErr := ""
			if tc.want == nil {
				want, wantErr = "", "No resources found.\n"
			}
			if out != want || errOut != wantErr {
				t.Fatalf("stdout:\n%s\nwant:\n%s\nstderr: %q, want %q", out, want, errOut, wantErr)
			}
		})
	}
	for _, args := range [][]string{{"--all-kinds", "configmaps"}, {}} {
		if _, errOut, code := h.run(append([]string{"get"}, args...)...); code != exitUsage {
			t.Errorf("get %v: exit %d, want %d (%s)", args, code, exitUsage, errOut)
		}
	}
}
