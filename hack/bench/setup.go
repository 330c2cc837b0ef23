package main

// Before the scenarios: the machine's facts, the binary, the tables and the namespace.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kubeapplier "github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
)

// setup creates the tables, the namespace and builds the binary.
func (b *bench) setup(ctx context.Context) error {
	b.collectFacts(ctx)
	t0 := time.Now()
	b.logf("building ./cmd/kube-applier-aws")
	build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(b.binDir, "kube-applier-aws"), "./cmd/kube-applier-aws")
	build.Dir, build.Stdout, build.Stderr = b.repo, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build ./cmd/kube-applier-aws: %w", err)
	}
	b.details["build_seconds"] = time.Since(t0).Seconds()
	for _, p := range []string{b.prefix, b.basePrefix} {
		var opts []api.TableOption
		if p == b.prefix && b.source.Name == "index-poll" { // the sources scenario adds it when it runs
			opts = append(opts, api.WithSpecIndex())
		}
		if _, err := api.EnsureTables(ctx, b.ddb, p, cluster, opts...); err != nil {
			return err
		}
	}
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": b.ns, "labels": map[string]any{"app": benchName}}}}
	if _, err := b.dyn.Resource(nsGVR).Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace %s: %w", b.ns, err)
	}
	b.ids = make([]string, b.cfg.desires)
	b.versions = make([]int64, b.cfg.desires)
	b.idIndex = make(map[string]int, b.cfg.desires)
	for i := range b.ids {
		b.ids[i] = kubeapplier.DesireID(taskKey, b.target(b.cmName(i)))
		b.idIndex[b.ids[i]] = i
	}
	b.logf("tables %s*, %s*; namespace %s; output %s", b.prefix, b.basePrefix, b.ns, b.outDir)
	return nil
}

func (b *bench) collectFacts(ctx context.Context) {
	f := b.facts
	f["date"] = time.Now().Format(time.RFC3339)
	f["nproc"] = runtime.NumCPU()
	f["goos_goarch"] = runtime.GOOS + "/" + runtime.GOARCH
	if out, err := exec.Command("go", "version").Output(); err == nil {
		f["go_version"] = strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("git", "-C", b.repo, "rev-parse", "HEAD").Output(); err == nil {
		commit := strings.TrimSpace(string(out))
		if st, err := exec.Command("git", "-C", b.repo, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
			commit += " (work tree modified)"
		}
		f["git_commit"] = commit
	}
	f["loadavg_start"] = loadavg()
	if mem, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(mem), "\n") {
			if strings.HasPrefix(l, "MemTotal:") {
				f["mem_total"] = strings.TrimSpace(strings.TrimPrefix(l, "MemTotal:"))
			}
		}
	}
	if v, err := b.disc.ServerVersion(); err == nil {
		f["kube_apiserver"] = v.GitVersion
	}
	f["dynamodb_endpoint"] = b.cfg.endpoint
}
