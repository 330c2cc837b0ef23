package kubeapplier

import (
	"context"
	"sync/atomic"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// logRoute is where the applier's logs go: Options.Log when set, else the logger of Run's
// context, else klog's global logger (klog.Background(): stderr unless the process set one).
// Everything the applier builds logs through logger(), which follows the route's target, so
// components built by New log where Run decides.
type logRoute struct {
	fixed  bool // Options.Log was set: Run's context does not change the target
	target atomic.Pointer[logr.Logger]
}

func newLogRoute(l logr.Logger) *logRoute {
	r := &logRoute{fixed: l.GetSink() != nil}
	if !r.fixed {
		l = klog.Background()
	}
	r.target.Store(&l)
	return r
}

// logger returns a logger that writes to the route's current target.
func (r *logRoute) logger() logr.Logger { return logr.New(&routedSink{route: r}) }

// clientGoMaxV is the highest verbosity of client-go's lines that reach the applier's logger:
// from V(8) on, client-go logs request and response bodies, Secret data included.
const clientGoMaxV = 7

// clientGoLogger returns the logger handed to client-go through contexts (informers,
// reflectors, leader election, REST clients): the route's, without lines above clientGoMaxV.
func (r *logRoute) clientGoLogger() logr.Logger {
	return logr.New(&routedSink{route: r, maxV: clientGoMaxV})
}

// useContext makes ctx's logger the target, unless Options.Log was set or ctx has none.
func (r *logRoute) useContext(ctx context.Context) {
	if r.fixed {
		return
	}
	if l, err := logr.FromContext(ctx); err == nil {
		r.target.Store(&l)
	}
}

// routedSink is a logr.LogSink that resolves its route's target at each call, then applies the
// names, values and call depth it was given.
type routedSink struct {
	route  *logRoute
	names  []string
	values []any
	depth  int
	maxV   int // lines above this verbosity are dropped; 0: none
}

var (
	_ logr.CallDepthLogSink       = (*routedSink)(nil)
	_ logr.CallStackHelperLogSink = (*routedSink)(nil)
)

// resolve returns the target with s's names and values; the call depth skips this sink and
// the logr.Logger method that called it, so a target that logs call sites names the caller.
func (s *routedSink) resolve() logr.Logger {
	l := *s.route.target.Load()
	for _, n := range s.names {
		l = l.WithName(n)
	}
	if len(s.values) > 0 {
		l = l.WithValues(s.values...)
	}
	return l.WithCallDepth(s.depth + 2)
}

func (s *routedSink) Init(logr.RuntimeInfo) {}
func (s *routedSink) Enabled(level int) bool {
	return (s.maxV == 0 || level <= s.maxV) && s.resolve().V(level).Enabled()
}
func (s *routedSink) Info(level int, msg string, kv ...any) {
	l := s.resolve()
	helperOf(l)() // a target such as testr skips this frame
	l.V(level).Info(msg, kv...)
}

func (s *routedSink) Error(err error, msg string, kv ...any) {
	l := s.resolve()
	helperOf(l)()
	l.Error(err, msg, kv...)
}

// GetCallStackHelper returns the target's helper marker, so a target that finds the caller by
// helper frames (testr) skips the frames of logr.Logger and of this sink.
func (s *routedSink) GetCallStackHelper() func() { return helperOf(*s.route.target.Load()) }

func helperOf(l logr.Logger) func() {
	if h, ok := l.GetSink().(logr.CallStackHelperLogSink); ok {
		return h.GetCallStackHelper()
	}
	return func() {}
}

func (s *routedSink) WithValues(kv ...any) logr.LogSink {
	c := *s
	c.values = append(append([]any(nil), s.values...), kv...)
	return &c
}

func (s *routedSink) WithName(name string) logr.LogSink {
	c := *s
	c.names = append(append([]string(nil), s.names...), name)
	return &c
}

func (s *routedSink) WithCallDepth(depth int) logr.LogSink {
	c := *s
	c.depth += depth
	return &c
}
