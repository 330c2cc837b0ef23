package main

// The original design's loop, run for real at a small scale by the poll-and-iterate baseline.

import (
	"context"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	kubeapplier "github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/internal/reqcount"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
)

// pollLoop is the original design's loop over the first m items of a specs table, and what
// it did: when each item was applied, each pass's costs, its first error.
type pollLoop struct {
	b       *bench
	rec     kubeapplier.Reconciler[*kubeapplier.ApplyDesire]
	ddb     *dynamodb.Client
	table   string
	status  *tables.Table[*kubeapplier.ApplyDesire]
	m       int
	period  time.Duration
	kc, dc  *reqcount.Counts
	mu      sync.Mutex
	applied map[string][]appliedAt
	passes  []passStat
	err     error
}

type appliedAt struct {
	version int64
	at      time.Time
}

type passStat struct {
	scan     time.Duration
	iter     time.Duration
	items    int
	complete bool
	kube     map[string]int64
	ddb      map[string]int64
}

func (l *pollLoop) failed() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

func (l *pollLoop) appliedAfter(id string, version int64) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, a := range l.applied[id] {
		if a.version >= version {
			return a.at
		}
	}
	return time.Time{}
}

// run is the original design's loop: every period, Scan (the first m items), then apply each
// in turn and write its status; a pass longer than the period starts the next one at once.
func (l *pollLoop) run(ctx context.Context) {
	for ctx.Err() == nil {
		passStart := time.Now()
		k0, d0 := l.kc.Snapshot(), l.dc.Snapshot()
		items, _, err := scanDesires(ctx, l.ddb, l.table, l.m)
		if err != nil {
			if ctx.Err() == nil {
				l.setErr(err)
			}
			return
		}
		ps := passStat{scan: time.Since(passStart), complete: true}
		iterStart := time.Now()
		for _, d := range items {
			if ctx.Err() != nil {
				ps.complete = false
				break
			}
			if err := l.applyOne(ctx, d); err != nil {
				if ctx.Err() == nil {
					l.setErr(err)
				}
				return
			}
			ps.items++
		}
		ps.iter = time.Since(iterStart)
		ps.kube, ps.ddb = reqcount.Diff(k0, l.kc.Snapshot()), reqcount.Diff(d0, l.dc.Snapshot())
		l.mu.Lock()
		l.passes = append(l.passes, ps)
		l.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(passStart.Add(l.period))):
		}
	}
}

func (l *pollLoop) setErr(err error) {
	l.mu.Lock()
	l.err = err
	l.mu.Unlock()
}

func (l *pollLoop) applyOne(ctx context.Context, d *kubeapplier.ApplyDesire) error {
	d = d.DeepCopy()
	v := l.rec.Reconcile(ctx, d)
	next := d.DeepCopy()
	next.Status.Conditions = v.Conditions(d.Version, time.Now())
	next.Spec.KubeContent = nil
	cur, err := l.status.Get(ctx, d.DocumentID)
	switch {
	case kubeapplier.IsNotFoundError(err):
		next.DynamoDBMetadata = kubeapplier.DynamoDBMetadata{DocumentID: d.DocumentID}
		_, err = l.status.Create(ctx, next)
	case err != nil:
	case sameApplyStatus(cur, next):
	default:
		next.DynamoDBMetadata = cur.DynamoDBMetadata
		_, err = l.status.Replace(ctx, next)
	}
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.applied[d.DocumentID] = append(l.applied[d.DocumentID], appliedAt{version: d.Version, at: time.Now()})
	l.mu.Unlock()
	return nil
}

func sameApplyStatus(a, b *kubeapplier.ApplyDesire) bool {
	if a.Status.AppliedResourceGeneration != b.Status.AppliedResourceGeneration || len(a.Status.Conditions) != len(b.Status.Conditions) {
		return false
	}
	for i, c := range a.Status.Conditions {
		o := b.Status.Conditions[i]
		if c.Type != o.Type || c.Status != o.Status || c.Reason != o.Reason || c.Message != o.Message || c.ObservedGeneration != o.ObservedGeneration {
			return false
		}
	}
	return true
}
