package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DynamoDBAPI is the part of *dynamodb.Client that Client uses, so a fake can stand in.
type DynamoDBAPI interface {
	ItemGetter
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// Client is a backend's typed access to the tables of one management cluster: it writes specs
// and reads statuses (it never writes a status: the applier alone does). Safe for concurrent
// use; the zero value is not usable: use NewClient.
type Client struct {
	db      DynamoDBAPI
	layout  TableLayout
	cluster string
	// Now returns the time stamped on specs (UTC is taken); time.Now when nil.
	Now func() time.Time
	// PollMin and PollMax bound WaitForStatus's back-off between two reads: it starts at
	// PollMin and doubles up to PollMax. Defaults 100 ms and 2 s.
	PollMin, PollMax time.Duration
	// streams follows status tables' streams (WithStatusStreamsAPI; statusstream.go).
	streams *statusStreams
}

// NewClient returns a Client for the tables "{prefix}mc-{managementCluster}-…" (prefix is ""
// in production), or for those of another layout with WithLayout.
func NewClient(db DynamoDBAPI, prefix, managementCluster string, opts ...ClientOption) *Client {
	c := &Client{db: db, layout: TableLayout{Prefix: prefix}, cluster: managementCluster}
	for _, o := range opts {
		o(c)
	}
	return c
}

// ClientOption changes what NewClient builds.
type ClientOption func(*Client)

// WithLayout makes the Client name its tables by l (its Format, Tables overrides, and
// Prefix when l.Prefix is set; NewClient's prefix otherwise). Check l first
// (TableLayout.Validate): the Client does not, and DynamoDB refuses a bad name on each call.
func WithLayout(l TableLayout) ClientOption {
	return func(c *Client) {
		if l.Prefix == "" {
			l.Prefix = c.layout.Prefix
		}
		l.Tables = maps.Clone(l.Tables) // the caller's map may change later
		c.layout = l
	}
}

// Layout returns the table layout c uses.
func (c *Client) Layout() TableLayout { return c.layout }

// ManagementCluster returns the management cluster whose tables c uses.
func (c *Client) ManagementCluster() string { return c.cluster }

// Heartbeat reads the applier's heartbeat (see ReadHeartbeat): ErrNotFound before a leader
// wrote one.
func (c *Client) Heartbeat(ctx context.Context) (*Heartbeat, error) {
	return ReadHeartbeatFrom(ctx, c.db, c.layout.Name(c.cluster, StatusTable, KindApplyDesire))
}

// ApplyDesires returns the client of the ApplyDesire specs and status tables.
func (c *Client) ApplyDesires() *Desires[*ApplyDesire] { return newDesires[*ApplyDesire](c) }

// DeleteDesires returns the client of the DeleteDesire specs and status tables. The folded
// layout (TableLayout.FoldedDeletes) has none: there a deletion is an ApplyDesire of type
// ApplyTypeDelete, written through ApplyDesires.
func (c *Client) DeleteDesires() *Desires[*DeleteDesire] { return newDesires[*DeleteDesire](c) }

// ReadDesires returns the client of the ReadDesire specs and status tables.
func (c *Client) ReadDesires() *Desires[*ReadDesire] { return newDesires[*ReadDesire](c) }

// Desires writes specs of one kind and reads their statuses. T is *ApplyDesire,
// *DeleteDesire or *ReadDesire.
type Desires[T Desire] struct {
	c             *Client
	specs, status string
}

func newDesires[T Desire](c *Client) *Desires[T] {
	k := NewDesire[T]().Kind()
	return &Desires[T]{c: c, specs: c.layout.Name(c.cluster, SpecsTable, k), status: c.layout.Name(c.cluster, StatusTable, k)}
}

// SpecsTable and StatusTable return the table names (or ARNs, as the layout gives them).
func (t *Desires[T]) SpecsTable() string { return t.specs }

// StatusTable returns the status table's name.
func (t *Desires[T]) StatusTable() string { return t.status }

// clone returns a shallow copy of d: the fields Create and Replace set are the copy's own.
func clone[T Desire](d T) T {
	out := NewDesire[T]()
	reflect.ValueOf(out).Elem().Set(reflect.ValueOf(d).Elem())
	return out
}

func (c *Client) now() time.Time {
	if c.Now != nil {
		return c.Now().UTC().Round(0)
	}
	return time.Now().UTC().Round(0)
}

func key(id string) Item {
	return Item{AttrDocumentID: &types.AttributeValueMemberS{Value: id}}
}

// validate refuses, before any call, a spec the applier could never answer: an empty
// documentID (DynamoDB's ValidationException otherwise), a reserved one (IsReservedID: the
// applier ignores it, so no status would ever come), an ApplyDesire of type ServerSideApply
// whose kubeContent is empty, blank or JSON null (nothing to apply), and what CheckOptions
// refuses (a folded Delete with kubeContent or without targetItem among it). These are the checks the store conformance
// suite of openshift-hyperfleet/hyperfleet-applier (pkg/desire/store/conformance) expects of
// a desire store.
func (t *Desires[T]) validate(op string, d T) error {
	id := d.Meta().DocumentID
	switch {
	case id == "":
		return fmt.Errorf("%s in %s: %w: empty documentID", op, t.specs, ErrInvalidItem)
	case IsReservedID(id):
		return fmt.Errorf("%s %s in %s: %w: documentIDs starting with \"_\" are reserved for the applier", op, id, t.specs, ErrInvalidItem)
	}
	if attr, content := d.content(); attr == AttrSpecKubeContent && !isFoldedDelete(d) {
		if c := bytes.TrimSpace(*content); len(c) == 0 || bytes.Equal(c, []byte("null")) {
			return fmt.Errorf("%s %s in %s: %w: empty kubeContent", op, id, t.specs, ErrInvalidItem)
		}
	}
	// A desire read from an item of a newer backend: EncodeItem writes only the attributes this
	// module knows, so writing it would drop the others (an applyPolicy: ReadOnly would become
	// a write). docs/contract.md, Forward safety.
	if u := d.Common().UnknownAttributes(); len(u) > 0 {
		return fmt.Errorf("%s %s in %s: %w: its spec holds attributes this module does not know (%s); writing it would drop them",
			op, id, t.specs, ErrInvalidItem, strings.Join(u, ", "))
	}
	// An option value the applier would refuse (PreCheckFailed) is refused here, before it is
	// stored.
	if err := CheckOptions(d); err != nil {
		return fmt.Errorf("%s %s in %s: %w", op, id, t.specs, err)
	}
	return nil
}

// isFoldedDelete reports whether d is an ApplyDesire of type Delete, which carries no
// kubeContent (CheckOptions refuses one that does).
func isFoldedDelete(d Desire) bool {
	ad, ok := d.(*ApplyDesire)
	return ok && ad.Spec.IsDelete()
}

// Create writes d as a new spec and returns what was stored: Version 1, CreateTime and
// UpdateTime now (UTC), ManagementCluster the client's when empty, no status (a spec's status
// is never read by the applier). d itself is not changed. Errors: ErrInvalidItem, before any
// call, for an empty or reserved documentID (IsReservedID), an ApplyDesire with an empty
// kubeContent, or a desire decoded with spec attributes this module does not know
// (CommonSpec.UnknownAttributes: writing it would drop them); ErrAlreadyExists when the documentID is taken (delete it first),
// ErrItemTooLarge, the SDK's (all wrapped).
func (t *Desires[T]) Create(ctx context.Context, d T) (T, error) {
	var zero T
	if err := t.validate("create", d); err != nil {
		return zero, err
	}
	d = clone(d)
	d.resetStatus()
	now := t.c.now()
	m := d.Meta()
	m.Version, m.CreateTime, m.UpdateTime = 1, now, now
	if d.Common().ManagementCluster == "" {
		d.Common().ManagementCluster = t.c.cluster
	}
	err := t.put(ctx, d, "attribute_not_exists(#id)", map[string]string{"#id": AttrDocumentID}, nil)
	if isConditionalCheckFailed(err) {
		return zero, fmt.Errorf("create %s in %s: %w: %w", m.DocumentID, t.specs, ErrAlreadyExists, err)
	}
	if err != nil {
		return zero, err
	}
	return d, nil
}

// Replace writes d over the stored spec whose Version is d.Version (optimistic concurrency)
// and returns what was stored: Version + 1, UpdateTime now (and always after d.UpdateTime),
// CreateTime kept with its stored spelling. d itself is not changed. Errors: ErrInvalidItem
// as for Create (before any call), ErrPreconditionFailed when the stored version differs or
// the spec is gone (Get it again), ErrItemTooLarge, the SDK's (all wrapped).
func (t *Desires[T]) Replace(ctx context.Context, d T) (T, error) {
	var zero T
	if err := t.validate("replace", d); err != nil {
		return zero, err
	}
	d = clone(d)
	d.resetStatus()
	m := d.Meta()
	expected := m.Version
	now := t.c.now()
	if !now.After(m.UpdateTime) {
		now = m.UpdateTime.Add(time.Microsecond)
	}
	m.Version, m.UpdateTime = expected+1, now
	if d.Common().ManagementCluster == "" {
		d.Common().ManagementCluster = t.c.cluster
	}
	err := t.put(ctx, d, "#v = :v", map[string]string{"#v": AttrVersion},
		Item{":v": &types.AttributeValueMemberN{Value: strconv.FormatInt(expected, 10)}})
	if isConditionalCheckFailed(err) {
		return zero, fmt.Errorf("replace %s in %s at version %d: %w: %w", m.DocumentID, t.specs, expected, ErrPreconditionFailed, err)
	}
	if err != nil {
		return zero, err
	}
	return d, nil
}

func (t *Desires[T]) put(ctx context.Context, d T, cond string, names map[string]string, values Item) error {
	item, err := EncodeItem(d)
	if err != nil {
		return err
	}
	// The spec index's hash key (SpecIndexName): an index-poll applier finds the spec there.
	shard, _ := StatusShard(d.Meta().DocumentID)
	item[AttrShard] = &types.AttributeValueMemberS{Value: strconv.Itoa(shard)}
	if size := ItemSize(item); size > MaxItemSize {
		return &ItemTooLargeError{Table: t.specs, DocumentID: d.Meta().DocumentID, Size: size, Limit: MaxItemSize}
	}
	_, err = t.c.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &t.specs, Item: item,
		ConditionExpression: &cond, ExpressionAttributeNames: names, ExpressionAttributeValues: values})
	if err != nil {
		return fmt.Errorf("put %s into %s: %w", d.Meta().DocumentID, t.specs, err)
	}
	return nil
}

// Delete deletes the spec id, whatever its version; the applier then deletes its status.
// DeleteIf deletes only the version a backend saw. Errors: ErrInvalidItem for an empty id
// (before any call), ErrNotFound when there is no such spec, the SDK's (wrapped).
func (t *Desires[T]) Delete(ctx context.Context, id string) error {
	if id == "" {
		return fmt.Errorf("delete from %s: %w: empty documentID", t.specs, ErrInvalidItem)
	}
	_, err := t.c.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &t.specs, Key: key(id),
		ConditionExpression: aws.String("attribute_exists(#id)"), ExpressionAttributeNames: map[string]string{"#id": AttrDocumentID}})
	if isConditionalCheckFailed(err) {
		return fmt.Errorf("delete %s from %s: %w", id, t.specs, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("delete %s from %s: %w", id, t.specs, err)
	}
	return nil
}

// DeleteIf deletes the spec id only while its stored Version is version (optimistic
// concurrency, as Replace), so a backend never removes a version it has not seen: one another
// writer replaced in between stays. (A spec deleted and created again restarts at version 1:
// compare its CreateTime too where other writers may re-create the documentID.) The applier then deletes its status. Errors:
// ErrInvalidItem for an empty id (before any call), ErrPreconditionFailed when the stored
// version differs (Get it again), ErrNotFound when there is no such spec, the SDK's (all
// wrapped). One call: DynamoDB returns the stored item with a failed condition
// (ReturnValuesOnConditionCheckFailure), which tells the two refusals apart.
func (t *Desires[T]) DeleteIf(ctx context.Context, id string, version int64) error {
	if id == "" {
		return fmt.Errorf("delete from %s: %w: empty documentID", t.specs, ErrInvalidItem)
	}
	_, err := t.c.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &t.specs, Key: key(id),
		ConditionExpression:                 aws.String("#v = :v"),
		ExpressionAttributeNames:            map[string]string{"#v": AttrVersion},
		ExpressionAttributeValues:           Item{":v": &types.AttributeValueMemberN{Value: strconv.FormatInt(version, 10)}},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf) && len(ccf.Item) == 0:
		return fmt.Errorf("delete %s from %s at version %d: %w", id, t.specs, version, ErrNotFound)
	case errors.As(err, &ccf):
		return fmt.Errorf("delete %s from %s at version %d (stored: %s): %w: %w", id, t.specs, version,
			storedVersion(ccf.Item), ErrPreconditionFailed, err)
	case err != nil:
		return fmt.Errorf("delete %s from %s at version %d: %w", id, t.specs, version, err)
	}
	return nil
}

// storedVersion is the version attribute of item as stored, for an error message.
func storedVersion(item Item) string {
	if n, ok := item[AttrVersion].(*types.AttributeValueMemberN); ok {
		return n.Value
	}
	return "none"
}

// Get returns the spec id (a consistent read). Errors: ErrNotFound, ErrInvalidItem, the SDK's.
func (t *Desires[T]) Get(ctx context.Context, id string) (T, error) { return t.get(ctx, t.specs, id) }

// Status returns the status of id (a consistent read). Errors: ErrNotFound (no status yet, or
// the spec was deleted and the applier removed it), ErrInvalidItem, the SDK's.
func (t *Desires[T]) Status(ctx context.Context, id string) (T, error) {
	return t.get(ctx, t.status, id)
}

func (t *Desires[T]) get(ctx context.Context, table, id string) (T, error) {
	var zero T
	out, err := t.c.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, Key: key(id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return zero, fmt.Errorf("get %s from %s: %w", id, table, err)
	}
	if len(out.Item) == 0 {
		return zero, fmt.Errorf("get %s from %s: %w", id, table, ErrNotFound)
	}
	d := NewDesire[T]()
	if err := DecodeItem(out.Item, d); err != nil {
		return zero, fmt.Errorf("get %s from %s: %w", id, table, err)
	}
	return d, nil
}

// Answers reports whether status answers spec as it is now: the same documentID, conditions
// computed from spec's Version, and observedDesireUpdateTime and observedDesireCreateTime
// equal, as strings, to the spec item's updateTime and createTime (the applier echoes them
// byte for byte; the createTime tells a spec deleted and created again apart). Whatever the
// verdict: read the Successful condition for it.
func Answers(spec, status Desire) bool {
	sm, st := spec.Meta(), status.StatusCommon()
	created, updated := sm.StoredTimes()
	return status.Meta().DocumentID == sm.DocumentID && len(st.Conditions) > 0 &&
		st.ObservedSpecVersion() == sm.Version &&
		st.ObservedDesireUpdateTime == updated && st.ObservedDesireCreateTime == created
}

// WaitForStatus reads the status of spec until it answers spec as it is now (Answers), and
// returns it, whatever its verdict. Between reads it backs off from PollMin to PollMax. A
// status that answers an older version, or none yet, is waited out. With
// WithStatusStreamsAPI and a status table that has a stream, it reads the status once and
// then follows the stream instead of polling (statusstream.go). Errors: ctx's
// (context.DeadlineExceeded, context.Canceled) wrapped with what was last seen, or a read
// error other than ErrNotFound.
func (t *Desires[T]) WaitForStatus(ctx context.Context, spec T) (T, error) {
	var zero T
	if st, done, err := waitForStatusStream(ctx, t, spec); done {
		return st, err
	}
	lo, hi := t.c.PollMin, t.c.PollMax
	if lo <= 0 {
		lo = 100 * time.Millisecond
	}
	if hi < lo {
		hi = max(lo, 2*time.Second)
	}
	last := "no status"
	for wait := lo; ; wait = min(2*wait, hi) {
		st, err := t.Status(ctx, spec.Meta().DocumentID)
		switch {
		case err == nil && Answers(spec, st):
			return st, nil
		case err == nil:
			last = fmt.Sprintf("a status answering version %d (updateTime %q)", st.StatusCommon().ObservedSpecVersion(),
				st.StatusCommon().ObservedDesireUpdateTime)
		case !errors.Is(err, ErrNotFound) && ctx.Err() == nil:
			return zero, err
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return zero, fmt.Errorf("wait for the status of %s version %d in %s (last seen: %s): %w",
				spec.Meta().DocumentID, spec.Meta().Version, t.status, last, ctx.Err())
		case <-timer.C:
		}
	}
}

// StatusesSince returns the statuses of this kind written after since, through the status
// index (StatusIndexName) as an index-poll backend reads it: for each shard "0".."3" a Query
// `shard = :s AND updateTime > :since` with :s a string and :since RFC 3339 in whole seconds,
// one second early (RFC 3339 strings sort by time except inside one second), then only items
// whose updateTime is after since are kept. Reserved documents are skipped. Items that do not
// decode are left out and reported in the joined error beside the good ones. The tables need
// the index (EnsureTables with WithStatusIndex); the index is eventually consistent.
func (t *Desires[T]) StatusesSince(ctx context.Context, since time.Time) ([]T, error) {
	var (
		out []T
		bad []error
	)
	from := since.UTC().Truncate(time.Second).Add(-time.Second).Format(time.RFC3339)
	for shard := range StatusShards {
		in := &dynamodb.QueryInput{TableName: &t.status, IndexName: aws.String(StatusIndexName),
			KeyConditionExpression:   aws.String("#s = :s AND #u > :since"),
			ExpressionAttributeNames: map[string]string{"#s": AttrShard, "#u": AttrUpdateTime},
			ExpressionAttributeValues: Item{":s": &types.AttributeValueMemberS{Value: strconv.Itoa(shard)},
				":since": &types.AttributeValueMemberS{Value: from}}}
		for {
			page, err := t.c.db.Query(ctx, in)
			if err != nil {
				return out, fmt.Errorf("query %s of %s, shard %d: %w", StatusIndexName, t.status, shard, err)
			}
			for _, item := range page.Items {
				if IsReservedID(IDOf(item)) {
					continue
				}
				d := NewDesire[T]()
				if err := DecodeItem(item, d); err != nil {
					bad = append(bad, err)
					continue
				}
				if d.Meta().UpdateTime.After(since) {
					out = append(out, d)
				}
			}
			if len(page.LastEvaluatedKey) == 0 {
				break
			}
			in.ExclusiveStartKey = page.LastEvaluatedKey
		}
	}
	return out, errors.Join(bad...)
}

func isConditionalCheckFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}
