package rivals

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestObjectLocks: one object's sections run one at a time, other objects' meanwhile; a wait
// ends with its context, holding nothing; no entry outlives its holders and waiters.
func TestObjectLocks(t *testing.T) {
	a := Object{Namespace: "default", Name: "a"}
	b := Object{Group: "apps", Namespace: "default", Name: "a"}
	cases := []struct {
		name string
		// second is the object locked while a is held; cancel: its context ends while it waits.
		second     Object
		cancel     bool
		wantWaits  bool // the second waits until a is released
		wantErrCtx bool
	}{
		{name: "same object waits", second: a, wantWaits: true},
		{name: "another object does not", second: b},
		{name: "a wait ends with its context", second: a, cancel: true, wantErrCtx: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var l ObjectLocks
			unlockA, err := l.Lock(context.Background(), a)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			type got struct {
				unlock func()
				err    error
			}
			done := make(chan got, 1)
			go func() { u, err := l.Lock(ctx, tc.second); done <- got{u, err} }()
			if tc.cancel {
				time.Sleep(20 * time.Millisecond)
				cancel()
			}
			var r got
			select {
			case r = <-done:
				if tc.wantWaits {
					t.Fatal("the second section ran while the first held the object")
				}
			case <-time.After(200 * time.Millisecond):
				if !tc.wantWaits {
					t.Fatal("the second section waited")
				}
				unlockA()
				r = <-done
			}
			if gotCtx := errors.Is(r.err, context.Canceled); gotCtx != tc.wantErrCtx || (r.err != nil && !gotCtx) {
				t.Fatalf("err = %v, want a context error: %v", r.err, tc.wantErrCtx)
			}
			if r.unlock != nil {
				r.unlock()
				r.unlock() // idempotent
			}
			unlockA()
			if l.Len() != 0 {
				t.Fatalf("%d entries left", l.Len())
			}
			// Released, it is free again.
			u, err := l.Lock(context.Background(), a)
			if err != nil {
				t.Fatal(err)
			}
			u()
		})
	}
}
