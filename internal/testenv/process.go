package testenv

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// WaitUntil polls cond every 100 ms until it holds, and fails t after timeout naming what.
func WaitUntil(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Output collects a process's stdout or stderr while a test reads it: an io.Writer and a
// fmt.Stringer safe for concurrent use.
type Output struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write implements io.Writer.
func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

// String returns everything written so far.
func (o *Output) String() string { o.mu.Lock(); defer o.mu.Unlock(); return o.b.String() }
