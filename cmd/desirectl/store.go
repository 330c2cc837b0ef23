package main

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier"
)

// store is the CLI's view of the six tables of one management cluster: it writes the specs
// tables and only reads the status tables.
type store struct {
	applies kindTables[*kubeapplier.ApplyDesire]
	deletes kindTables[*kubeapplier.DeleteDesire]
	reads   kindTables[*kubeapplier.ReadDesire]
}

// kindTables are the specs and status tables of one desire kind.
type kindTables[T kubeapplier.Desire] struct {
	kind   kubeapplier.DesireKind
	specs  kubeapplier.ResourceCRUD[T]
	status kubeapplier.SpecReader[T]
}

func newStore(api kubeapplier.DynamoDBAPI, prefix, managementCluster string) *store {
	return &store{
		applies: newKindTables[*kubeapplier.ApplyDesire](api, prefix, managementCluster, kubeapplier.KindApplyDesire),
		deletes: newKindTables[*kubeapplier.DeleteDesire](api, prefix, managementCluster, kubeapplier.KindDeleteDesire),
		reads:   newKindTables[*kubeapplier.ReadDesire](api, prefix, managementCluster, kubeapplier.KindReadDesire),
	}
}

func newKindTables[T kubeapplier.Desire](api kubeapplier.DynamoDBAPI, prefix, mc string, kind kubeapplier.DesireKind) kindTables[T] {
	return kindTables[T]{kind: kind,
		specs:  kubeapplier.NewTable[T](api, kubeapplier.TableName(prefix, mc, kubeapplier.SpecsTable, kind)),
		status: kubeapplier.NewTable[T](api, kubeapplier.TableName(prefix, mc, kubeapplier.StatusTable, kind)),
	}
}

// put stores d as the spec document d.Meta().DocumentID: Create when there is none, else
// Replace at the stored Version, keeping its CreateTime. A write that loses a race with another
// writer is retried once. It returns the stored desire and whether it was created.
func put[T kubeapplier.Desire](ctx context.Context, t kindTables[T], d T) (T, bool, error) {
	var zero T
	id := d.Meta().DocumentID
	for attempt := 0; ; attempt++ {
		cur, err := t.specs.Get(ctx, id)
		if kubeapplier.IsNotFoundError(err) {
			stored, err := t.specs.Create(ctx, d)
			if kubeapplier.IsAlreadyExistsError(err) && attempt == 0 {
				continue
			}
			return stored, true, dbError(err)
		}
		if err != nil {
			return zero, false, dbError(err)
		}
		d.Meta().Version = cur.Meta().Version
		d.Meta().CreateTime = cur.Meta().CreateTime
		stored, err := t.specs.Replace(ctx, d)
		if kubeapplier.IsPreconditionFailedError(err) && attempt == 0 {
			continue
		}
		return stored, false, dbError(err)
	}
}

// getSpec returns the spec document id, or nil when there is none.
func getSpec[T kubeapplier.Desire](ctx context.Context, t kindTables[T], id string) (T, bool, error) {
	d, err := t.specs.Get(ctx, id)
	if kubeapplier.IsNotFoundError(err) {
		return d, false, nil
	}
	return d, err == nil, dbError(err)
}

// statusGetter returns a function reading the status document id: the desire, or nil when
// the applier has written none yet.
func statusGetter[T kubeapplier.Desire](t kindTables[T], id string) func(context.Context) (kubeapplier.Desire, error) {
	return func(ctx context.Context) (kubeapplier.Desire, error) {
		d, err := t.status.Get(ctx, id)
		if kubeapplier.IsNotFoundError(err) {
			return nil, nil
		}
		if err != nil {
			return nil, dbError(err)
		}
		return d, nil
	}
}

// dbError turns a missing table into a configuration error (wrong management cluster, prefix,
// region or endpoint); other errors are returned as they are.
func dbError(err error) error {
	var rnf *types.ResourceNotFoundException
	if errors.As(err, &rnf) {
		return usageErrorf("%v (check the management cluster, table prefix, region and endpoint of the context)", err)
	}
	return err
}
