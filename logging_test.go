package kubeapplier

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/logging"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/awslog"
)

// logCapture is a logger at verbosity 4 that keeps every line as "name: message args".
type logCapture struct {
	mu    sync.Mutex
	lines []string
}

func (c *logCapture) logger() logr.Logger { return c.loggerAt(4) }

// loggerAt is logger at verbosity v.
func (c *logCapture) loggerAt(v int) logr.Logger {
	return funcr.New(func(prefix, args string) {
		c.mu.Lock()
		c.lines = append(c.lines, prefix+": "+args)
		c.mu.Unlock()
	}, funcr.Options{Verbosity: v})
}

// has reports whether a line contains every one of parts.
func (c *logCapture) has(parts ...string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.lines {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			return true
		}
	}
	return false
}

func (c *logCapture) dump() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.lines, "\n")
}

// TestLogRoute: a logger handed out before Run (names and values included) writes to the
// logger of Run's context when Options.Log was not set, and keeps Options.Log when it was.
func TestLogRoute(t *testing.T) {
	var early, fromCtx logCapture
	r := newLogRoute(logr.Logger{})
	l := r.logger().WithName("kubeapplier").WithValues("kind", "ApplyDesire")
	r.useContext(logr.NewContext(context.Background(), fromCtx.logger()))
	l.V(1).Info("reconciling", "n", 3)
	if !fromCtx.has(`kubeapplier: "level"=1 "msg"="reconciling" "kind"="ApplyDesire" "n"=3`) {
		t.Fatalf("context logger got:\n%s", fromCtx.dump())
	}
	fixed := newLogRoute(early.logger())
	fixed.useContext(logr.NewContext(context.Background(), fromCtx.logger()))
	fixed.logger().Info("kept")
	if !early.has(`"msg"="kept"`) || fromCtx.has("kept") {
		t.Fatal("a set Options.Log was replaced by the context's logger")
	}
	if newLogRoute(logr.Logger{}).logger().GetSink() == nil {
		t.Fatal("no default logger")
	}
	// client-go's lines stop at V(7): from V(8) on it logs request and response bodies.
	var verbose logCapture
	cg := newLogRoute(verbose.loggerAt(10)).clientGoLogger()
	cg.V(7).Info("request headers")
	cg.V(8).Info("response body")
	if !verbose.has(`"msg"="request headers"`) || verbose.has("response body") {
		t.Fatalf("client-go logger: want V(7) kept, V(8) dropped; got:\n%s", verbose.dump())
	}
}

// TestApplierLogsThroughItsLogger: with Options.Log, and without it with a logger in Run's
// context, the applier's own lines and client-go's informer lines (the reflectors of the
// desire informers) reach that logger.
func TestApplierLogsThroughItsLogger(t *testing.T) {
	for _, how := range []string{"Options.Log", "Run's context"} {
		t.Run(how, func(t *testing.T) {
			var c logCapture
			_, opts := newOffline(t)
			opts.Log = logr.Logger{}
			ctx := context.Background()
			if how == "Options.Log" {
				opts.Log = c.logger()
			} else {
				ctx = logr.NewContext(ctx, c.logger())
			}
			a, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- a.Run(ctx) }()
			waitFor(t, 10*time.Second, "leading", a.Leading)
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			for _, want := range [][]string{
				{`"msg"="reconciling"`, `"managementCluster"="mc01"`},
				{`"msg"="Caches populated"`, `t-mc-mc01-specs-applydesires`}, // client-go's reflector
			} {
				if !c.has(want...) {
					t.Errorf("no line with %q in:\n%s", want, c.dump())
				}
			}
		})
	}
}

// TestAWSLogger: the SDK's warnings become info lines of the applier's logger, its debug
// output V(4) lines.
func TestAWSLogger(t *testing.T) {
	var c logCapture
	l := awslog.New(c.logger())
	l.Logf(logging.Warn, "response has no %s header", "X-Amz-Crc32")
	l.Logf(logging.Debug, "request %d", 1)
	if !c.has(`aws-sdk: "level"=0 "msg"="response has no X-Amz-Crc32 header"`) || !c.has(`aws-sdk: "level"=4 "msg"="request 1"`) {
		t.Fatalf("got:\n%s", c.dump())
	}
}

// TestOnCallLinesAtDefaultLevel runs an offline applier with a logger at verbosity 0: each
// specs table's List is logged with its desires and stream, "reconciling" with the desires per
// kind, and an ApplyDesire that the apiserver fails enters Degraded and leaves it once the
// apiserver answers again.
func TestOnCallLinesAtDefaultLevel(t *testing.T) {
	var c logCapture
	o, opts := newOffline(t)
	opts.Log = c.loggerAt(0)
	o.put(t, applyDesire("d1", cmJSON("d1")))
	o.kube.setErr("apply", apierrors.NewServiceUnavailable("etcd is down"))
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	a.conditions.Every = 0 // no per-desire wait: the leave line follows at once
	stop := runApplier(t, a)
	waitFor(t, 10*time.Second, "entered Degraded", func() bool {
		return c.has(`"msg"="desire entered Degraded"`, `"kind"="ApplyDesire"`, `"desire"="d1"`, `"reason"="KubeAPIError"`, "etcd is down")
	})
	o.kube.setErr("apply", nil)
	waitFor(t, 20*time.Second, "left Degraded", func() bool {
		return c.has(`"msg"="desire left Degraded"`, `"desire"="d1"`, `"reason"="NoErrors"`)
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, want := range [][]string{
		{`"msg"="listed"`, `"table"="t-mc-mc01-specs-applydesires"`, `"desires"=1`, `"stream"=`, `"openShards"=1`},
		{`"msg"="listed"`, `"table"="t-mc-mc01-specs-readdesires"`, `"desires"=0`},
		{`"msg"="reconciling"`, `"applyDesires"=1`, `"deleteDesires"=0`, `"readDesires"=0`},
	} {
		if !c.has(want...) {
			t.Errorf("no line with %q in:\n%s", want, c.dump())
		}
	}
}

// TestDeleteFlowsLogNothingFalse runs each documented way of removing an object (the
// ApplyDesire spec deleted, and a DeleteDesire written: docs/backend.md, desirectl delete) on
// an offline applier logging at the default verbosity, with the streams delivering the two
// writes in either order: every "desire entered" line of the removed ApplyDesire is followed
// by its "desire left" line, and a removal seen first says nothing of it.
func TestDeleteFlowsLogNothingFalse(t *testing.T) {
	target := TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "cm-a1"}
	for _, tc := range []struct {
		name string
		// holdApply: the ApplyDesire's removal is read only once the DeleteDesire succeeded.
		deleteFirst, holdApply bool
		silent                 bool // no condition line of a1 at all
	}{
		{"ApplyDesire removed, then a DeleteDesire written, the removal read first", false, false, true},
		{"ApplyDesire removed, then a DeleteDesire written, the DeleteDesire read first", false, true, false},
		{"a DeleteDesire written, then the ApplyDesire removed", true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c logCapture
			o, opts := newOffline(t)
			opts.Log = c.loggerAt(0)
			o.put(t, applyDesire("a1", cmJSON("cm-a1")))
			a, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			stop := runApplier(t, a)
			waitFor(t, 10*time.Second, "a1 applied", func() bool {
				st := statusOf[*ApplyDesire](t, o, KindApplyDesire, "a1")
				return st != nil && condition(st, ConditionSuccessful).Status == ConditionTrue
			})
			applyTable := api.TableName(offPrefix, offCluster, api.SpecsTable, KindApplyDesire)
			out, err := o.db.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: &applyTable})
			if err != nil {
				t.Fatal(err)
			}
			arn := *out.Table.LatestStreamArn
			shard := o.db.OpenShards(arn)[0]
			if tc.holdApply {
				o.db.Hold(arn, shard, true)
			}
			if tc.deleteFirst {
				o.put(t, deleteDesire("d1", target))
				waitFor(t, 10*time.Second, "a1 refused", func() bool {
					st := statusOf[*ApplyDesire](t, o, KindApplyDesire, "a1")
					return st != nil && condition(st, ConditionSuccessful).Reason == ReasonTargetConflict
				})
				o.remove(KindApplyDesire, "a1")
			} else {
				o.remove(KindApplyDesire, "a1")
				if !tc.holdApply {
					waitFor(t, 10*time.Second, "a1's removal read", func() bool {
						_, err := a.Informers().ApplyDesires.Lister.Get("a1")
						return err != nil
					})
				}
				o.put(t, deleteDesire("d1", target))
			}
			waitFor(t, 10*time.Second, "d1 successful", func() bool {
				st := statusOf[*DeleteDesire](t, o, KindDeleteDesire, "d1")
				return st != nil && condition(st, ConditionSuccessful).Status == ConditionTrue
			})
			if tc.holdApply {
				time.Sleep(200 * time.Millisecond) // a1 judged again while its removal is held
				o.db.Hold(arn, shard, false)
			}
			waitFor(t, 10*time.Second, "a1's status removed", func() bool {
				return statusOf[*ApplyDesire](t, o, KindApplyDesire, "a1") == nil
			})
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			entered, left := c.count(`"msg"="desire entered`, `"desire"="a1"`), c.count(`"msg"="desire left`, `"desire"="a1"`)
			if entered != left || (tc.silent && entered > 0) {
				t.Fatalf("a1: %d entered and %d left lines (silent: %v):\n%s", entered, left, tc.silent, c.dump())
			}
			t.Logf("a1: %d entered, %d left", entered, left)
		})
	}
}

// count is how many lines contain every one of parts.
func (c *logCapture) count(parts ...string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, l := range c.lines {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			n++
		}
	}
	return n
}
