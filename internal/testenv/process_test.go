package testenv

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestOutputConcurrentWrites: writers and a reader at once (run with -race) lose no byte.
func TestOutputConcurrentWrites(t *testing.T) {
	var o Output
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 100 {
				fmt.Fprint(&o, i)
				_ = o.String()
			}
		})
	}
	wg.Wait()
	if n := len(o.String()); n != 800 {
		t.Fatalf("%d bytes, want 800", n)
	}
}

// TestWaitUntil: it returns once the condition holds, and fails the test when it never does.
func TestWaitUntil(t *testing.T) {
	start := time.Now()
	WaitUntil(t, time.Second, "soon", func() bool { return time.Since(start) > 150*time.Millisecond })
	ft := &fakeT{TB: t}
	done := make(chan struct{})
	go func() { defer close(done); WaitUntil(ft, 200*time.Millisecond, "never", func() bool { return false }) }()
	<-done
	if ft.failed != "timed out after 200ms waiting for never" {
		t.Fatalf("failure %q", ft.failed)
	}
}

type fakeT struct {
	testing.TB
	failed string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	runtime.Goexit() // as t.Fatalf ends its goroutine
}
