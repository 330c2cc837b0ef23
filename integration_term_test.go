package kubeapplier

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
	"github.com/kube-applier-aws/kubeapplier/internal/testenv"
)

// termStack is one test's tables, namespace and appliers on the local stack.
type termStack struct {
	t      *testing.T
	env    testenv.Dynamo
	cfg    *rest.Config
	ns     string
	specs  *tables.Table[*ApplyDesire]
	status *tables.Table[*ApplyDesire]
}

func newTermStack(t *testing.T) *termStack {
	env := testenv.DynamoDB(t)
	cfg := testenv.Kube(t)
	s := &termStack{t: t, env: env, cfg: cfg, ns: testenv.Namespace(t, cfg),
		specs:  tables.New[*ApplyDesire](env.Client, api.TableName(env.Prefix, "mc01", api.SpecsTable, KindApplyDesire)),
		status: tables.New[*ApplyDesire](env.Client, api.TableName(env.Prefix, "mc01", api.StatusTable, KindApplyDesire))}
	if _, err := api.EnsureTables(t.Context(), env.Client, env.Prefix, "mc01"); err != nil {
		t.Fatal(err)
	}
	return s
}

// start runs an applier with opts' election settings until stop (or the test's end).
func (s *termStack) start(opts Options) (a *Applier, stop func() error) {
	opts.ManagementCluster, opts.TablePrefix, opts.DynamoDB = "mc01", s.env.Prefix, s.env.Client
	opts.Streams, opts.RESTConfig = AWSStreams{DB: s.env.Client, Streams: s.env.Streams}, s.cfg
	opts.LeaseNamespace = s.ns
	opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = 3*time.Second, 2*time.Second, 500*time.Millisecond
	a, err := New(opts)
	if err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	stop = sync.OnceValue(func() error { cancel(); return <-done })
	s.t.Cleanup(func() { _ = stop() })
	return a, stop
}

// put creates or replaces desire id with a ConfigMap whose data says v; returns the version.
func (s *termStack) put(id, v string) int64 {
	d := applyDesire(id, fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":%q},"data":{"v":%q}}`, id, s.ns, v))
	cur, err := s.specs.Get(s.t.Context(), id)
	if IsNotFoundError(err) {
		created, err := s.specs.Create(s.t.Context(), d)
		if err != nil {
			s.t.Fatal(err)
		}
		return created.Version
	}
	if err != nil {
		s.t.Fatal(err)
	}
	d.DynamoDBMetadata = cur.DynamoDBMetadata
	replaced, err := s.specs.Replace(s.t.Context(), d)
	if err != nil {
		s.t.Fatal(err)
	}
	return replaced.Version
}

// answered reports whether id's status answers version successfully.
func (s *termStack) answered(id string, version int64) func() bool {
	return func() bool {
		st, err := s.status.Get(s.t.Context(), id)
		if err != nil {
			return false
		}
		c := condition(st, ConditionSuccessful)
		return c.Status == ConditionTrue && c.ObservedGeneration == version
	}
}

func (s *termStack) heartbeat() *api.Heartbeat {
	hb, err := api.ReadHeartbeat(s.t.Context(), s.env.Client, s.env.Prefix, "mc01")
	if err != nil {
		s.t.Fatal(err)
	}
	return hb
}

// TestIntegrationTermOnlyGrows: a Lease deleted between two terms (client-go re-creates it
// with 0 transitions) does not give the next leader a lower term: its status writes and
// heartbeat are not fenced off, and a changed desire is answered. (With the term taken from
// the Lease, the third leader got term 1 and every write was refused as older than term 2.)
func TestIntegrationTermOnlyGrows(t *testing.T) {
	s := newTermStack(t)
	kube := kubernetes.NewForConfigOrDie(s.cfg)
	var last int64
	for i, replica := range []string{"a", "b", "c"} {
		if i == 2 {
			err := kube.CoordinationV1().Leases(s.ns).Delete(t.Context(), DefaultLeaseName, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
		}
		a, stop := s.start(Options{LeaderElection: true, Identity: replica})
		waitFor(t, 20*time.Second, replica+" leads", a.Leading)
		v := s.put("d1", replica)
		waitFor(t, 20*time.Second, fmt.Sprintf("%s answers version %d", replica, v), s.answered("d1", v))
		hb := s.heartbeat()
		if hb.ApplierTerm <= last || hb.Leader != replica {
			t.Fatalf("replica %s: heartbeat term %d led by %q, want above %d led by %s", replica, hb.ApplierTerm, hb.Leader, last, replica)
		}
		last = hb.ApplierTerm
		if err := stop(); err != nil {
			t.Fatalf("%s: Run: %v", replica, err)
		}
	}
}

// TestIntegrationFollowLease: under a manager's election (LeaderElection off, FollowLease),
// the term is numbered in DynamoDB, the heartbeat names the Lease's holder, and once the
// Lease passes to another holder the applier writes no more status.
func TestIntegrationFollowLease(t *testing.T) {
	s := newTermStack(t)
	kube := kubernetes.NewForConfigOrDie(s.cfg)
	leases := kube.CoordinationV1().Leases(s.ns)
	const name = "manager-lease"
	lease, err := leases.Create(t.Context(), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("mgr-1"), LeaseDurationSeconds: ptr.To[int32](3),
			RenewTime: &metav1.MicroTime{Time: time.Now()}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The manager renews its Lease every 500 ms until told to hand it over.
	var mu sync.Mutex
	holder := "mgr-1"
	renewCtx, stopRenew := context.WithCancel(t.Context())
	defer stopRenew()
	go func() {
		for renewCtx.Err() == nil {
			time.Sleep(500 * time.Millisecond)
			mu.Lock()
			lease.Spec.HolderIdentity, lease.Spec.RenewTime = ptr.To(holder), &metav1.MicroTime{Time: time.Now()}
			updated, err := leases.Update(renewCtx, lease, metav1.UpdateOptions{})
			if err == nil {
				lease = updated
			}
			mu.Unlock()
		}
	}()
	a, _ := s.start(Options{FollowLease: true, LeaseName: name, Identity: "not-the-holder"})
	waitFor(t, 20*time.Second, "the applier leads", a.Leading)
	v := s.put("d1", "one")
	waitFor(t, 20*time.Second, "version 1 answered", s.answered("d1", v))
	hb := s.heartbeat()
	if hb.Leader != "mgr-1" || hb.ApplierTerm < 1 {
		t.Fatalf("heartbeat led by %q at term %d, want the Lease's holder mgr-1 and a term", hb.Leader, hb.ApplierTerm)
	}

	mu.Lock()
	holder = "mgr-2" // another replica of the manager wins
	mu.Unlock()
	time.Sleep(2 * time.Second) // a read of the Lease (every 500 ms) sees it
	v2 := s.put("d1", "two")
	time.Sleep(3 * time.Second)
	if s.answered("d1", v2)() {
		t.Fatal("the applier answered a spec after its manager's Lease passed to another holder")
	}
	if !s.answered("d1", v)() {
		t.Fatal("the status of version 1 was lost")
	}
}

// TestIntegrationLeaseDeletedWhileDesiresChange: two replicas with leader election while the
// Lease is deleted again and again (kubectl delete lease) and desires change: whichever
// replica leads after each deletion takes a term above every earlier one, so statuses keep
// following their specs within seconds, and the current leader's writes are never fenced
// (a replaced leader's may be, once: it ends its term).
func TestIntegrationLeaseDeletedWhileDesiresChange(t *testing.T) {
	s := newTermStack(t)
	kube := kubernetes.NewForConfigOrDie(s.cfg)
	type replica struct {
		a    *Applier
		logs *logCapture
	}
	var replicas []replica
	for _, id := range []string{"a", "b"} {
		logs := &logCapture{}
		a, _ := s.start(Options{LeaderElection: true, Identity: id, Log: logs.logger()})
		replicas = append(replicas, replica{a, logs})
	}
	leader := func() *Applier {
		for _, r := range replicas {
			if r.a.Leading() {
				return r.a
			}
		}
		return nil
	}
	waitFor(t, 20*time.Second, "a leader", func() bool { return leader() != nil })
	const n = 20
	latest := map[string]int64{}
	var terms []int64
	for round := range 6 {
		for i := range n {
			id := fmt.Sprintf("d%02d", i)
			latest[id] = s.put(id, fmt.Sprintf("r%d", round))
		}
		err := kube.CoordinationV1().Leases(s.ns).Delete(t.Context(), DefaultLeaseName, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		if hb, err := api.ReadHeartbeat(t.Context(), s.env.Client, s.env.Prefix, "mc01"); err == nil {
			terms = append(terms, hb.ApplierTerm)
		}
	}
	start := time.Now()
	waitFor(t, 30*time.Second, "every status answers its spec's latest version", func() bool {
		for id, v := range latest {
			if !s.answered(id, v)() {
				return false
			}
		}
		return true
	})
	t.Logf("statuses followed their specs %v after the last change; heartbeat terms seen %v", time.Since(start).Round(time.Millisecond), terms)
	for i := 1; i < len(terms); i++ {
		if terms[i] < terms[i-1] {
			t.Fatalf("the heartbeat's term went back: %v", terms)
		}
	}
	// The replica leading now has not been fenced in its current term.
	l := leader()
	hb := s.heartbeat()
	for _, r := range replicas {
		if r.a == l && r.logs.has("fenced", fmt.Sprintf("term=%d", hb.ApplierTerm)) {
			t.Fatalf("the leader's term %d was fenced:\n%s", hb.ApplierTerm, r.logs.dump())
		}
	}
}
