package kubeapplier

import (
	"bytes"
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/go-logr/logr/funcr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/testenv"
)

// countingReconciler counts reconciles per desire.
type countingReconciler[T Desire] struct {
	inner Reconciler[T]
	mu    sync.Mutex
	n     map[string]int
}

// Reconcile counts the reconciles that reached a verdict: a Pending one (waiting for the
// target's watch to sync) made no call.
func (c *countingReconciler[T]) Reconcile(ctx context.Context, d T) Verdict {
	v := c.inner.Reconcile(ctx, d)
	if !v.IsPending() {
		c.mu.Lock()
		c.n[d.Meta().DocumentID]++
		c.mu.Unlock()
	}
	return v
}

func (c *countingReconciler[T]) count(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[id]
}

// specWriteGuard fails the test on any write the applier makes to a specs table.
type specWriteGuard struct {
	DynamoDBAPI
	t      *testing.T
	writes sync.Map // table -> *atomic.Int64 count (the workers write at once), status tables only
}

func (g *specWriteGuard) guard(op, table string) error {
	if strings.Contains(table, "-specs-") {
		g.t.Errorf("the applier called %s on specs table %s", op, table)
		return fmt.Errorf("specWriteGuard: %s on %s refused", op, table)
	}
	n, _ := g.writes.LoadOrStore(table, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
	return nil
}

func (g *specWriteGuard) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if err := g.guard("PutItem", aws.ToString(in.TableName)); err != nil {
		return nil, err
	}
	return g.DynamoDBAPI.PutItem(ctx, in, opts...)
}

func (g *specWriteGuard) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	if err := g.guard("DeleteItem", aws.ToString(in.TableName)); err != nil {
		return nil, err
	}
	return g.DynamoDBAPI.DeleteItem(ctx, in, opts...)
}

// syncBuffer is a bytes.Buffer safe for concurrent log writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) write(prefix, args string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.WriteString(prefix + " " + args + "\n")
}

func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestIntegrationHostileDesires runs one applier through Run(ctx) over many hostile desires at
// once plus good ones, written as raw items by the test (the backend's side). It checks:
// each bad desire gets a clear condition, the good ones converge, reconciles per bad desire
// stay few (no hot loop), the applier never writes a specs table (security check a), and its
// logs at the highest verbosity hold no Secret value and no credential (security check c).
func TestIntegrationHostileDesires(t *testing.T) {
	const (
		secretValue = "s3cr3t-hunter2-9f8e7d"
		awsSecret   = "AWSSECRETKEY-kaa-test-0b1c2d3e4f5a6b7c8d9e"
	)
	logs := &syncBuffer{}
	logger := funcr.New(logs.write, funcr.Options{Verbosity: 10})
	// client-go's own logs too, at -v=7 (request headers; -v=8 would log response bodies, and
	// with them Secret data: the binary never raises klog's verbosity).
	klog.SetLogger(logger.WithName("client-go"))
	var kflags flag.FlagSet
	klog.InitFlags(&kflags)
	_ = kflags.Set("v", "7")
	t.Cleanup(func() { _ = kflags.Set("v", "0"); klog.ClearLogger() })
	var (
		guard     *specWriteGuard
		accessKey string
		applyRec  *countingReconciler[*ApplyDesire]
		deleteRec *countingReconciler[*DeleteDesire]
	)
	e := startE2EWith(t, func(o *Options) {
		// The applier's own client: same database (access key), a recognisable secret key.
		c := o.DynamoDB.(*dynamodb.Client)
		creds, err := c.Options().Credentials.Retrieve(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		accessKey = creds.AccessKeyID
		own := dynamodb.New(c.Options(), func(o *dynamodb.Options) {
			o.Credentials = credentials.NewStaticCredentialsProvider(accessKey, awsSecret, "")
		})
		guard = &specWriteGuard{DynamoDBAPI: own, t: t}
		o.DynamoDB = guard
		o.Streams = AWSStreams{DB: own, Streams: o.Streams.(AWSStreams).Streams}
		o.Log = logger
		o.MaxRetryDelay = 5 * time.Second
	}, func(a *Applier) {
		applyRec = &countingReconciler[*ApplyDesire]{inner: a.apply.Reconciler, n: map[string]int{}}
		a.apply.Reconciler = applyRec
		deleteRec = &countingReconciler[*DeleteDesire]{inner: a.delete.Reconciler, n: map[string]int{}}
		a.delete.Reconciler = deleteRec
	})
	ctx := context.Background()
	cfg := testenv.Kube(t)
	applyTable := e.applyS.Name()
	specClient := e.db

	// A namespace that stays Terminating (no controller-manager), holding one ConfigMap.
	doomedNS := testenv.Namespace(t, cfg)
	nsGVR := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "in-doomed", "namespace": doomedNS}}}
	if _, err := e.dyn.Resource(cmGVR).Namespace(doomedNS).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.dyn.Resource(nsGVR).Delete(ctx, doomedNS, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// A Secret for a ReadDesire (redaction) and the log scan.
	secGVR := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	sec := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "hostile-secret", "namespace": e.ns}, "stringData": map[string]any{"password": secretValue}}}
	if _, err := e.dyn.Resource(secGVR).Namespace(e.ns).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	ns := e.ns
	big := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big","namespace":%q},"data":{"blob":%q}}`, ns, strings.Repeat("b", 390*1000))
	svc := func(ip string) string {
		if ip == "" { // allocated by the apiserver
			return fmt.Sprintf(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"svc","namespace":%q},"spec":{"ports":[{"port":80}]}}`, ns)
		}
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"svc","namespace":%q},"spec":{"clusterIP":%q,"ports":[{"port":80}]}}`, ns, ip)
	}
	job := func(image string) string {
		return fmt.Sprintf(`{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"job","namespace":%q},"spec":{"template":{"metadata":{"labels":{"a":"b"}},
		"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":%q}]}}}}`, ns, image)
	}
	type want struct {
		status    string
		reason    string
		msg       string
		degraded  bool
		transient bool // retried with back-off
	}
	cases := map[string]struct {
		item map[string]ddbtypes.AttributeValue
		want want
	}{}
	item := func(id, content string, mutate ...func(map[string]ddbtypes.AttributeValue)) map[string]ddbtypes.AttributeValue {
		d := applyDesire(id, "")
		d.UpdateTime = time.Now().UTC()
		d.Version = 1
		it, err := api.EncodeItem(d)
		if err != nil {
			t.Fatal(err)
		}
		if content != "" {
			it[api.AttrSpecKubeContent] = &ddbtypes.AttributeValueMemberS{Value: content}
		}
		for _, m := range mutate {
			m(it)
		}
		return it
	}
	add := func(id, content string, w want, mutate ...func(map[string]ddbtypes.AttributeValue)) {
		cases[id] = struct {
			item map[string]ddbtypes.AttributeValue
			want want
		}{item(id, content, mutate...), w}
	}
	pre := func(msg string) want { return want{status: "False", reason: ReasonPreCheckFailed, msg: msg} }
	ok := func(msg string) want { return want{status: "True", reason: ReasonNoErrors, msg: msg} }
	add("not-json", `{"apiVersion":`, pre("spec_kubeContent is not valid JSON"))
	add("json-array", `[1,2]`, pre("kubeContent is not a JSON object"))
	add("no-kind", fmt.Sprintf(`{"apiVersion":"v1","metadata":{"name":"x","namespace":%q}}`, ns), pre("missing kind"))
	add("no-name", fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":%q}}`, ns), pre("missing metadata.name"))
	add("unknown-kind", fmt.Sprintf(`{"apiVersion":"nope.example.com/v1","kind":"Gizmo","metadata":{"name":"g","namespace":%q}}`, ns),
		want{status: "False", reason: ReasonKindNotServed, msg: "not known to the cluster", transient: true})
	add("list-kind", `{"apiVersion":"v1","kind":"List","items":[]}`, pre("one ApplyDesire holds one object"))
	add("generate-name", fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"g-","namespace":%q}}`, ns), pre("generateName"))
	add("wrong-scope", `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"x","namespace":"default"}}`, pre("cluster-scoped"))
	add("spec-string", "", pre("the spec document cannot be decoded"), setAttr(api.AttrSpec, &ddbtypes.AttributeValueMemberS{Value: "x"}))
	add("version-string", "", pre("the spec document cannot be decoded"), setAttr(api.AttrVersion, &ddbtypes.AttributeValueMemberS{Value: "one"}))
	add("content-number", "", pre("spec_kubeContent is not a string"), setAttr(api.AttrSpecKubeContent, &ddbtypes.AttributeValueMemberN{Value: "1"}))
	add("other-mc", fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other-mc","namespace":%q}}`, ns), pre(`"mc02"`),
		setAttr(api.AttrSpec, &ddbtypes.AttributeValueMemberM{Value: map[string]ddbtypes.AttributeValue{"managementCluster": &ddbtypes.AttributeValueMemberS{Value: "mc02"}}}))
	add("terminating-ns", fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"late","namespace":%q}}`, doomedNS),
		want{status: "False", reason: ReasonKubeAPIError, msg: "being terminated", degraded: true, transient: true})
	add("server-fields", fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"srv","namespace":%q,"resourceVersion":"999999",
		"uid":"0d4c1a8e-0000-4000-8000-000000000001","generation":7,"creationTimestamp":"2020-01-01T00:00:00Z",
		"managedFields":[{"manager":"x","operation":"Apply","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{}}]},"data":{"k":"v"},"status":{"x":1}}`, ns),
		ok("applied ConfigMap"))
	add("big-390k", big, ok("applied ConfigMap"))
	add("svc", svc(""), ok("applied Service"))
	add("job", job("busybox:1"), ok("applied Job"))
	add("not-a-uuid-id", fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"anyid","namespace":%q}}`, ns), ok("applied ConfigMap"))
	add("apply-secret", fmt.Sprintf(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"applied-secret","namespace":%q},"stringData":{"token":%q}}`, ns, secretValue), ok("applied Secret"))
	for i := 0; i < 5; i++ {
		id := fmt.Sprintf("good-%d", i)
		add(id, e.configMap(id, map[string]string{"i": fmt.Sprint(i)}), ok("applied ConfigMap"))
	}
	if size := api.ItemSize(cases["big-390k"].item); size < 390*1000 || size > api.MaxItemSize {
		t.Fatalf("big item is %d bytes", size)
	}
	start := time.Now()
	for id, c := range cases {
		if _, err := specClient.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(applyTable), Item: c.item}); err != nil {
			t.Fatalf("put %s: %v", id, err)
		}
	}
	// Delete and Read desires next to them.
	if _, err := e.deleteS.Create(ctx, deleteDesire("del-terminating", TargetItem{Version: "v1", Resource: "configmaps", Namespace: doomedNS, Name: "in-doomed"})); err != nil {
		t.Fatal(err)
	}
	e.createRead("read-secret", TargetItem{Version: "v1", Resource: "secrets", Namespace: ns, Name: "hostile-secret"})

	for id, c := range cases {
		gen := int64(1)
		if id == "version-string" { // unreadable version: observed as 0
			gen = 0
		}
		st := waitCondition(e, e.specs.ApplyDesireStatus(), id, gen, c.want.status, c.want.reason, 30*time.Second)
		succ, degr := condition(st, ConditionSuccessful), condition(st, ConditionDegraded)
		if !strings.Contains(succ.Message, c.want.msg) || (degr.Status == ConditionTrue) != c.want.degraded {
			t.Errorf("%s: Successful %q, Degraded %s; want message containing %q, degraded %v", id, succ.Message, degr.Status, c.want.msg, c.want.degraded)
		}
	}
	t.Logf("%d apply desires (%d good) have their status %s after the writes", len(cases), 11, time.Since(start).Round(time.Millisecond))
	waitCondition(e, e.specs.DeleteDesireStatus(), "del-terminating", 1, ConditionTrue, ReasonNoErrors, 15*time.Second)
	rst := waitCondition(e, e.specs.ReadDesireStatus(), "read-secret", 1, ConditionTrue, ReasonNoErrors, 15*time.Second)
	if strings.Contains(string(rst.Status.KubeContent), base64.StdEncoding.EncodeToString([]byte(secretValue))) {
		t.Error("ReadDesire status reveals the Secret value")
	}
	if cm, err := e.getConfigMap("srv"); err != nil || cm.GetUID() == "0d4c1a8e-0000-4000-8000-000000000001" {
		t.Errorf("server-fields object: %v %v", cm, err)
	}

	// Immutable fields: change the Service's clusterIP and the Job's template.
	live, err := e.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "services"}).Namespace(ns).Get(ctx, "svc", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ip, _, _ := unstructured.NestedString(live.Object, "spec", "clusterIP")
	otherIP := "10.0.0.251"
	if ip == otherIP {
		otherIP = "10.0.0.252"
	}
	for id, content := range map[string]string{"svc": svc(otherIP), "job": job("busybox:2")} {
		it := item(id, content)
		it[api.AttrVersion] = &ddbtypes.AttributeValueMemberN{Value: "2"}
		if _, err := specClient.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(applyTable), Item: it}); err != nil {
			t.Fatal(err)
		}
		st := waitCondition(e, e.specs.ApplyDesireStatus(), id, 2, ConditionFalse, ReasonKubeAPIError, 15*time.Second)
		if msg := condition(st, ConditionSuccessful).Message; !(strings.Contains(msg, "immutable") || strings.Contains(msg, "may not change once set")) || condition(st, ConditionDegraded).Status != ConditionFalse {
			t.Errorf("%s: %q (Degraded %s), want an immutable-field error, not degraded", id, msg, condition(st, ConditionDegraded).Status)
		}
	}

	// Let back-off run a while, then count reconciles that reached a verdict: permanent
	// failures once per spec version, back-off retries (5 s cap here) a handful.
	time.Sleep(10 * time.Second)
	elapsed := time.Since(start)
	counts := map[string]int{}
	refused := []string{"not-json", "spec-string", "version-string", "content-number", "other-mc"}
	for _, id := range refused {
		if n := applyRec.count(id); n != 0 { // refused by the controller before the reconciler
			t.Errorf("%s reached the reconciler %d times", id, n)
		}
	}
	for id, c := range cases {
		if slices.Contains(refused, id) {
			continue
		}
		n := applyRec.count(id)
		counts[id] = n
		versions := 1
		if id == "svc" || id == "job" {
			versions = 2
		}
		limit := versions
		if c.want.transient {
			limit = int(elapsed/(5*time.Second)) + 8 // 0.2, 0.4, ... 3.2 s, then every 5 s
		}
		if n < 1 || n > limit {
			t.Errorf("%s: %d reconciles in %s, want 1..%d", id, n, elapsed.Round(time.Second), limit)
		}
	}
	t.Logf("reconciles per apply desire over %s: %v", elapsed.Round(time.Second), counts)
	guard.writes.Range(func(k, v any) bool { t.Logf("writes to %s: %d", k, v.(*atomic.Int64).Load()); return true })

	// Security check (c): no Secret value and no credential in any log line.
	out := logs.String()
	if !strings.Contains(out, "reconciling") {
		t.Fatalf("logs not captured: %q", out[:min(len(out), 500)])
	}
	for what, s := range map[string]string{
		"secret value":           secretValue,
		"secret value (base64)":  base64.StdEncoding.EncodeToString([]byte(secretValue)),
		"AWS access key id":      accessKey,
		"AWS secret access key":  awsSecret,
		"kube bearer token":      cfg.BearerToken,
		"secret value (partial)": secretValue[:12],
	} {
		if s != "" && strings.Contains(out, s) {
			t.Errorf("logs contain the %s", what)
		}
	}
	t.Logf("scanned %d bytes (%d lines) of logs at verbosity 10: no secret value or credential", len(out), strings.Count(out, "\n"))
}
