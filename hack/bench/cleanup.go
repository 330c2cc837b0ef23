package main

// After the scenarios: stop the applier, delete what the run created.

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-applier-aws/kubeapplier/internal/reqcount"
)

// cleanup stops the applier and removes what the run created, each step bounded in time.
func (b *bench) cleanup() {
	if b.app != nil {
		if b.cfg.keep {
			b.logf("-keep: applier left running (pid %d, metrics http://%s/metrics)", b.app.pid, b.metricsAddr)
		} else {
			b.app.stop(10 * time.Second)
		}
	}
	os.RemoveAll(b.binDir)
	if b.cfg.keep {
		b.logf("-keep: tables %s*, %s* and namespace %s left in place (access key %s)", b.prefix, b.basePrefix, b.ns, b.accessKey)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// No controller-manager runs: a deleted namespace keeps its objects forever, so the
	// ConfigMaps go first (one deletecollection), then the namespace (not awaited).
	// The apiserver ends a request after 60 s: a deletecollection of tens of thousands of
	// objects can fail part-way, so it is repeated until one succeeds.
	t0 := time.Now()
	for attempt := 1; ; attempt++ {
		err := b.dyn.Resource(cmGVR).Namespace(b.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		if err == nil || apierrors.IsNotFound(err) {
			break
		}
		if attempt == 5 || ctx.Err() != nil {
			b.logf("cleanup: delete configmaps in %s: %v", b.ns, err)
			break
		}
	}
	// The watch scenario's Deployments and namespaces (one ConfigMap each).
	if err := b.dyn.Resource(deployGVR).Namespace(b.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
		b.logf("cleanup: delete deployments in %s: %v", b.ns, err)
	}
	for _, ns := range b.extraNamespaces {
		if err := b.dyn.Resource(cmGVR).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
			b.logf("cleanup: delete configmaps in %s: %v", ns, err)
		}
		if err := b.dyn.Resource(nsGVR).Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			b.logf("cleanup: delete namespace %s: %v", ns, err)
		}
	}
	if err := b.dyn.Resource(nsGVR).Delete(ctx, b.ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		b.logf("cleanup: delete namespace %s: %v", b.ns, err)
	}
	n := 0
	dbs := []*dynamodb.Client{b.ddb}
	if plain, _, err := b.newDynamo(ctx, b.plainKey, &reqcount.Counts{}); err == nil {
		dbs = append(dbs, plain)
	}
	for _, db := range dbs {
		pages := dynamodb.NewListTablesPaginator(db, &dynamodb.ListTablesInput{})
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				b.logf("cleanup: list tables: %v", err)
				break
			}
			for _, name := range page.TableNames {
				if strings.HasPrefix(name, b.prefix) {
					if _, err := db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
						b.logf("cleanup: delete table %s: %v", name, err)
					} else {
						n++
					}
				}
			}
		}
	}
	b.logf("cleanup: %d tables deleted, namespace %s and its ConfigMaps deleted (%s)", n, b.ns, time.Since(t0).Round(time.Millisecond))
}
