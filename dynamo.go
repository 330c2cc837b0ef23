package kubeapplier

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
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
)

// DynamoDBAPI is the part of *dynamodb.Client the CRUD layer uses, so a fake can stand in.
type DynamoDBAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// TableKind is "specs" (written by the backend, read by the applier) or "status" (written by
// the applier only): api.TableKind.
type TableKind = api.TableKind

// The two table kinds.
const (
	SpecsTable  = api.SpecsTable
	StatusTable = api.StatusTable
)

// TableName returns "{prefix}mc-{cluster}-{specs|status}-{applydesires|deletedesires|readdesires}"
// (api.TableName). prefix is "" in production; tests set one to keep their tables apart.
func TableName(prefix, cluster string, table TableKind, kind DesireKind) string {
	return api.TableName(prefix, cluster, table, kind)
}

// SpecReader reads desires from a specs table. It has no write method on purpose: the applier
// must never write a spec.
type SpecReader[T Desire] interface {
	// Get returns the desire with that documentID (strongly consistent read), or ErrNotFound.
	Get(ctx context.Context, id string) (T, error)
	// List returns every desire of the table (a full, paged Scan).
	List(ctx context.Context) ([]T, error)
}

// ResourceCRUD reads and writes desires in a status table.
type ResourceCRUD[T Desire] interface {
	SpecReader[T]
	// Create stores d with Version 1 and CreateTime = UpdateTime = now; ErrAlreadyExists when
	// the documentID is taken, ErrItemTooLarge over 400 KB. Returns the stored desire.
	Create(ctx context.Context, d T) (T, error)
	// Replace stores d if the stored Version still equals d's Version, with Version+1 and
	// UpdateTime = now; ErrPreconditionFailed when stale or deleted, ErrItemTooLarge over 400 KB.
	// Returns the stored desire.
	Replace(ctx context.Context, d T) (T, error)
	// Delete removes the item; ErrNotFound when there is none.
	Delete(ctx context.Context, id string) error
	// ListIDs returns the documentID of every item (a paged Scan that reads keys only).
	ListIDs(ctx context.Context) ([]string, error)
}

// Table is the DynamoDB implementation of ResourceCRUD for one table.
type Table[T Desire] struct {
	api   DynamoDBAPI
	name  string
	clock func() time.Time
	// term, when fenced, is the leadership term stamped on every write (attribute
	// applierTerm); a write over an item of a newer term is refused by DynamoDB.
	term   int64
	fenced bool
	// status: a status table, whose documents carry `shard` (shard.go) and whose reserved
	// documentIDs (heartbeat.go) are not desires.
	status bool
}

// NewTable returns the CRUD client of one table.
func NewTable[T Desire](api DynamoDBAPI, tableName string) *Table[T] {
	return &Table[T]{api: api, name: tableName, clock: time.Now}
}

// Name returns the table name.
func (t *Table[T]) Name() string { return t.name }

// fencedBy returns a client of the same table whose writes belong to leadership term term (a
// number that only grows, see Options.LeaderElection): each written item carries it in the
// attribute applierTerm, and Replace and Delete are conditional on the stored item's term
// being at most term, so DynamoDB itself refuses a write of an older term over one of a newer
// term (fencing.ErrFenced), even for the same spec version.
func (t *Table[T]) fencedBy(term int64) ResourceCRUD[T] {
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

// fencedOut returns a *fencing.NewerTermError when a failed conditional write was refused because the
// stored item (returned with ReturnValuesOnConditionCheckFailure=ALL_OLD) belongs to a newer
// term, else nil.
func (t *Table[T]) fencedOut(err error) error {
	var ccf *types.ConditionalCheckFailedException
	if !t.fenced || !errors.As(err, &ccf) {
		return nil
	}
	return fencing.NewerInItem(ccf.Item, t.term)
}

func (t *Table[T]) key(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrDocumentID: &types.AttributeValueMemberS{Value: id}}
}

// Get implements SpecReader.
func (t *Table[T]) Get(ctx context.Context, id string) (T, error) {
	var zero T
	out, err := t.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: &t.name, Key: t.key(id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return zero, fmt.Errorf("get %s from %s: %w", id, t.name, err)
	}
	if len(out.Item) == 0 {
		return zero, fmt.Errorf("get %s from %s: %w", id, t.name, ErrNotFound)
	}
	d := newDesire[T]()
	if err := DecodeItem(out.Item, d); err != nil {
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
	err := awscall.Scan(ctx, t.api, dynamodb.ScanInput{TableName: &t.name}, func(item map[string]types.AttributeValue) {
		if t.status && IsReservedID(idOf(item)) {
			return // the heartbeat, not a desire
		}
		d := newDesire[T]()
		if err := DecodeItem(item, d); err != nil {
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
	expr, err := expression.NewBuilder().WithProjection(expression.NamesList(expression.Name(attrDocumentID))).Build()
	if err != nil {
		return nil, fmt.Errorf("build projection: %w", err)
	}
	var ids []string
	err = awscall.Scan(ctx, t.api, dynamodb.ScanInput{TableName: &t.name, ProjectionExpression: expr.Projection(),
		ExpressionAttributeNames: expr.Names()}, func(item map[string]types.AttributeValue) {
		if id, ok := item[attrDocumentID].(*types.AttributeValueMemberS); ok && !(t.status && IsReservedID(id.Value)) {
			ids = append(ids, id.Value)
		}
	})
	return ids, err
}

// listVersions returns the stamp of every item (documentID to version and updateTime; a
// paged, eventually consistent Scan projected on them, reserved documents of a status table
// skipped): half the read units of a consistent one; an item written a moment ago may show
// its older stamp. AWS bills it by the items' full size, whatever the projection.
func (t *Table[T]) listVersions(ctx context.Context) (map[string]controller.Stamp, error) {
	return t.scanStamps(ctx, dynamodb.ScanInput{TableName: &t.name, ConsistentRead: aws.Bool(false)})
}

// listIndexStamps is listVersions read from the status check's GSI (StatusCheckIndexName),
// billed by its ~200-byte index items instead of the statuses. A GSI is eventually consistent:
// a write of the last seconds may show its older stamp, or be missing. On any failure the
// check falls back to the table's Scan (Controller.listStamps): no index, one not ACTIVE yet
// (ValidationException), or a Scan of the index the IAM policy does not allow (a policy naming
// the tables' ARNs exactly, which served releases before the index).
func (t *Table[T]) listIndexStamps(ctx context.Context) (map[string]controller.Stamp, error) {
	stamps, err := t.scanStamps(ctx, dynamodb.ScanInput{TableName: &t.name, IndexName: aws.String(StatusCheckIndexName),
		ConsistentRead: aws.Bool(false)})
	if err != nil {
		return nil, fmt.Errorf("index %s of %s: %w", StatusCheckIndexName, t.name, err)
	}
	return stamps, nil
}

// scanStamps pages the Scan in, projected on documentID, version and updateTime.
func (t *Table[T]) scanStamps(ctx context.Context, in dynamodb.ScanInput) (map[string]controller.Stamp, error) {
	expr, err := expression.NewBuilder().WithProjection(expression.NamesList(expression.Name(attrDocumentID),
		expression.Name(attrVersion), expression.Name(attrUpdateTime))).Build()
	if err != nil {
		return nil, fmt.Errorf("build projection: %w", err)
	}
	in.ProjectionExpression, in.ExpressionAttributeNames = expr.Projection(), expr.Names()
	versions := map[string]controller.Stamp{}
	err = awscall.Scan(ctx, t.api, in, func(item map[string]types.AttributeValue) {
		if id, ok := item[attrDocumentID].(*types.AttributeValueMemberS); ok && !(t.status && IsReservedID(id.Value)) {
			st := controller.Stamp{Version: parseVersion(item)}
			if u, ok := item[attrUpdateTime].(*types.AttributeValueMemberS); ok {
				st.UpdateTime = u.Value
			}
			versions[id.Value] = st
		}
	})
	return versions, err
}

// Create implements ResourceCRUD.
func (t *Table[T]) Create(ctx context.Context, d T) (T, error) {
	var zero T
	d = d.DeepCopyDesire().(T)
	now := t.clock().UTC().Round(0)
	m := d.Meta()
	m.Version, m.CreateTime, m.UpdateTime = 1, now, now
	cond := expression.AttributeNotExists(expression.Name(attrDocumentID))
	if err := t.put(ctx, d, cond); err != nil {
		if isConditionalCheckFailed(err) {
			return zero, fmt.Errorf("create %s in %s: %w: %w", m.DocumentID, t.name, ErrAlreadyExists, err)
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
	cond := t.fence(expression.Name(attrVersion).Equal(expression.Value(expected)))
	if t.status && !written.IsZero() {
		// A status deleted and created again behind the writer's cache (a restore, an older
		// term's create over the gap) starts again at version 1: its updateTime tells it from
		// the one read (no ABA). Only the applier writes statuses, in this one encoding.
		cond = cond.And(expression.Name(attrUpdateTime).Equal(expression.Value(written)))
	}
	if err := t.put(ctx, d, cond); err != nil {
		if fenced := t.fencedOut(err); fenced != nil {
			return zero, fmt.Errorf("replace %s in %s: %w: %w", m.DocumentID, t.name, fenced, err)
		}
		if isConditionalCheckFailed(err) {
			return zero, fmt.Errorf("replace %s in %s at version %d: %w: %w", m.DocumentID, t.name, expected, ErrPreconditionFailed, err)
		}
		return zero, err
	}
	return d, nil
}

func (t *Table[T]) put(ctx context.Context, d T, cond expression.ConditionBuilder) error {
	item, err := EncodeItem(d)
	if err != nil {
		return err
	}
	if t.fenced {
		item[attrApplierTerm] = &types.AttributeValueMemberN{Value: strconv.FormatInt(t.term, 10)}
	}
	if t.status {
		// The returned document is what the table holds (the status cache keeps it).
		setShard(d, withShard(item))
	}
	if size := ItemSize(item); size > MaxItemSize {
		return &ItemTooLargeError{Table: t.name, DocumentID: d.Meta().DocumentID, Size: size, Limit: MaxItemSize}
	}
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return fmt.Errorf("build condition: %w", err)
	}
	_, err = t.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: &t.name, Item: item,
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
	if err != nil {
		return fmt.Errorf("put %s into %s: %w", d.Meta().DocumentID, t.name, err)
	}
	return nil
}

// Delete implements ResourceCRUD.
func (t *Table[T]) Delete(ctx context.Context, id string) error {
	expr, err := expression.NewBuilder().WithCondition(t.fence(expression.AttributeExists(expression.Name(attrDocumentID)))).Build()
	if err != nil {
		return fmt.Errorf("build condition: %w", err)
	}
	_, err = t.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &t.name, Key: t.key(id),
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
	if err != nil {
		if fenced := t.fencedOut(err); fenced != nil {
			return fmt.Errorf("delete %s from %s: %w: %w", id, t.name, fenced, err)
		}
		if isConditionalCheckFailed(err) {
			return fmt.Errorf("delete %s from %s: %w", id, t.name, ErrNotFound)
		}
		return fmt.Errorf("delete %s from %s: %w", id, t.name, err)
	}
	return nil
}

func isConditionalCheckFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// KubeApplierDBClient gives typed access to the six tables of one management cluster.
type KubeApplierDBClient struct {
	api     DynamoDBAPI
	prefix  string
	cluster string
}

// NewKubeApplierDBClient returns the clients of the tables of managementCluster; prefix is ""
// in production.
func NewKubeApplierDBClient(api DynamoDBAPI, prefix, managementCluster string) *KubeApplierDBClient {
	return &KubeApplierDBClient{api: api, prefix: prefix, cluster: managementCluster}
}

func (c *KubeApplierDBClient) name(t TableKind, k DesireKind) string {
	return TableName(c.prefix, c.cluster, t, k)
}

// ApplyDesireSpecs returns the read-only client of the ApplyDesire specs table.
func (c *KubeApplierDBClient) ApplyDesireSpecs() SpecReader[*ApplyDesire] {
	return NewTable[*ApplyDesire](c.api, c.name(SpecsTable, KindApplyDesire))
}

// DeleteDesireSpecs returns the read-only client of the DeleteDesire specs table.
func (c *KubeApplierDBClient) DeleteDesireSpecs() SpecReader[*DeleteDesire] {
	return NewTable[*DeleteDesire](c.api, c.name(SpecsTable, KindDeleteDesire))
}

// ReadDesireSpecs returns the read-only client of the ReadDesire specs table.
func (c *KubeApplierDBClient) ReadDesireSpecs() SpecReader[*ReadDesire] {
	return NewTable[*ReadDesire](c.api, c.name(SpecsTable, KindReadDesire))
}

// ApplyDesireStatus returns the client of the ApplyDesire status table.
func (c *KubeApplierDBClient) ApplyDesireStatus() ResourceCRUD[*ApplyDesire] {
	return statusTable(NewTable[*ApplyDesire](c.api, c.name(StatusTable, KindApplyDesire)))
}

// DeleteDesireStatus returns the client of the DeleteDesire status table.
func (c *KubeApplierDBClient) DeleteDesireStatus() ResourceCRUD[*DeleteDesire] {
	return statusTable(NewTable[*DeleteDesire](c.api, c.name(StatusTable, KindDeleteDesire)))
}

// ReadDesireStatus returns the client of the ReadDesire status table.
func (c *KubeApplierDBClient) ReadDesireStatus() ResourceCRUD[*ReadDesire] {
	return statusTable(NewTable[*ReadDesire](c.api, c.name(StatusTable, KindReadDesire)))
}

// TableAdminAPI is the part of *dynamodb.Client EnsureTables uses.
type TableAdminAPI interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// EnsureTables creates the six tables of managementCluster when missing: `documentID` (S) as
// hash key, PAY_PER_REQUEST, Streams NEW_AND_OLD_IMAGES on the specs tables, and on the
// status tables the GSI StatusCheckIndexName of the applier's status check (added to a status
// table that exists without it when api can UpdateTable; else that table's check Scans the
// table). It waits until each table and index is ACTIVE and is idempotent. It returns the
// table names it made. WithStatusIndex adds the status tables' GSI (StatusIndexName) for
// index-poll backends, to existing tables too.
func EnsureTables(ctx context.Context, api TableAdminAPI, prefix, managementCluster string, opts ...TableOption) ([]string, error) {
	var o tableOptions
	for _, opt := range opts {
		opt(&o)
	}
	var created []string
	for _, tk := range []TableKind{SpecsTable, StatusTable} {
		for _, k := range DesireKinds {
			name := TableName(prefix, managementCluster, tk, k)
			in := &dynamodb.CreateTableInput{
				TableName:            aws.String(name),
				AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(attrDocumentID), AttributeType: types.ScalarAttributeTypeS}},
				KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(attrDocumentID), KeyType: types.KeyTypeHash}},
				BillingMode:          types.BillingModePayPerRequest,
			}
			if tk == SpecsTable {
				in.StreamSpecification = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages}
			}
			if tk == StatusTable {
				in.AttributeDefinitions = append(in.AttributeDefinitions, statusIndexAttributes()...)
				in.GlobalSecondaryIndexes = []types.GlobalSecondaryIndex{statusCheckIndex()}
				if o.statusIndex {
					in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, statusIndex())
				}
			}
			_, err := api.CreateTable(ctx, in)
			var inUse *types.ResourceInUseException
			switch {
			case errors.As(err, &inUse):
			case err != nil:
				return created, fmt.Errorf("create table %s: %w", name, err)
			default:
				created = append(created, name)
			}
			w := dynamodb.NewTableExistsWaiter(api)
			if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 2*time.Minute,
				func(o *dynamodb.TableExistsWaiterOptions) {
					o.MinDelay = 100 * time.Millisecond
					o.MaxDelay = time.Second
				}); err != nil {
				return created, fmt.Errorf("wait for table %s: %w", name, err)
			}
			if tk == StatusTable {
				if err := ensureStatusIndexes(ctx, api, name, o.statusIndex); err != nil {
					return created, err
				}
			}
		}
	}
	return created, nil
}
