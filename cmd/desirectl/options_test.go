package main

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
)

const cmFoo = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: foo}\ndata: {a: '1'}\n"

// Every option flag of apply lands in the spec as its attribute; a flag at its default sets
// nothing.
func TestApplyOptionFlags(t *testing.T) {
	no := false
	for _, tc := range []struct {
		name  string
		flags []string
		want  api.ApplyDesireSpec // the options only
	}{
		{"none", nil, api.ApplyDesireSpec{}},
		{"defaults spelled out write nothing", []string{"--apply-policy", "ServerSideApply", "--force-conflicts=true"}, api.ApplyDesireSpec{}},
		{"read only", []string{"--apply-policy", "ReadOnly"}, api.ApplyDesireSpec{ApplyPolicy: api.ApplyPolicyReadOnly}},
		{"create only", []string{"--apply-policy=CreateOnly"}, api.ApplyDesireSpec{ApplyPolicy: api.ApplyPolicyCreateOnly}},
		{"no forced conflicts", []string{"--force-conflicts=false"}, api.ApplyDesireSpec{ForceConflicts: &no}},
		{"ignored fields, repeated, split at ,/", []string{"--ignore-fields", "OnTargetPresent=/spec/replicas,/metadata/annotations/a,b",
			"--ignore-fields", "OnTargetChange=/data/x"},
			api.ApplyDesireSpec{IgnoreFields: []api.IgnoreField{
				{Condition: api.IgnoreOnTargetPresent, JSONPointers: []string{"/spec/replicas", "/metadata/annotations/a,b"}},
				{Condition: api.IgnoreOnTargetChange, JSONPointers: []string{"/data/x"}}}}},
		{"yield to managers", []string{"--yield-to-manager", "hpa-controller", "--yield-to-manager", "a,b"},
			api.ApplyDesireSpec{YieldToManagers: []string{"hpa-controller", "a,b"}}},
		{"feedback in order", []string{"--feedback", "ready=.status.readyReplicas", "--feedback", `avail={.status.conditions[?(@.type=="Available")].status}`},
			api.ApplyDesireSpec{StatusFeedback: &api.StatusFeedback{JSONPaths: []api.FeedbackRule{
				{Name: "ready", Path: ".status.readyReplicas"}, {Name: "avail", Path: `{.status.conditions[?(@.type=="Available")].status}`}}}}},
		{"health", []string{"--health-current", "self.x == 1", "--health-failed", "self.y"},
			api.ApplyDesireSpec{Health: &api.HealthRules{Current: "self.x == 1", Failed: "self.y"}}},
		{"owner", []string{"--owner", "team-a"}, api.ApplyDesireSpec{CommonSpec: api.CommonSpec{Owner: "team-a"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.mustRun(append([]string{"apply", "-f", h.writeFile("cm.yaml", cmFoo)}, tc.flags...)...)
			got := h.applySpec(idFoo).Spec
			if got.ManagementCluster != testMC || got.ClusterID != testCluster {
				t.Fatalf("common spec %+v", got.CommonSpec)
			}
			got.KubeContent, got.ManagementCluster, got.ClusterID = nil, "", ""
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("spec options\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

// Values the applier would refuse are refused before any write, as a usage error naming the
// flag or the attribute and value.
func TestOptionFlagsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"unknown apply policy", []string{"apply", "--apply-policy", "readOnly"}, `spec.applyPolicy is "readOnly", a value this applier does not know`},
		{"ignore-fields without =", []string{"apply", "--ignore-fields", "/spec/replicas"}, `--ignore-fields "/spec/replicas": want CONDITION=POINTER`},
		{"ignore-fields, unknown condition", []string{"apply", "--ignore-fields", "Always=/spec/replicas"}, `spec.ignoreFields[0].condition is "Always"`},
		{"ignore-fields, no pointer", []string{"apply", "--ignore-fields", "OnTargetPresent="}, `want CONDITION=POINTER`},
		{"ignore-fields, not a pointer", []string{"apply", "--ignore-fields", "OnTargetPresent=spec.replicas"}, `JSON Pointer "spec.replicas" does not start with "/"`},
		{"empty manager", []string{"apply", "--yield-to-manager", ""}, "spec.yieldToManagers[0] is empty"},
		{"feedback without =", []string{"apply", "--feedback", ".status.x"}, `--feedback ".status.x": want NAME=JSONPATH`},
		{"feedback name twice", []string{"apply", "--feedback", "a=.x", "--feedback", "a=.y"}, `name "a" is used twice`},
		{"feedback without a path", []string{"apply", "--feedback", "a="}, "spec.statusFeedback.jsonPaths[0].path is empty"},
		{"unknown propagation", []string{"delete", "configmaps", "foo", "--propagation-policy", "Cascade"}, `spec.propagationPolicy is "Cascade"`},
		{"fields not pointers", []string{"read", "configmaps", "foo", "--fields", "data"}, `spec.fields[0]: JSON Pointer "data"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			args := tc.args
			if args[0] == "apply" {
				args = append(args, "-f", h.writeFile("cm.yaml", cmFoo))
			}
			_, errOut, code := h.run(args...)
			assertExit(t, code, exitUsage, errOut)
			if !strings.Contains(errOut, tc.want) {
				t.Fatalf("stderr %q, want it to contain %q", errOut, tc.want)
			}
			if h.db.Writes() != 0 {
				t.Fatalf("%d writes", h.db.Writes())
			}
		})
	}
}

// The same manifest with the same options is unchanged. A change of options alone is a new version, and so is dropping them.
// A stored spec that spells a default out, or holds empty lists, is the same as none.
func TestApplyOptionsVersions(t *testing.T) {
	h := newHarness(t)
	file := h.writeFile("cm.yaml", cmFoo)
	opts := []string{"--apply-policy", "ReadOnly", "--feedback", "a=.data.a", "--ignore-fields", "OnTargetPresent=/data/b", "--owner", "me"}
	for i, step := range []struct {
		flags   []string
		verb    string
		version int64
	}{
		{opts, "created", 1},
		{opts, "unchanged", 1},
		{append(opts[:len(opts):len(opts)], "--yield-to-manager", "hpa"), "configured", 2},
		{nil, "configured", 3},
		{nil, "unchanged", 3},
		{[]string{"--force-conflicts=true", "--apply-policy", "ServerSideApply"}, "unchanged", 3},
	} {
		out := h.mustRun(append([]string{"apply", "-f", file}, step.flags...)...)
		if want := "applydesire/" + idFoo + " " + step.verb + " (ConfigMap default/foo)\n"; out != want {
			t.Fatalf("step %d: stdout %q, want %q", i, out, want)
		}
		if v := h.specVersion(kubeapplier.KindApplyDesire, idFoo); v != step.version {
			t.Fatalf("step %d: version %d, want %d", i, v, step.version)
		}
	}
	// A spec as a backend may store it: defaults spelled out, empty lists.
	yes := true
	d := h.applySpec(idFoo)
	d.Spec.ApplyPolicy, d.Spec.ForceConflicts = api.ApplyPolicyServerSideApply, &yes
	d.Spec.IgnoreFields, d.Spec.YieldToManagers, d.Spec.StatusFeedback = []api.IgnoreField{}, []string{}, &api.StatusFeedback{JSONPaths: []api.FeedbackRule{}}
	if _, err := specs[*kubeapplier.ApplyDesire](h, kubeapplier.KindApplyDesire).Replace(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	writes := h.db.Writes()
	if out := h.mustRun("apply", "-f", file); !strings.Contains(out, " unchanged ") || h.db.Writes() != writes {
		t.Fatalf("defaults spelled out: %q, %d writes", out, h.db.Writes()-writes)
	}
}

func TestSameSpecOptions(t *testing.T) {
	no, yes := false, true
	content := []byte(`{"kind":"ConfigMap"}`)
	apply := func(s api.ApplyDesireSpec) *api.ApplyDesire {
		s.KubeContent = content
		return &api.ApplyDesire{Spec: s}
	}
	for _, tc := range []struct {
		name string
		a, b api.Desire
		same bool
	}{
		{"no options", apply(api.ApplyDesireSpec{}), apply(api.ApplyDesireSpec{}), true},
		{"default policy spelled out", apply(api.ApplyDesireSpec{ApplyPolicy: "ServerSideApply"}), apply(api.ApplyDesireSpec{}), true},
		{"another policy", apply(api.ApplyDesireSpec{ApplyPolicy: "ReadOnly"}), apply(api.ApplyDesireSpec{}), false},
		{"forceConflicts true", apply(api.ApplyDesireSpec{ForceConflicts: &yes}), apply(api.ApplyDesireSpec{}), true},
		{"forceConflicts false", apply(api.ApplyDesireSpec{ForceConflicts: &no}), apply(api.ApplyDesireSpec{}), false},
		{"empty lists", apply(api.ApplyDesireSpec{IgnoreFields: []api.IgnoreField{}, YieldToManagers: []string{}, StatusFeedback: &api.StatusFeedback{}}), apply(api.ApplyDesireSpec{}), true},
		{"a manager", apply(api.ApplyDesireSpec{YieldToManagers: []string{"hpa"}}), apply(api.ApplyDesireSpec{}), false},
		{"health without rules is not kstatus", apply(api.ApplyDesireSpec{Health: &api.HealthRules{}}), apply(api.ApplyDesireSpec{}), false},
		{"owner", apply(api.ApplyDesireSpec{CommonSpec: api.CommonSpec{Owner: "x"}}), apply(api.ApplyDesireSpec{}), false},
		{"delete, Background spelled out", &api.DeleteDesire{Spec: api.DeleteDesireSpec{PropagationPolicy: "Background"}}, &api.DeleteDesire{}, true},
		{"delete, Orphan", &api.DeleteDesire{Spec: api.DeleteDesireSpec{PropagationPolicy: "Orphan"}}, &api.DeleteDesire{}, false},
		{"read, empty fields", &api.ReadDesire{Spec: api.ReadDesireSpec{Fields: []string{}}}, &api.ReadDesire{}, true},
		{"read, fields", &api.ReadDesire{Spec: api.ReadDesireSpec{Fields: []string{"/data"}}}, &api.ReadDesire{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sameSpec(tc.a, tc.b); got != tc.same {
				t.Fatalf("sameSpec = %v, want %v", got, tc.same)
			}
			if got := sameSpec(tc.b, tc.a); got != tc.same {
				t.Fatalf("sameSpec reversed = %v, want %v", got, tc.same)
			}
		})
	}
}

// delete writes --propagation-policy and --owner; again with the same flags is unchanged,
// and Background is the default's spelling.
func TestDeleteOptionFlags(t *testing.T) {
	h := newHarness(t)
	for i, step := range []struct {
		flags   []string
		verb    string
		policy  string
		version int64
	}{
		{[]string{"--propagation-policy", "Foreground", "--owner", "me"}, "created", "Foreground", 1},
		{[]string{"--propagation-policy", "Foreground", "--owner", "me"}, "unchanged", "Foreground", 1},
		{[]string{"--propagation-policy", "Orphan", "--owner", "me"}, "configured", "Orphan", 2},
		{[]string{"--propagation-policy", "Background"}, "configured", "", 3},
		{nil, "unchanged", "", 3},
	} {
		out := h.mustRun(append([]string{"delete", "configmaps", "foo"}, step.flags...)...)
		if want := "deletedesire/" + idFoo + " " + step.verb + " (ConfigMap default/foo)\n"; out != want {
			t.Fatalf("step %d: stdout %q, want %q", i, out, want)
		}
		d, err := specs[*kubeapplier.DeleteDesire](h, kubeapplier.KindDeleteDesire).Get(context.Background(), idFoo)
		if err != nil {
			t.Fatal(err)
		}
		if d.Version != step.version || d.Spec.PropagationPolicy != step.policy {
			t.Fatalf("step %d: version %d policy %q", i, d.Version, d.Spec.PropagationPolicy)
		}
	}
	if d, _ := specs[*kubeapplier.DeleteDesire](h, kubeapplier.KindDeleteDesire).Get(context.Background(), idFoo); d.Spec.Owner != "" {
		t.Fatalf("owner %q after a delete without --owner", d.Spec.Owner)
	}
}

// read --fields writes spec.fields into the ReadDesire it creates; an existing ReadDesire that
// asks for other fields is written as asked.
func TestReadFieldsFlag(t *testing.T) {
	h := newHarness(t)
	var during *kubeapplier.ReadDesire
	h.clock.onSleep = func(n int) {
		if n != 1 {
			return
		}
		d, err := specs[*kubeapplier.ReadDesire](h, kubeapplier.KindReadDesire).Get(context.Background(), idFoo)
		if err != nil {
			t.Error(err)
			return
		}
		during = d
		h.writeStatus(kubeapplier.KindReadDesire, idFoo, d.Version, outcome{successful: true, reason: kubeapplier.ReasonNoErrors,
			content: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"foo","namespace":"default"},"data":{"a":"1"}}`})
	}
	out := h.mustRun("read", "configmaps", "foo", "--fields", "/data,/metadata/labels", "--fields", "/status/phase", "--owner", "me", "--keep")
	if during == nil || !reflect.DeepEqual(during.Spec.Fields, []string{"/data", "/metadata/labels", "/status/phase"}) || during.Spec.Owner != "me" {
		t.Fatalf("the ReadDesire while read waited: %+v", during)
	}
	if !strings.Contains(out, "a: \"1\"") {
		t.Fatalf("stdout %q", out)
	}
	// Kept; the same read again reuses it (no write), other fields rewrite it.
	writes := h.db.Writes()
	h.clock.onSleep = nil
	h.mustRun("read", "configmaps", "foo", "--fields", "/data,/metadata/labels", "--fields", "/status/phase", "--owner", "me")
	if h.db.Writes() != writes {
		t.Fatalf("the same read wrote %d times", h.db.Writes()-writes)
	}
	h.clock.onSleep = func(int) {
		if h.specVersion(kubeapplier.KindReadDesire, idFoo) == 2 {
			h.writeStatus(kubeapplier.KindReadDesire, idFoo, 2, outcome{successful: true, reason: kubeapplier.ReasonNoErrors, content: `{"kind":"ConfigMap"}`})
		}
	}
	h.mustRun("read", "configmaps", "foo", "--fields", "/data", "--owner", "me")
	d, err := specs[*kubeapplier.ReadDesire](h, kubeapplier.KindReadDesire).Get(context.Background(), idFoo)
	if err != nil || d.Version != 2 || !reflect.DeepEqual(d.Spec.Fields, []string{"/data"}) {
		t.Fatalf("after read --fields /data: %+v, %v", d, err)
	}
}

// get -o wide shows the options and the feedback when a listed desire has any; -o yaml
// prints both as stored.
func TestGetShowsOptionsAndFeedback(t *testing.T) {
	h := newHarness(t)
	h.mustRun("apply", "-f", h.writeFile("cm.yaml", cmFoo), "--apply-policy", "ReadOnly", "--owner", "me",
		"--feedback", "a=.data.a", "--feedback", "b=.data.b", "--ignore-fields", "OnTargetPresent=/data/x,/data/y")
	h.mustRun("apply", "-f", h.writeFile("bar.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bar}\n"))
	status := &kubeapplier.ApplyDesire{}
	*status.Meta() = kubeapplier.DynamoDBMetadata{DocumentID: idFoo, Version: 1, CreateTime: testStart, UpdateTime: h.specUpdateTime(kubeapplier.KindApplyDesire, idFoo)}
	okOutcome.set(status)
	status.Status.Feedback = []api.FeedbackValue{{Name: "a", Type: api.FeedbackString, Value: "1"}, {Name: "b", Value: "matched nothing"}}
	putRaw(h.db, tableName(api.StatusTable, kubeapplier.KindApplyDesire), status)

	out := h.mustRun("get", "configmaps", "-o", "wide")
	rows := strings.Split(strings.TrimSpace(out), "\n")
	if len(rows) != 3 || !strings.Contains(strings.Join(strings.Fields(rows[0]), " "), "VERSION OPTIONS FEEDBACK MESSAGE") {
		t.Fatalf("get -o wide:\n%s", out)
	}
	wantFoo := "applyPolicy=ReadOnly;ignoreOnTargetPresent=/data/x,/data/y;feedback=2"
	if !strings.Contains(rows[2], "owner=me;"+wantFoo) || !strings.Contains(rows[2], "a=1;b=<matched nothing>") {
		t.Fatalf("row of foo %q", rows[2])
	}
	if f := strings.Fields(rows[1]); f[2] != "bar" || f[9] != "-" || f[10] != "-" {
		t.Fatalf("row of bar %q", rows[1])
	}
	// Without options the columns are as before.
	h2 := newHarness(t)
	h2.mustRun("apply", "-f", h2.writeFile("bar.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bar}\n"))
	if out := h2.mustRun("get", "configmaps", "-o", "wide"); strings.Contains(out, "OPTIONS") {
		t.Fatalf("an OPTIONS column without options:\n%s", out)
	}

	out = h.mustRun("get", "configmaps", "foo", "-o", "yaml")
	for _, want := range []string{"applyPolicy: ReadOnly", "owner: me", "- name: a\n      path: .data.a", "feedback:\n  - name: a\n    type: String\n    value: \"1\"",
		"- name: b\n    value: matched nothing"} {
		if !strings.Contains(out, want) {
			t.Fatalf("get -o yaml lacks %q:\n%s", want, out)
		}
	}
}

// A read without option flags asks nothing of the options: an existing ReadDesire of the
// object (here one a backend keeps, with its owner and fields) is reused as it is, never
// rewritten without them (which would drop another writer's owner and projection).
func TestReadWithoutOptionFlagsKeepsDesire(t *testing.T) {
	h := newHarness(t)
	h.clock.onSleep = func(int) {
		h.writeStatus(kubeapplier.KindReadDesire, idFoo, h.specVersion(kubeapplier.KindReadDesire, idFoo), outcome{successful: true, reason: kubeapplier.ReasonNoErrors,
			content: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"foo","namespace":"default"},"data":{"a":"1"}}`})
	}
	h.mustRun("read", "configmaps", "foo", "--fields", "/data", "--owner", "team-a", "--keep")
	writes := h.db.Writes()
	h.mustRun("read", "configmaps", "foo")
	if h.db.Writes() != writes {
		t.Fatalf("a read without option flags wrote %d times", h.db.Writes()-writes)
	}
	d := readSpec(t, h)
	if d == nil || d.Spec.Owner != "team-a" || !reflect.DeepEqual(d.Spec.Fields, []string{"/data"}) {
		t.Fatalf("the ReadDesire after a plain read: %+v", d)
	}
}
