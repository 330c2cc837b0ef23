package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// TestItemTable: desirectl's table client writes specs as the contract says (version 1, then
// +1 on each replace at the stored version) and answers with the api module's errors.
func TestItemTable(t *testing.T) {
	ctx := context.Background()
	db := newFakeDB()
	db.PageSize, db.EmptyPages = 2, true
	tb := newItemTable[*api.ApplyDesire](db, "specs")
	spec := func(id string) *api.ApplyDesire {
		d := &api.ApplyDesire{DynamoDBMetadata: api.DynamoDBMetadata{DocumentID: id}}
		d.Spec.KubeContent = json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`)
		return d
	}
	created, err := tb.Create(ctx, spec("a"))
	if err != nil || created.Version != 1 || created.CreateTime.IsZero() || !created.UpdateTime.Equal(created.CreateTime) {
		t.Fatalf("Create = %+v, %v", created.DynamoDBMetadata, err)
	}
	if _, err := tb.Create(ctx, spec("a")); !errors.Is(err, api.ErrAlreadyExists) {
		t.Fatalf("second Create: %v", err)
	}
	replaced, err := tb.Replace(ctx, created)
	if err != nil || replaced.Version != 2 {
		t.Fatalf("Replace = %v, %v", replaced.Version, err)
	}
	if _, err := tb.Replace(ctx, created); !errors.Is(err, api.ErrPreconditionFailed) {
		t.Fatalf("stale Replace: %v", err)
	}
	if got, err := tb.Get(ctx, "a"); err != nil || got.Version != 2 {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	for i := range 4 {
		if _, err := tb.Create(ctx, spec(fmt.Sprintf("b%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if all, err := tb.List(ctx); err != nil || len(all) != 5 {
		t.Fatalf("List = %d desires, %v; want 5 over pages", len(all), err)
	}
	big := spec("big")
	big.Spec.KubeContent = json.RawMessage(`{"data":"` + strings.Repeat("x", api.MaxItemSize) + `"}`)
	if _, err := tb.Create(ctx, big); !errors.Is(err, api.ErrItemTooLarge) {
		t.Fatalf("oversize Create: %v", err)
	}
	if err := tb.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := tb.Delete(ctx, "a"); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("second Delete: %v", err)
	}
	if _, err := tb.Get(ctx, "a"); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("Get after Delete: %v", err)
	}
}
