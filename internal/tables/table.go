package tables

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/awscall"
	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
)

// DynamoDBAPI is the part of *dynamodb.Client the table layer uses, so a fake can stand in.
type DynamoDBAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// SpecReader reads desires from a specs table. It has no write method on purpose: the applier
// must never write a spec.
type SpecReader[T api.Desire] interface {
	// Get returns the desire with that documentID (strongly consistent read), or api.ErrNotFound.
	Get(ctx context.Context, id string) (T, error)
	// List returns every desire of the table (a full, paged Scan).
	List(ctx context.Context) ([]T, error)
}

// ResourceCRUD reads and writes desires in a status table.
type ResourceCRUD[T api.Desire] interface {
	SpecReader[T]
	// Create stores d with Version 1 and CreateTime = UpdateTime = now; api.ErrAlreadyExists
	// when the documentID is taken, api.ErrItemTooLarge over 400 KB. Returns the stored desire.
	Create(ctx context.Context, d T) (T, error)
	// Replace stores d if the stored Version still equals d's Version, with Version+1 and
	// UpdateTime = now; api.ErrPreconditionFailed when stale or deleted, api.ErrItemTooLarge
	// over 400 KB. Returns the stored desire.
	Replace(ctx context.Context, d T) (T, error)
	// Delete removes the item; api.ErrNotFound when there is none.
	Delete(ctx context.Context, id string) error
	// ListIDs returns the documentID of every item (a paged Scan that reads keys only).
	ListIDs(ctx context.Context) ([]string, error)
}

// Table is the DynamoDB implementation of ResourceCRUD for one table.
type Table[T api.Desire] struct {
	db    DynamoDBAPI
	name  string
	clock func() time.Time
	// term, when fenced, is the leadership term stamped on every write (attribute
	// applierTerm); a write over an item of a newer term is refused by DynamoDB.
	term   int64
	fenced bool
	// status: a status table, whose documents carry `shard` (shardattr.go) and whose reserved
	// documentIDs (the heartbeat) are not desires.
	status bool
}

// New returns the CRUD client of one table.
func New[T api.Desire](db DynamoDBAPI, tableName string) *Table[T] {
	return &Table[T]{db: db, name: tableName, clock: time.Now}
}

// AsStatus marks t as a status table (its writes carry `shard`, its listings skip reserved
// documentIDs) and returns it.
func AsStatus[T api.Desire](t *Table[T]) *Table[T] {
	t.status = true
	return t
}

// Name returns the table name.
func (t *Table[T]) Name() string { return t.name }

// FencedBy returns a client of the same table whose writes belong to leadership term term (a
// number that only grows, see the root's Options.LeaderElection): each written item carries
// it in the attribute applierTerm, and Replace and Delete are conditional on the stored item's
// term being at most term, so DynamoDB itself refuses a write of an older term over one of a
// newer term (fencing.ErrFenced), even for the same spec version.
func (t *Table[T]) FencedBy(term int64) ResourceCRUD[T] {
	c := *t
	c.term, c.fenced = term, true
	return &c
}

// fence returns cond, and when t is fenced, cond AND the stored item's term is not newer.
func (t *Table[T]) fence(cond expression.ConditionBuilder) expression.ConditionBuilder {
	if !t.fenced {
		return cond
	}
	return fencing.Fence(cond, t.term)
}

// fencedOut returns a *fencing.NewerTermError when a failed conditional write was refused
// because the stored item (returned with ReturnValuesOnConditionCheckFailure=ALL_OLD) belongs
// to a newer term, else nil.
func (t *Table[T]) fencedOut(err error) error {
	var ccf *types.ConditionalCheckFailedException
	if !t.fenced || !errors.As(err, &ccf) {
		return nil
	}
	return fencing.NewerInItem(ccf.Item, t.term)
}

func (t *Table[T]) key(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{api.AttrDocumentID: &types.AttributeValueMemberS{Value: id}}
}

// Get implements SpecReader.
func (t *Table[T]) Get(ctx context.Context, id string) (T, error) {
	var zero T
	out, err := t.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &t.name, Key: t.key(id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return zero, fmt.Errorf("get %s from %s: %w", id, t.name, err)
	}
	if len(out.Item) == 0 {
		return zero, fmt.Errorf("get %s from %s: %w", id, t.name, api.ErrNotFound)
	}
	d := api.NewDesire[T]()
	if err := api.DecodeItem(out.Item, d); err != nil {
		return zero, err
	}
	return d, nil
}

// List implements SpecReader. Items that do not decode are skipped and returned in the
// joined error next to the good ones, so one bad document cannot hide the others.
func (t *Table[T]) List(ctx context.Context) ([]T, error) {
	var (
		out []T
		bad []error
	)
	err := awscall.Scan(ctx, t.db, dynamodb.ScanInput{TableName: &t.name}, func(item map[string]types.AttributeValue) {
		if t.status && api.IsReservedID(api.IDOf(item)) {
			return // the heartbeat, not a desire
		}
		d := api.NewDesire[T]()
		if err := api.DecodeItem(item, d); err != nil {
			bad = append(bad, err)
			return
		}
		out = append(out, d)
	})
	if err != nil {
		return nil, err
	}
	return out, errors.Join(bad...)
}

// ListIDs implements ResourceCRUD: a Scan projected on documentID, so a table of 400 KB items
// costs kilobytes to list.
func (t *Table[T]) ListIDs(ctx context.Context) ([]string, error) {
	expr, err := expression.NewBuilder().WithProjection(expression.NamesList(expression.Name(api.AttrDocumentID))).Build()
	if err != nil {
		return nil, fmt.Errorf("build projection: %w", err)
	}
	var ids []string
	err = awscall.Scan(ctx, t.db, dynamodb.ScanInput{TableName: &t.name, ProjectionExpression: expr.Projection(),
		ExpressionAttributeNames: expr.Names()}, func(item map[string]types.AttributeValue) {
		if id, ok := item[api.AttrDocumentID].(*types.AttributeValueMemberS); ok && !(t.status && api.IsReservedID(id.Value)) {
			ids = append(ids, id.Value)
		}
	})
	return ids, err
}

// Create implements ResourceCRUD.
func (t *Table[T]) Create(ctx context.Context, d T) (T, error) {
	var zero T
	d = d.DeepCopyDesire().(T)
	now := t.clock().UTC().Round(0)
	m := d.Meta()
	m.Version, m.CreateTime, m.UpdateTime = 1, now, now
	cond := expression.AttributeNotExists(expression.Name(api.AttrDocumentID))
	if err := t.put(ctx, d, cond); err != nil {
		if isConditionalCheckFailed(err) {
			return zero, fmt.Errorf("create %s in %s: %w: %w", m.DocumentID, t.name, api.ErrAlreadyExists, err)
		}
		return zero, err
	}
	return d, nil
}

// Replace implements ResourceCRUD.
func (t *Table[T]) Replace(ctx context.Context, d T) (T, error) {
	var zero T
	d = d.DeepCopyDesire().(T)
	m := d.Meta()
	expected, written := m.Version, m.UpdateTime
	m.Version++
	m.UpdateTime = t.clock().UTC().Round(0)
	cond := t.fence(expression.Name(api.AttrVersion).Equal(expression.Value(expected)))
	if t.status && !written.IsZero() {
		// A status deleted and created again behind the writer's cache (a restore, an older
		// term's create over the gap) starts again at version 1: its updateTime tells it from
		// the one read (no ABA). Only the applier writes statuses, in this one encoding.
		cond = cond.And(expression.Name(api.AttrUpdateTime).Equal(expression.Value(written)))
	}
	if err := t.put(ctx, d, cond); err != nil {
		if fenced := t.fencedOut(err); fenced != nil {
			return zero, fmt.Errorf("replace %s in %s: %w: %w", m.DocumentID, t.name, fenced, err)
		}
		if isConditionalCheckFailed(err) {
			return zero, fmt.Errorf("replace %s in %s at version %d: %w: %w", m.DocumentID, t.name, expected, api.ErrPreconditionFailed, err)
		}
		return zero, err
	}
	return d, nil
}

func (t *Table[T]) put(ctx context.Context, d T, cond expression.ConditionBuilder) error {
	item, err := api.EncodeItem(d)
	if err != nil {
		return err
	}
	if t.fenced {
		item[api.AttrApplierTerm] = &types.AttributeValueMemberN{Value: strconv.FormatInt(t.term, 10)}
	}
	if t.status {
		// The returned document is what the table holds (the status cache keeps it).
		setShard(d, withShard(item))
	}
	if size := api.ItemSize(item); size > api.MaxItemSize {
		return &api.ItemTooLargeError{Table: t.name, DocumentID: d.Meta().DocumentID, Size: size, Limit: api.MaxItemSize}
	}
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return fmt.Errorf("build condition: %w", err)
	}
	_, err = t.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &t.name, Item: item,
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
	if err != nil {
		return fmt.Errorf("put %s into %s: %w", d.Meta().DocumentID, t.name, err)
	}
	return nil
}

// Delete implements ResourceCRUD.
func (t *Table[T]) Delete(ctx context.Context, id string) error {
	expr, err := expression.NewBuilder().WithCondition(t.fence(expression.AttributeExists(expression.Name(api.AttrDocumentID)))).Build()
	if err != nil {
		return fmt.Errorf("build condition: %w", err)
	}
	_, err = t.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &t.name, Key: t.key(id),
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
	if err != nil {
		if fenced := t.fencedOut(err); fenced != nil {
			return fmt.Errorf("delete %s from %s: %w: %w", id, t.name, fenced, err)
		}
		if isConditionalCheckFailed(err) {
			return fmt.Errorf("delete %s from %s: %w", id, t.name, api.ErrNotFound)
		}
		return fmt.Errorf("delete %s from %s: %w", id, t.name, err)
	}
	return nil
}

func isConditionalCheckFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// SetClock makes t stamp its writes' createTime and updateTime with now instead of
// time.Now: tests write statuses at a fixed time, or as another writer would.
func (t *Table[T]) SetClock(now func() time.Time) { t.clock = now }
