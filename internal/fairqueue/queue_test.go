package fairqueue

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
)

// laneByPrefix: items are "lane/name".
func laneByPrefix(item string) string {
	lane, _, _ := strings.Cut(item, "/")
	return lane
}

func newTestFairQueue(t *testing.T, cfg Config) *Queue {
	t.Helper()
	if cfg.LaneOf == nil {
		cfg.LaneOf = laneByPrefix
	}
	q := New(workqueue.NewTypedItemExponentialFailureRateLimiter[string](200*time.Millisecond, 5*time.Second), cfg)
	t.Cleanup(q.ShutDown)
	return q
}

// getN takes n items (Get then Done at once) and returns them in order.
func getN(t *testing.T, q workqueue.TypedInterface[string], n int) []string {
	t.Helper()
	var out []string
	for range n {
		item, shutdown := q.Get()
		if shutdown {
			t.Fatalf("Get after %v: shut down", out)
		}
		q.Done(item)
		out = append(out, item)
	}
	return out
}

// waitLen waits until q.Len() == n (the delaying layers add from their own goroutine).
func waitLen(t *testing.T, q workqueue.TypedInterface[string], n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for q.Len() != n {
		if time.Now().After(deadline) {
			t.Fatalf("Len = %d, want %d", q.Len(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestFairQueueDeduplicates(t *testing.T) {
	for _, tc := range []struct {
		name string
		add  func(q *Queue, item string)
	}{
		{"change", func(q *Queue, item string) { q.Add(item) }},
		{"periodic", func(q *Queue, item string) { q.AddPeriodic(item) }},
		{"periodic then change", func(q *Queue, item string) { q.AddPeriodic(item); q.Add(item) }},
		{"change then periodic", func(q *Queue, item string) { q.Add(item); q.AddPeriodic(item) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newTestFairQueue(t, Config{})
			for range 5 {
				tc.add(q, "a/1")
				tc.add(q, "b/1")
			}
			if q.Len() != 2 {
				t.Fatalf("Len = %d, want 2", q.Len())
			}
			got := getN(t, q, 2)
			if got[0] == got[1] {
				t.Fatalf("got %v: an item handed out twice", got)
			}
			if q.Len() != 0 {
				t.Fatalf("Len = %d after both, want 0 (a stale entry handed out?)", q.Len())
			}
		})
	}
}

// TestFairQueueRequeuesAfterDone: an item added while it is processed is not handed out to
// another worker, and is queued again (once) when Done is called — at the priority asked.
func TestFairQueueRequeuesAfterDone(t *testing.T) {
	q := newTestFairQueue(t, Config{})
	q.Add("a/1")
	item, _ := q.Get()
	q.AddPeriodic(item)
	q.Add(item)
	q.Add(item)
	if q.Len() != 0 {
		t.Fatalf("Len while processing = %d, want 0", q.Len())
	}
	q.AddPeriodic("a/2")
	q.Done(item)
	if q.Len() != 2 {
		t.Fatalf("Len after Done = %d, want 2", q.Len())
	}
	// Re-added as a change: before a/2, which is periodic.
	if got := getN(t, q, 2); got[0] != "a/1" || got[1] != "a/2" {
		t.Fatalf("order = %v, want [a/1 a/2]", got)
	}
	// Done without a new Add: gone.
	q.Add("a/3")
	item, _ = q.Get()
	q.Done(item)
	if q.Len() != 0 {
		t.Fatalf("Len = %d, want 0", q.Len())
	}
}

// TestFairQueueRoundRobin: an item of a lane waits behind at most one item of each other
// lane with work, not behind their bursts. client-go's FIFO queue is checked too, to show
// that the check can fail.
func TestFairQueueRoundRobin(t *testing.T) {
	for _, tc := range []struct {
		name    string
		bursts  map[string]int // lane -> items queued first
		then    string         // one item added after the bursts
		maxWait int            // Gets before it
	}{
		{"one burst", map[string]int{"a": 5000}, "b/x", 1},
		{"two bursts", map[string]int{"a": 2000, "c": 1000}, "b/x", 2},
		{"ten bursts", map[string]int{"a": 300, "c": 200, "d": 100, "e": 50, "f": 40, "g": 30, "h": 20, "i": 10, "j": 5, "k": 1}, "b/x", 10},
		{"same lane waits its turn", map[string]int{"a": 3, "b": 3}, "b/x", 6},
		{"unknown lane", map[string]int{"a": 1000}, "/x", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			queues := map[string]workqueue.TypedInterface[string]{
				"fair": newTestFairQueue(t, Config{}),
				"fifo": workqueue.NewTyped[string](),
			}
			for kind, q := range queues {
				for lane, n := range tc.bursts {
					for i := range n {
						q.Add(fmt.Sprintf("%s/%d", lane, i))
					}
				}
				q.Add(tc.then)
				waited := 0
				for {
					item, _ := q.Get()
					q.Done(item)
					if item == tc.then {
						break
					}
					waited++
				}
				switch {
				case kind == "fair" && waited > tc.maxWait:
					t.Errorf("fair queue: %s waited behind %d items, want <= %d", tc.then, waited, tc.maxWait)
				case kind == "fifo" && tc.name != "same lane waits its turn" && waited <= tc.maxWait:
					t.Errorf("FIFO queue: %s waited behind %d items only: the check cannot fail", tc.then, waited)
				}
				q.ShutDown()
			}
		})
	}
}

// TestFairQueueRoundRobinRandom checks the fairness bound under random adds, gets and
// promotions: an item added to a lane with nothing queued at its priority is handed out
// after at most one item of each other lane that had work at that priority when it was
// added (while no periodic item is due).
func TestFairQueueRoundRobinRandom(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	defer func() {
		if t.Failed() {
			t.Logf("seed %d", seed)
		}
	}()
	for round := range 50 {
		q := newTestFairQueue(t, Config{})
		type watch struct {
			item  string
			bound int
			gets  int
		}
		queued := map[string]map[string]bool{} // lane -> queued change items
		var watched []*watch
		next := 0
		for step := 0; step < 2000; step++ {
			if rng.IntN(3) > 0 { // add a change
				// Skewed: lane a gets most adds.
				lane := string(rune('a' + min(rng.IntN(12), rng.IntN(12))))
				item := fmt.Sprintf("%s/%d", lane, next)
				if rng.IntN(4) == 0 && len(queued[lane]) > 0 {
					for it := range queued[lane] { // add again: de-duplicated
						item = it
						break
					}
				} else {
					next++
				}
				if len(queued[lane]) == 0 {
					others := 0
					for s, items := range queued {
						if s != lane && len(items) > 0 {
							others++
						}
					}
					watched = append(watched, &watch{item: item, bound: others})
				}
				if queued[lane] == nil {
					queued[lane] = map[string]bool{}
				}
				queued[lane][item] = true
				q.Add(item)
				continue
			}
			if q.Len() == 0 {
				continue
			}
			item, _ := q.Get()
			q.Done(item)
			delete(queued[laneByPrefix(item)], item)
			for i := 0; i < len(watched); i++ {
				w := watched[i]
				if w.item == item {
					if w.gets > w.bound {
						t.Fatalf("round %d: %s handed out after %d other items, bound %d", round, item, w.gets, w.bound)
					}
					watched = append(watched[:i], watched[i+1:]...)
					i--
					continue
				}
				w.gets++
			}
		}
		q.ShutDown()
	}
}

// TestFairQueuePriority: periodic work yields to changes, an item re-added as a change moves
// up, and periodic work is not starved by changes.
func TestFairQueuePriority(t *testing.T) {
	t.Run("changes first", func(t *testing.T) {
		q := newTestFairQueue(t, Config{})
		for i := range 100 {
			q.AddPeriodic(fmt.Sprintf("a/%d", i))
		}
		for i := range 5 {
			q.Add(fmt.Sprintf("b/%d", i))
		}
		for i, item := range getN(t, q, 5) {
			if want := fmt.Sprintf("b/%d", i); item != want {
				t.Fatalf("Get %d = %s, want %s", i, item, want)
			}
		}
	})
	t.Run("promoted", func(t *testing.T) {
		q := newTestFairQueue(t, Config{})
		for i := range 100 {
			q.AddPeriodic(fmt.Sprintf("a/%d", i))
		}
		q.Add("a/50")
		if q.Len() != 100 {
			t.Fatalf("Len = %d, want 100", q.Len())
		}
		got := getN(t, q, 100)
		if got[0] != "a/50" {
			t.Fatalf("first = %s, want a/50", got[0])
		}
		seen := map[string]bool{}
		for _, item := range got {
			if seen[item] {
				t.Fatalf("%s handed out twice", item)
			}
			seen[item] = true
		}
		if q.Len() != 0 {
			t.Fatalf("Len = %d, want 0", q.Len())
		}
	})
	t.Run("not demoted", func(t *testing.T) {
		q := newTestFairQueue(t, Config{})
		q.AddPeriodic("a/1")
		q.Add("b/1")
		q.AddPeriodic("b/1")
		if got := getN(t, q, 2); got[0] != "b/1" {
			t.Fatalf("order = %v, want b/1 first", got)
		}
	})
	t.Run("periodic not starved", func(t *testing.T) {
		q := newTestFairQueue(t, Config{})
		q.AddPeriodic("p/1")
		for i := range 1000 {
			q.Add(fmt.Sprintf("c/%d", i))
		}
		got := getN(t, q, periodicEvery)
		if got[periodicEvery-1] != "p/1" {
			t.Fatalf("Gets = %v, want p/1 as Get %d", got, periodicEvery)
		}
	})
}

// TestFairQueueConcurrent: many adders and workers, random lanes and priorities. No item is
// ever processed by two workers at once, and every add is followed by a processing of its
// item that started after it (nothing lost).
func TestFairQueueConcurrent(t *testing.T) {
	seed := time.Now().UnixNano()
	defer func() {
		if t.Failed() {
			t.Logf("seed %d", seed)
		}
	}()
	q := newTestFairQueue(t, Config{})
	const items, adders, workers, adds = 50, 8, 16, 3000
	var (
		busy     [items]atomic.Int32
		addedAt  [items]atomic.Int64 // logical time of the last add
		startAt  [items]atomic.Int64 // logical time of the last processing start
		clockNow atomic.Int64
		overlap  atomic.Int32
	)
	name := func(i int) string { return fmt.Sprintf("%c/%d", 'a'+i%5, i) }
	index := func(item string) int {
		var i int
		_, _ = fmt.Sscanf(item[2:], "%d", &i)
		return i
	}
	var workWG sync.WaitGroup
	for range workers {
		workWG.Go(func() {
			for {
				item, shutdown := q.Get()
				if shutdown {
					return
				}
				i := index(item)
				if busy[i].Add(1) != 1 {
					overlap.Add(1)
				}
				startAt[i].Store(clockNow.Add(1))
				time.Sleep(time.Duration(rand.IntN(50)) * time.Microsecond)
				busy[i].Add(-1)
				q.Done(item)
			}
		})
	}
	var addWG sync.WaitGroup
	for a := range adders {
		addWG.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(a)))
			for range adds {
				i := rng.IntN(items)
				addedAt[i].Store(clockNow.Add(1))
				if rng.IntN(2) == 0 {
					q.Add(name(i))
				} else {
					q.AddPeriodic(name(i))
				}
			}
		})
	}
	addWG.Wait()
	q.ShutDownWithDrain()
	workWG.Wait()
	if n := overlap.Load(); n > 0 {
		t.Fatalf("%d times an item was processed by two workers at once", n)
	}
	for i := range items {
		if a, s := addedAt[i].Load(), startAt[i].Load(); a > s {
			t.Errorf("item %d: added at %d, last processing started at %d: an add was lost", i, a, s)
		}
	}
}

func TestFairQueueShutDown(t *testing.T) {
	t.Run("queued items are handed out, then shutdown", func(t *testing.T) {
		q := newTestFairQueue(t, Config{})
		q.Add("a/1")
		q.AddPeriodic("a/2")
		q.ShutDown()
		q.Add("a/3")
		q.AddPeriodic("a/4")
		q.AddAfter("a/5", 0)
		if !q.ShuttingDown() || q.Len() != 2 {
			t.Fatalf("ShuttingDown %v, Len %d; want true, 2", q.ShuttingDown(), q.Len())
		}
		getN(t, q, 2)
		if _, shutdown := q.Get(); !shutdown {
			t.Fatal("Get on an empty shut-down queue did not report shutdown")
		}
	})
	t.Run("blocked Get returns", func(t *testing.T) {
		q := newTestFairQueue(t, Config{})
		done := make(chan bool)
		go func() { _, shutdown := q.Get(); done <- shutdown }()
		time.Sleep(10 * time.Millisecond)
		q.ShutDown()
		select {
		case shutdown := <-done:
			if !shutdown {
				t.Fatal("Get returned an item")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Get still blocked after ShutDown")
		}
	})
	t.Run("drain waits for Done", func(t *testing.T) {
		q := newTestFairQueue(t, Config{})
		q.Add("a/1")
		item, _ := q.Get()
		drained := make(chan struct{})
		go func() { q.ShutDownWithDrain(); close(drained) }()
		select {
		case <-drained:
			t.Fatal("ShutDownWithDrain returned while an item was processing")
		case <-time.After(50 * time.Millisecond):
		}
		q.Done(item)
		select {
		case <-drained:
		case <-time.After(5 * time.Second):
			t.Fatal("ShutDownWithDrain still waiting after Done")
		}
	})
	t.Run("ShutDown ends a drain", func(t *testing.T) {
		q := newTestFairQueue(t, Config{})
		q.Add("a/1")
		q.Get()
		drained := make(chan struct{})
		go func() { q.ShutDownWithDrain(); close(drained) }()
		time.Sleep(20 * time.Millisecond)
		q.base.ShutDown()
		select {
		case <-drained:
		case <-time.After(5 * time.Second):
			t.Fatal("ShutDownWithDrain still waiting after ShutDown")
		}
	})
}

// TestFairQueueRetries: client-go's rate-limiting and delaying layers over the fair base:
// exponential back-off per item, Forget, NumRequeues, AddAfter and AddPeriodicAfter.
func TestFairQueueRetries(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	q := newTestFairQueue(t, Config{Clock: clk})
	tickers := clk.Waiters() // the delaying layers' heartbeats
	q.Add("a/1")
	item, _ := q.Get()
	q.AddRateLimited(item) // 200 ms
	q.Done(item)
	if q.NumRequeues(item) != 1 || q.Len() != 0 {
		t.Fatalf("NumRequeues %d, Len %d; want 1, 0", q.NumRequeues(item), q.Len())
	}
	waitTimers(t, clk, tickers+1)
	clk.Step(199 * time.Millisecond)
	time.Sleep(10 * time.Millisecond)
	if q.Len() != 0 {
		t.Fatalf("queued after 199 ms of a 200 ms back-off")
	}
	clk.Step(time.Millisecond)
	waitLen(t, q, 1)
	item, _ = q.Get()
	q.AddRateLimited(item) // 400 ms
	q.Done(item)
	if q.NumRequeues(item) != 2 {
		t.Fatalf("NumRequeues = %d, want 2", q.NumRequeues(item))
	}
	waitTimers(t, clk, tickers+1)
	clk.Step(399 * time.Millisecond)
	time.Sleep(10 * time.Millisecond)
	if q.Len() != 0 {
		t.Fatalf("queued after 399 ms of a 400 ms back-off")
	}
	clk.Step(time.Millisecond)
	waitLen(t, q, 1)
	item, _ = q.Get()
	q.Forget(item)
	q.Done(item)
	if q.NumRequeues(item) != 0 {
		t.Fatalf("NumRequeues after Forget = %d", q.NumRequeues(item))
	}

	// A periodic item due later yields to a change due at the same time.
	q.AddPeriodicAfter("a/periodic", time.Second)
	q.AddAfter("b/change", time.Second)
	waitTimers(t, clk, tickers+2) // one timer in each delaying layer
	clk.Step(time.Second)
	waitLen(t, q, 2)
	q.AddPeriodicAfter("c/now", 0)
	if got := getN(t, q, 3); got[0] != "b/change" {
		t.Fatalf("order = %v, want b/change first", got)
	}
}

// waitTimers waits until the fake clock has n waiters: the delaying layers' loops have taken
// their entries and set their timers.
func waitTimers(t *testing.T, clk *clocktesting.FakeClock, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for clk.Waiters() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d timers and tickers, want %d", clk.Waiters(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// fakeWQMetrics records workqueue metrics by name.
type fakeWQMetrics struct {
	mu sync.Mutex
	v  map[string]float64
	n  map[string]int // observations
}

type fakeMetric struct {
	p    *fakeWQMetrics
	name string
}

func (m fakeMetric) Inc()            { m.p.mu.Lock(); m.p.v[m.name]++; m.p.mu.Unlock() }
func (m fakeMetric) Dec()            { m.p.mu.Lock(); m.p.v[m.name]--; m.p.mu.Unlock() }
func (m fakeMetric) Set(v float64)   { m.p.mu.Lock(); m.p.v[m.name] = v; m.p.mu.Unlock() }
func (m fakeMetric) Observe(float64) { m.p.mu.Lock(); m.p.n[m.name]++; m.p.mu.Unlock() }

func (p *fakeWQMetrics) get(name string) (float64, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.v[name], p.n[name]
}

func (p *fakeWQMetrics) NewDepthMetric(string) workqueue.GaugeMetric { return fakeMetric{p, "depth"} }
func (p *fakeWQMetrics) NewAddsMetric(string) workqueue.CounterMetric {
	return fakeMetric{p, "adds"}
}
func (p *fakeWQMetrics) NewLatencyMetric(string) workqueue.HistogramMetric {
	return fakeMetric{p, "latency"}
}
func (p *fakeWQMetrics) NewWorkDurationMetric(string) workqueue.HistogramMetric {
	return fakeMetric{p, "work"}
}
func (p *fakeWQMetrics) NewUnfinishedWorkSecondsMetric(string) workqueue.SettableGaugeMetric {
	return fakeMetric{p, "unfinished"}
}
func (p *fakeWQMetrics) NewLongestRunningProcessorSecondsMetric(string) workqueue.SettableGaugeMetric {
	return fakeMetric{p, "longest"}
}
func (p *fakeWQMetrics) NewRetriesMetric(string) workqueue.CounterMetric {
	return fakeMetric{p, "retries"}
}

// TestFairQueueMetrics: the same workqueue metrics as client-go's queue, for the same calls.
func TestFairQueueMetrics(t *testing.T) {
	run := func(q workqueue.TypedRateLimitingInterface[string], addPeriodic func(string)) map[string]float64 {
		q.Add("a/1")
		q.Add("a/1") // de-duplicated: not an add
		addPeriodic("b/1")
		q.Add("b/1")
		item, _ := q.Get()
		q.Add(item) // while processing: an add, queued at Done
		q.Done(item)
		q.AddRateLimited("c/1")
		out := map[string]float64{"len": float64(q.Len())}
		return out
	}
	record := func(p *fakeWQMetrics, out map[string]float64) map[string]float64 {
		for _, name := range []string{"depth", "adds", "retries"} {
			out[name], _ = p.get(name)
		}
		_, latency := p.get("latency")
		_, work := p.get("work")
		out["latency"], out["work"] = float64(latency), float64(work)
		return out
	}
	fairP := &fakeWQMetrics{v: map[string]float64{}, n: map[string]int{}}
	fair := newTestFairQueue(t, Config{Name: "ApplyDesire", MetricsProvider: fairP})
	got := record(fairP, run(fair, fair.AddPeriodic))
	fifoP := &fakeWQMetrics{v: map[string]float64{}, n: map[string]int{}}
	fifo := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.NewTypedItemExponentialFailureRateLimiter[string](200*time.Millisecond, 5*time.Second),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "ApplyDesire", MetricsProvider: fifoP})
	defer fifo.ShutDown()
	want := record(fifoP, run(fifo, fifo.Add))
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("fair queue metrics %v, client-go's %v", got, want)
	}
	if got["depth"] != 2 || got["adds"] != 3 || got["latency"] != 1 || got["work"] != 1 {
		t.Fatalf("metrics %v: want depth 2, adds 3, one latency and one work observation", got)
	}
	// Unfinished work is reported while an item is processed.
	clk := clocktesting.NewFakeClock(time.Now())
	p := &fakeWQMetrics{v: map[string]float64{}, n: map[string]int{}}
	q := newTestFairQueue(t, Config{Name: "x", MetricsProvider: p, Clock: clk})
	q.Add("a/1")
	q.Get()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if v, _ := p.get("longest"); v >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("longest running processor never reported 3 s")
		}
		clk.Step(unfinishedWorkUpdatePeriod) // the loop's ticker may start after a Step
		time.Sleep(time.Millisecond)
	}
}
