package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
)

// Test context values.
const (
	testMC      = "mc1"
	testCluster = "cluster-1"
	testPrefix  = "t-"
)

var testStart = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// fakeClock advances only when slept on; onSleep runs after each sleep.
type fakeClock struct {
	now     time.Time
	sleeps  int
	onSleep func(n int)
}

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.now = c.now.Add(d)
	c.sleeps++
	if c.onSleep != nil {
		c.onSleep(c.sleeps)
	}
	return ctx.Err()
}

// fakeResolver is a tiny discovery: a fixed list of resources.
type fakeResolver struct{}

type fakeResource struct {
	info       resourceInfo
	singular   string
	shortNames []string
}

var fakeResources = []fakeResource{
	{resourceInfo{schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "ConfigMap", true}, "configmap", []string{"cm"}},
	{resourceInfo{schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "Namespace", false}, "namespace", []string{"ns"}},
	{resourceInfo{schema.GroupVersionResource{Version: "v1", Resource: "endpoints"}, "Endpoints", true}, "endpoints", []string{"ep"}},
	{resourceInfo{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "Deployment", true}, "deployment", []string{"deploy"}},
	{resourceInfo{schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}, "ClusterRole", false}, "clusterrole", nil},
	{resourceInfo{schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, "Secret", true}, "secret", nil},
}

func (fakeResolver) forKind(_ context.Context, gvk schema.GroupVersionKind) (resourceInfo, error) {
	for _, r := range fakeResources {
		if r.info.GVR.Group == gvk.Group && r.info.GVR.Version == gvk.Version && r.info.Kind == gvk.Kind {
			return r.info, nil
		}
	}
	return resourceInfo{}, errNoMatch
}

func (fakeResolver) forType(_ context.Context, typ string) (resourceInfo, error) {
	fully, gr := schema.ParseResourceArg(typ)
	for _, r := range fakeResources {
		g := r.info.GVR
		names := append([]string{g.Resource, r.singular}, r.shortNames...)
		for _, n := range names {
			if fully != nil && fully.Resource == n && fully.Version == g.Version && fully.Group == g.Group {
				return r.info, nil
			}
			if gr.Resource == n && (gr.Group == g.Group || gr.Group == "") {
				return r.info, nil
			}
		}
	}
	return resourceInfo{}, errNoMatch
}

// harness runs desirectl in-process against a fake DynamoDB, a fake clock and, when
// discovery is set, a fake cluster discovery.
type harness struct {
	t          *testing.T
	dir        string
	configPath string
	db         *fakeDB
	clock      *fakeClock
	discovery  bool
	env        map[string]string
	stdin      string
	tty        bool // stderr is a terminal
}

// newHarness makes a config with the current context "test" (management cluster mc1,
// cluster cluster-1, table prefix t-) and discovery on.
func newHarness(t *testing.T) *harness {
	t.Helper()
	dir := t.TempDir()
	h := &harness{t: t, dir: dir, configPath: filepath.Join(dir, "config.yaml"), db: newFakeDB(),
		clock: &fakeClock{now: testStart}, discovery: true, env: map[string]string{}}
	h.env[configEnv] = h.configPath
	h.mustRun("config", "set-context", "test", "--aws-region", "us-east-1", "--management-cluster", testMC,
		"--cluster-id", testCluster, "--table-prefix", testPrefix)
	h.mustRun("config", "use-context", "test")
	return h
}

// run runs one command line and returns stdout, stderr and the exit code.
func (h *harness) run(args ...string) (string, string, int) {
	h.t.Helper()
	var out, errb syncBuffer
	a := newApp(strings.NewReader(h.stdin), &out, &errb)
	a.setupLogs = testLogs
	defer e2eKlog.to(io.Discard)
	a.getenv = func(k string) string { return h.env[k] }
	a.userConfigDir = func() (string, error) { return filepath.Join(h.dir, "userconfig"), nil }
	a.clock = h.clock
	a.pollInterval = time.Second
	a.isTerminal = func(io.Writer) bool { return h.tty }
	a.newDynamoDB = func(context.Context, settings) (dynamoDB, error) { return h.db, nil }
	a.newDiscovery = func(context.Context, string, func(string)) (resolver, error) {
		if !h.discovery {
			return nil, errors.New("connection refused")
		}
		return fakeResolver{}, nil
	}
	if h.discovery {
		a.getenv = func(k string) string {
			if k == "KUBECONFIG" {
				return "/fake/kubeconfig"
			}
			return h.env[k]
		}
	}
	code := a.run(context.Background(), args)
	return out.String(), errb.String(), code
}

// mustRun runs a command line that must succeed and returns its stdout.
func (h *harness) mustRun(args ...string) string {
	h.t.Helper()
	out, errOut, code := h.run(args...)
	if code != 0 {
		h.t.Fatalf("desirectl %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// writeFile writes a file under the harness directory and returns its path.
func (h *harness) writeFile(name, content string) string {
	h.t.Helper()
	p := filepath.Join(h.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
	return p
}

func tableName(t api.TableKind, k kubeapplier.DesireKind) string {
	return api.TableName(testPrefix, testMC, t, k)
}

func specs[T kubeapplier.Desire](h *harness, k kubeapplier.DesireKind) specWriter[T] {
	return tables.New[T](h.db, tableName(api.SpecsTable, k))
}

// applySpec returns the stored ApplyDesire id.
func (h *harness) applySpec(id string) *kubeapplier.ApplyDesire {
	h.t.Helper()
	d, err := specs[*kubeapplier.ApplyDesire](h, kubeapplier.KindApplyDesire).Get(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return d
}

// outcome is a status the fake applier writes.
type outcome struct {
	successful bool
	degraded   bool
	reason     string
	message    string
	content    string // ReadDesire status.kubeContent (JSON)
	ready      string // ApplyDesire Ready condition; "" for none
}

// set writes o into d's status as the applier would: Successful and Degraded observed at d's
// spec version.
func (o outcome) set(d kubeapplier.Desire) {
	status := func(b bool) string {
		if b {
			return kubeapplier.ConditionTrue
		}
		return kubeapplier.ConditionFalse
	}
	deg, degReason := status(o.degraded), kubeapplier.ReasonNoErrors
	if o.degraded {
		degReason = o.reason
	}
	gen := d.Meta().Version
	s := d.StatusCommon()
	s.Conditions = []api.Condition{
		{Type: kubeapplier.ConditionSuccessful, Status: status(o.successful), Reason: o.reason, Message: o.message, ObservedGeneration: gen},
		{Type: kubeapplier.ConditionDegraded, Status: deg, Reason: degReason, ObservedGeneration: gen},
	}
	if o.ready != "" {
		s.Conditions = append(s.Conditions, api.Condition{Type: kubeapplier.ConditionReady, Status: o.ready, Reason: "Current", ObservedGeneration: gen})
	}
	s.ObservedDesireUpdateTime = d.Meta().UpdateTime.Format(time.RFC3339Nano)
}

var okOutcome = outcome{successful: true, reason: kubeapplier.ReasonNoErrors, message: "done"}

// writeStatus writes the status document of id as the applier would, observed at version of
// the spec document as it is stored now (its updateTime; testStart when there is none).
func (h *harness) writeStatus(kind kubeapplier.DesireKind, id string, version int64, o outcome) {
	h.t.Helper()
	h.writeStatusAt(kind, id, version, h.specUpdateTime(kind, id), o)
}

// writeStatusAt writes the status document of id observed at version and spec updateTime.
func (h *harness) writeStatusAt(kind kubeapplier.DesireKind, id string, version int64, updated time.Time, o outcome) {
	h.t.Helper()
	var d kubeapplier.Desire
	switch kind {
	case kubeapplier.KindApplyDesire:
		d = &kubeapplier.ApplyDesire{}
	case kubeapplier.KindDeleteDesire:
		d = &kubeapplier.DeleteDesire{}
	default:
		rd := &kubeapplier.ReadDesire{}
		if o.content != "" {
			rd.Status.KubeContent = json.RawMessage([]byte(o.content))
		}
		d = rd
	}
	*d.Meta() = kubeapplier.DynamoDBMetadata{DocumentID: id, Version: version, CreateTime: testStart, UpdateTime: updated}
	o.set(d)
	d.Meta().Version = 1 // the status document's own version
	putRaw(h.db, tableName(api.StatusTable, kind), d)
}

// specVersion reads the stored spec version of id (0 when missing).
func (h *harness) specVersion(kind kubeapplier.DesireKind, id string) int64 {
	h.t.Helper()
	return h.specMeta(kind, id).Version
}

// specUpdateTime reads the stored spec updateTime of id (testStart when missing).
func (h *harness) specUpdateTime(kind kubeapplier.DesireKind, id string) time.Time {
	h.t.Helper()
	if m := h.specMeta(kind, id); m.Version != 0 {
		return m.UpdateTime
	}
	return testStart
}

// specMeta reads the stored spec metadata of id (zero when missing).
func (h *harness) specMeta(kind kubeapplier.DesireKind, id string) kubeapplier.DynamoDBMetadata {
	h.t.Helper()
	ctx := context.Background()
	var (
		d   kubeapplier.Desire
		err error
	)
	switch kind {
	case kubeapplier.KindApplyDesire:
		d, err = specs[*kubeapplier.ApplyDesire](h, kind).Get(ctx, id)
	case kubeapplier.KindDeleteDesire:
		d, err = specs[*kubeapplier.DeleteDesire](h, kind).Get(ctx, id)
	default:
		d, err = specs[*kubeapplier.ReadDesire](h, kind).Get(ctx, id)
	}
	if kubeapplier.IsNotFoundError(err) {
		return kubeapplier.DynamoDBMetadata{}
	}
	if err != nil {
		h.t.Fatal(err)
	}
	return *d.Meta()
}

// id is the desire ID of a target under the default task key (the cluster ID).
func id(group, version, resource, namespace, name string) string {
	return kubeapplier.DesireID(testCluster, kubeapplier.TargetItem{Group: group, Version: version, Resource: resource, Namespace: namespace, Name: name})
}

// assertExit checks an exit code and that stderr's error lines are single "error: " lines.
func assertExit(t *testing.T, code, want int, stderr string) {
	t.Helper()
	if code != want {
		t.Fatalf("exit code %d, want %d; stderr:\n%s", code, want, stderr)
	}
	if want != 0 {
		if !strings.HasPrefix(stderr, "error: ") && !strings.Contains(stderr, "\nerror: ") {
			t.Fatalf("stderr has no 'error: ' line:\n%s", stderr)
		}
	}
}

// specIDs lists the IDs of the spec documents of kind.
func (h *harness) specIDs(kind kubeapplier.DesireKind) []string {
	h.t.Helper()
	ids, err := tables.New[*kubeapplier.ApplyDesire](h.db, tableName(api.SpecsTable, kind)).ListIDs(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	return ids
}
