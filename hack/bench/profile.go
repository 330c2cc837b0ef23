package main

// The applier's pprof profiles, saved into the output directory.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// saveProfile stores one pprof endpoint of the applier into the output directory.
func (b *bench) saveProfile(ctx context.Context, path, file string, timeout time.Duration) {
	if b.fetchProfile(ctx, path, file, timeout) {
		out := filepath.Join(b.outDir, file)
		b.logf("saved %s (go tool pprof %s)", out, out)
	}
}

func (b *bench) fetchProfile(ctx context.Context, path, file string, timeout time.Duration) bool {
	body, code, err := httpGet(ctx, "http://"+b.metricsAddr+path, timeout)
	if err != nil || code != 200 {
		b.logf("profile %s: %v (HTTP %d)", path, err, code)
		return false
	}
	return os.WriteFile(filepath.Join(b.outDir, file), body, 0o644) == nil
}

// profileUntil saves the applier's CPU profile from now until stop is closed, as slices of
// profileSlice into dir (go tool pprof reads them as one: go tool pprof -top dir/*.pprof): a
// phase whose length is not known in advance (a bulk: 30 s at 10k, minutes at 40k) is
// profiled whole, so its CPU per desire can be split by function. The last slice runs up to
// profileSlice past stop.
func (b *bench) profileUntil(ctx context.Context, stop <-chan struct{}, dir string) {
	const profileSlice = 5 * time.Second
	if err := os.MkdirAll(filepath.Join(b.outDir, dir), 0o755); err != nil {
		b.logf("profile: %v", err)
		return
	}
	saved := 0
	for i := 0; ; i++ {
		select {
		case <-stop:
			b.logf("saved %d CPU profiles of %s in %s (go tool pprof -top %[3]s/*.pprof)", saved, profileSlice, filepath.Join(b.outDir, dir))
			return
		case <-ctx.Done():
			return
		default:
		}
		if b.fetchProfile(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(profileSlice.Seconds())), filepath.Join(dir, fmt.Sprintf("%03d.pprof", i)), profileSlice+30*time.Second) {
			saved++
			continue
		}
		select { // the applier is gone, or busy with another profile: no busy loop
		case <-stop:
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}
