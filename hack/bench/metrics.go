package main

// The applier's and the apiserver's metrics, and waiting for the applier to be idle.

import (
	"context"
	"fmt"
	"time"
)

// scrape reads the applier's /metrics; it fails at once when the process is gone.
func (b *bench) scrape(ctx context.Context) (promSnap, error) {
	select {
	case <-b.app.exited:
		return nil, fmt.Errorf("%s exited: %v (see %s)", b.app.name, b.app.exitErr, b.app.logPath)
	default:
	}
	body, code, err := httpGet(ctx, "http://"+b.metricsAddr+"/metrics", 10*time.Second)
	if err != nil {
		return nil, err
	}
	if code != 200 {
		return nil, fmt.Errorf("applier /metrics: HTTP %d", code)
	}
	return parseProm(string(body)), nil
}

// mustScrape scrapes, retrying 10 times 200 ms apart; nil (logged) when it never succeeds.
func (b *bench) mustScrape(ctx context.Context) promSnap {
	for attempt := 0; ; attempt++ {
		m, err := b.scrape(ctx)
		if err == nil || attempt == 10 || ctx.Err() != nil || b.app.gone() {
			if err != nil {
				b.logf("scrape: %v", err)
			}
			return m
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// apiserverMetrics reads the kube-apiserver's /metrics with the harness's admin credentials.
func (b *bench) apiserverMetrics(ctx context.Context) (promSnap, error) {
	raw, err := b.disc.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	return parseProm(string(raw)), nil
}

// configMapWatches counts the WATCH requests on configmaps the apiserver holds open.
func (b *bench) configMapWatches(ctx context.Context) (longrunning, registered float64, err error) {
	m, err := b.apiserverMetrics(ctx)
	if err != nil {
		return 0, 0, err
	}
	longrunning = m.sum("apiserver_longrunning_requests", map[string]string{"resource": "configmaps", "verb": "WATCH"})
	registered = m.sum("apiserver_registered_watchers", map[string]string{"kind": "ConfigMap"})
	return longrunning, registered, nil
}

// quiesce waits until the applier's workqueues stay empty for two seconds.
func (b *bench) quiesce(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	stable := 0
	for time.Now().Before(deadline) {
		m, err := b.scrape(ctx)
		if b.app.gone() {
			return err
		}
		if err == nil && m.sum("kube_applier_workqueue_depth", nil) == 0 {
			stable++
			if stable >= 4 {
				return nil
			}
		} else {
			stable = 0
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return fmt.Errorf("applier workqueues not empty after %s", timeout)
}
