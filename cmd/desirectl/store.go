package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// specWriter is what desirectl does with a specs table: it is the backend's side, so it
// creates, replaces and deletes desires there, and reads them back.
type specWriter[T api.Desire] interface {
	// Get returns the desire with that documentID, or an error wrapping ErrNotFound.
	Get(ctx context.Context, id string) (T, error)
	// List returns every desire of the table.
	List(ctx context.Context) ([]T, error)
	// Create stores d at version 1; ErrAlreadyExists when the documentID is taken.
	Create(ctx context.Context, d T) (T, error)
	// Replace stores d if the stored version still equals d's; else ErrPreconditionFailed.
	Replace(ctx context.Context, d T) (T, error)
	// Delete removes the desire; ErrNotFound when there is none.
	Delete(ctx context.Context, id string) error
}

// statusReader is what desirectl does with a status table: only the applier writes there.
type statusReader[T api.Desire] interface {
	// Get returns the status document with that documentID, or an error wrapping ErrNotFound.
	Get(ctx context.Context, id string) (T, error)
}

// The contract's client serves both roles: api.Desires writes the specs, and statusOf reads
// its statuses.
var (
	_ specWriter[*api.ApplyDesire]  = (*api.Desires[*api.ApplyDesire])(nil)
	_ statusReader[*api.ReadDesire] = statusOf[*api.ReadDesire]{}
)

// dynamoDB is the part of *dynamodb.Client desirectl uses, so a fake can stand in. Table
// administration (api.TableAdminAPI, tableDeleter) is asked of it with a type assertion.
type dynamoDB interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// contractDB is desirectl's client as api.Client takes it. desirectl never polls the status
// index (api.Desires.StatusesSince), so a client without Query serves: a test's fake.
type contractDB struct{ dynamoDB }

// Query passes the call on when the client has Query.
func (db contractDB) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	q, ok := db.dynamoDB.(interface {
		Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	})
	if !ok {
		return nil, errors.New("the DynamoDB client cannot Query")
	}
	return q.Query(ctx, in, opts...)
}

// statusOf reads the status table of one kind through the contract's client.
type statusOf[T api.Desire] struct{ d *api.Desires[T] }

// Get returns the status document id, or an error wrapping api.ErrNotFound.
func (s statusOf[T]) Get(ctx context.Context, id string) (T, error) { return s.d.Status(ctx, id) }

// store is the CLI's view of the six tables of one management cluster: it writes the specs
// tables and only reads the status tables.
type store struct {
	applies kindTables[*api.ApplyDesire]
	deletes kindTables[*api.DeleteDesire]
	reads   kindTables[*api.ReadDesire]
	// folded: the folded layout (api.TableLayout.FoldedDeletes): deletes names tables that do
	// not exist, and a deletion is an ApplyDesire of type Delete.
	folded bool
}

// kindTables are the specs and status tables of one desire kind.
type kindTables[T api.Desire] struct {
	kind   api.DesireKind
	specs  specWriter[T]
	status statusReader[T]
}

func newStore(db dynamoDB, layout api.TableLayout, managementCluster string) *store {
	c := api.NewClient(contractDB{db}, layout.Prefix, managementCluster, api.WithLayout(layout))
	return &store{
		applies: newKindTables(c.ApplyDesires(), api.KindApplyDesire),
		deletes: newKindTables(c.DeleteDesires(), api.KindDeleteDesire),
		reads:   newKindTables(c.ReadDesires(), api.KindReadDesire),
		folded:  layout.FoldedDeletes,
	}
}

// opposite returns the tables of the desire that apply or delete (kind) removes before it
// writes: the other kind's; in the folded layout none (apply and delete write the same
// ApplyDesire, whose type the write changes).
func (s *store) opposite(kind api.DesireKind) desireTables {
	switch {
	case s.folded:
		return noDesires{}
	case kind == api.KindApplyDesire:
		return s.deletes
	}
	return s.applies
}

// noDesires is a desire kind without tables: it holds nothing.
type noDesires struct{}

func (noDesires) desireKind() api.DesireKind { return api.KindDeleteDesire }
func (noDesires) getSpec(context.Context, string) (api.Desire, bool, error) {
	return nil, false, nil
}
func (noDesires) listSpecs(context.Context) ([]api.Desire, error)       { return nil, nil }
func (noDesires) deleteSpec(context.Context, string) (bool, error)      { return false, nil }
func (noDesires) getStatus(context.Context, string) (api.Desire, error) { return nil, nil }

func newKindTables[T api.Desire](d *api.Desires[T], kind api.DesireKind) kindTables[T] {
	return kindTables[T]{kind: kind, specs: d, status: statusOf[T]{d}}
}

// desireTables is kindTables without its type parameter, for code that treats the three
// desire kinds alike.
type desireTables interface {
	desireKind() api.DesireKind
	// getSpec returns the spec document id and whether there is one.
	getSpec(ctx context.Context, id string) (api.Desire, bool, error)
	// listSpecs scans the specs table; documents that do not decode are returned as an error
	// wrapping ErrInvalidItem beside the others.
	listSpecs(ctx context.Context) ([]api.Desire, error)
	// deleteSpec removes the spec document id; false when there was none.
	deleteSpec(ctx context.Context, id string) (bool, error)
	// getStatus returns the status document id, or nil when the applier has written none.
	getStatus(ctx context.Context, id string) (api.Desire, error)
}

// kinds returns the tables of every desire kind, in the order desires are listed.
// In the folded layout there are no DeleteDesire tables: folded Deletes are ApplyDesires.
func (s *store) kinds() []desireTables {
	if s.folded {
		return []desireTables{s.applies, s.reads}
	}
	return []desireTables{s.applies, s.deletes, s.reads}
}

// of returns the tables of one desire kind.
func (s *store) of(kind api.DesireKind) desireTables {
	for _, t := range s.kinds() {
		if t.desireKind() == kind {
			return t
		}
	}
	panic("unknown desire kind " + string(kind))
}

func (t kindTables[T]) desireKind() api.DesireKind { return t.kind }

func (t kindTables[T]) getSpec(ctx context.Context, id string) (api.Desire, bool, error) {
	d, err := t.specs.Get(ctx, id)
	if errors.Is(err, api.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, dbError(err)
	}
	return d, true, nil
}

func (t kindTables[T]) listSpecs(ctx context.Context) ([]api.Desire, error) {
	ds, err := t.specs.List(ctx)
	out := make([]api.Desire, 0, len(ds))
	for _, d := range ds {
		if !api.IsReservedID(d.Meta().DocumentID) { // not a desire (docs/contract.md "Reserved documentIDs")
			out = append(out, d)
		}
	}
	return out, dbError(err)
}

func (t kindTables[T]) deleteSpec(ctx context.Context, id string) (bool, error) {
	err := t.specs.Delete(ctx, id)
	if errors.Is(err, api.ErrNotFound) {
		return false, nil
	}
	return err == nil, dbError(err)
}

func (t kindTables[T]) getStatus(ctx context.Context, id string) (api.Desire, error) {
	d, err := t.status.Get(ctx, id)
	if errors.Is(err, api.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, dbError(err)
	}
	return d, nil
}

// putResult is what put did: kubectl's words for it.
type putResult string

const (
	putCreated    putResult = "created"
	putConfigured putResult = "configured"
	putUnchanged  putResult = "unchanged"
)

// put stores d as the spec document d.Meta().DocumentID: Create when there is none, else
// Replace at the stored Version, keeping its CreateTime. A stored spec equal to d's
// (sameSpec) is left as it is unless rewrite: every write bumps the version, which the applier
// answers with a reconcile and a status write, for nothing. A write that loses a race with
// another writer is retried once. It returns the stored desire and what put did.
func put[T api.Desire](ctx context.Context, t kindTables[T], d T, rewrite bool) (T, putResult, error) {
	var zero T
	id := d.Meta().DocumentID
	for attempt := 0; ; attempt++ {
		cur, err := t.specs.Get(ctx, id)
		if errors.Is(err, api.ErrNotFound) {
			stored, err := t.specs.Create(ctx, d)
			if errors.Is(err, api.ErrAlreadyExists) && attempt == 0 {
				continue
			}
			return stored, putCreated, dbError(err)
		}
		if err != nil {
			return zero, "", dbError(err)
		}
		// A newer backend's options: rewriting the spec would drop them (an applyPolicy:
		// ReadOnly would become a write). docs/contract.md, Forward safety.
		if u := cur.Common().UnknownAttributes(); len(u) > 0 {
			return zero, "", fmt.Errorf("%s holds spec attributes this desirectl does not know (%s): a newer backend wrote them "+
				"and rewriting it would drop them; use a newer desirectl, or remove the desire first: %w", id, strings.Join(u, ", "), api.ErrInvalidItem)
		}
		if !rewrite && sameSpec(cur, d) && !failedAt(ctx, t, cur) {
			return cur, putUnchanged, nil
		}
		d.Meta().Version = cur.Meta().Version
		d.Meta().CreateTime = cur.Meta().CreateTime
		stored, err := t.specs.Replace(ctx, d)
		if errors.Is(err, api.ErrPreconditionFailed) && attempt == 0 {
			continue
		}
		return stored, putConfigured, dbError(err)
	}
}

// failedAt reports whether the status answers cur's version with Successful other than True:
// applying the same manifest again is how a user retries a verdict that waits for a new spec
// (PreCheckFailed, KubeAPIError after its cause was fixed), so it is written again, not
// "unchanged". A status that cannot be read counts as not failed.
func failedAt[T api.Desire](ctx context.Context, t kindTables[T], cur T) bool {
	st, err := t.status.Get(ctx, cur.Meta().DocumentID)
	if err != nil {
		return false
	}
	c := st.StatusCommon().Condition(api.ConditionSuccessful)
	return c != nil && c.ObservedGeneration == cur.Meta().Version && c.Status != api.ConditionTrue
}

// sameSpec reports whether two desires of one kind ask for the same thing: equal spec
// fields and options, and for ApplyDesires kubeContent equal as JSON (key order and layout
// aside; numbers compared as written, so 1 and 1.0 count as a change). Options are compared
// in their normal form (normalApply): a default spelled out equals its absence, an empty
// list none, so neither causes a rewrite; a change of options alone is a change.
func sameSpec(a, b api.Desire) bool {
	switch x := a.(type) {
	case *api.ApplyDesire:
		y, ok := b.(*api.ApplyDesire)
		if !ok || !jsonEqual(x.Spec.KubeContent, y.Spec.KubeContent) {
			return false
		}
		xs, ys := x.Spec, y.Spec
		xs.KubeContent, ys.KubeContent = nil, nil
		normalApply(&xs)
		normalApply(&ys)
		return reflect.DeepEqual(xs, ys)
	case *api.DeleteDesire:
		y, ok := b.(*api.DeleteDesire)
		if !ok {
			return false
		}
		xs, ys := x.Spec, y.Spec
		normalDelete(&xs)
		normalDelete(&ys)
		return xs == ys
	case *api.ReadDesire:
		y, ok := b.(*api.ReadDesire)
		if !ok {
			return false
		}
		xs, ys := x.Spec, y.Spec
		normalRead(&xs)
		normalRead(&ys)
		return reflect.DeepEqual(xs, ys)
	}
	return false
}

// jsonEqual reports whether two JSON documents hold the same values; false when either does
// not parse.
func jsonEqual(a, b []byte) bool {
	parse := func(raw []byte) (any, bool) {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil || dec.More() {
			return nil, false
		}
		return v, true
	}
	va, okA := parse(a)
	vb, okB := parse(b)
	return okA && okB && reflect.DeepEqual(va, vb)
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
