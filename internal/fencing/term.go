// Package fencing is the leadership term: every rule that fences the applier's writes and
// cluster changes — the term's number taken in DynamoDB (Take), the condition each status write
// carries (Fence, NewerInItem), and a term's validity and deadlines where a Lease is known
// (Term.CallContext).
//
// A term's number is taken from DynamoDB itself at the start of every term, in both run modes
// (its own Lease, or a controller-runtime manager's election): a conditional PutItem of the
// heartbeat document raises its applierTerm by one (Take). It only grows, whatever
// happens to a Lease (deleted, renamed, restored: client-go re-creates it with 0 transitions).
// Every status write carries it and is refused by DynamoDB over an item of a newer term; the
// heartbeat too. A replica whose write meets a newer term ends its term (Term.Lost).
//
// Where a Lease is known (the applier's own, or the manager's one it follows), a term is also
// valid only while that Lease cannot have passed to another process: no write and no cluster
// change starts after, and none runs past the Lease's expiry (Term.CallContext).
package fencing

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/awscall"
)

// Scan reads every item of in's table, page by page, calling each for every item.
type Scan func(ctx context.Context, in dynamodb.ScanInput, each func(map[string]types.AttributeValue)) error

// fallbackCallTimeout bounds a call whose term names no CallTimeout (Options.CallTimeout's
// default).
const fallbackCallTimeout = 10 * time.Second

// ErrFenced: a status write was refused because a newer leadership term owns the status (the
// stored item's applierTerm is newer, see Fence), or because this process's lease may already
// have passed to another process. The term that got it must stop writing.
var ErrFenced = errors.New("status owned by a newer leadership term")

// ErrNewerTerm: a write met an item of a newer term in DynamoDB. Another replica leads now;
// this one ends its term. It is an ErrFenced; NewerTermError carries the term met.
var ErrNewerTerm = fmt.Errorf("%w: a newer leadership term began in DynamoDB", ErrFenced)

// NewerTermError is ErrNewerTerm with the newer term met, stored on the item written.
type NewerTermError struct{ Stored int64 }

func (e *NewerTermError) Error() string {
	return fmt.Sprintf("the item belongs to leadership term %d: %v", e.Stored, ErrNewerTerm)
}

// Is makes it ErrNewerTerm and ErrFenced.
func (e *NewerTermError) Is(target error) bool { return target == ErrNewerTerm || target == ErrFenced }

// NewerTermOf returns the newer term an error met, 0 when none.
func NewerTermOf(err error) int64 {
	var n *NewerTermError
	if errors.As(err, &n) {
		return n.Stored
	}
	return 0
}

// Term is a leadership term as the controllers, the status writers and the heartbeat see it.
type Term struct {
	// Number is the term taken from DynamoDB (Take); 0 only in tests of parts that run
	// without one (status writes then carry no applierTerm and are not fenced).
	Number int64
	// Leader is the identity of the Lease holder leading (the heartbeat's leader), and Start
	// when the term was taken.
	Leader string
	Start  time.Time
	// Valid reports whether a call started now still ends before the Lease could pass to
	// another process; nil: no Lease is known (fencing in DynamoDB only).
	Valid func() bool
	// Expiry returns the instant by which every call of the term must have ended (the Lease's
	// earliest expiry, less a safety margin); nil or zero: none known.
	Expiry func() time.Time
	// CallTimeout bounds each status read or write.
	CallTimeout time.Duration
	// Lost ends the term: a write met a newer term. nil: nothing to end (tests).
	Lost func(error)
}

// CallContext returns ctx bounded by timeout and by the term's expiry, or ErrFenced when the
// term may be over: a call that could land after another process began leading never starts.
func (t Term) CallContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc, error) {
	if t.Valid != nil && !t.Valid() {
		return nil, nil, fmt.Errorf("term %d: the lease may have passed to another process: %w", t.Number, ErrFenced)
	}
	if timeout <= 0 {
		timeout = fallbackCallTimeout
	}
	now := time.Now()
	deadline := now.Add(timeout)
	if t.Expiry != nil {
		if e := t.Expiry(); !e.IsZero() && e.Before(deadline) {
			deadline = e
		}
	}
	if !deadline.After(now) {
		return nil, nil, fmt.Errorf("term %d: the lease may expire before a call could end: %w", t.Number, ErrFenced)
	}
	cctx, cancel := context.WithDeadline(ctx, deadline)
	return cctx, cancel, nil
}

// Do runs one status call within the term: ErrFenced without calling when the term may be
// over; else call under the term's call deadline. A call that met a newer term ends the term.
func (t Term) Do(ctx context.Context, call func(context.Context) error) error {
	cctx, cancel, err := t.CallContext(ctx, t.CallTimeout)
	if err != nil {
		return err
	}
	defer cancel()
	err = call(cctx)
	t.met(err)
	return err
}

// met ends the term when err says a newer term wrote.
func (t Term) met(err error) {
	if t.Lost != nil && errors.Is(err, ErrNewerTerm) {
		t.Lost(err)
	}
}

// takeTermAttempts bounds the conditional puts of one takeTerm (each conflict means another
// replica took a term at the same moment).
const takeTermAttempts = 5

// Taken is the heartbeat a Take wrote.
type Taken struct {
	api.Heartbeat
	// Repaired is the applierTerm Take wrote over because it was no number (as DynamoDB
	// returned it, e.g. `S "x"` or `N 1e40`); "" when the stored term was readable.
	Repaired string
}

// Take takes the next leadership term in DynamoDB: it reads the heartbeat document
// (api.HeartbeatID, a consistent GetItem) and puts hb there with applierTerm one above both the
// stored term and floor (the newest term this process met), conditional on the stored term
// being unchanged. Whatever the heartbeat holds — a term, none (deleted by an operator, a new
// table), an older one (restored to an earlier point in time), or one that is no number —
// seed (when set) gives the newest term the statuses carry, so the new term is above theirs
// too and never reuses a term a status was written with; a garbled term is written over only
// while it holds exactly the value read (Taken.Repaired names it). hb's Kinds
// should say nothing yet: the new term has observed nothing. It uses only GetItem, Scan and
// PutItem, which the example IAM policy grants on status tables. Returns the heartbeat as
// written; an error when DynamoDB fails or keeps conflicting (api.ErrPreconditionFailed).
//
// A status written by a newer term after seed read (a live leader's, a stray's) makes the term
// meet that newer term at its first write over it; LiveHolder then tells the caller whether a
// live leader holds it, or a term above it is taken (floor).
func Take(ctx context.Context, db awscall.DynamoDB, table string, hb api.Heartbeat, floor int64, seed func(context.Context) (int64, error)) (Taken, error) {
	key := map[string]types.AttributeValue{api.AttrDocumentID: &types.AttributeValueMemberS{Value: api.HeartbeatID}}
	for range takeTermAttempts {
		out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return Taken{Heartbeat: hb}, fmt.Errorf("read the term in %s: %w", table, err)
		}
		stored, exists, err := Stored(out.Item)
		garbled := err != nil
		if seed != nil {
			seeded, err := seed(ctx)
			if err != nil {
				return Taken{Heartbeat: hb}, fmt.Errorf("reading the statuses' terms for a term in %s: %w", table, err)
			}
			floor = max(floor, seeded)
		}
		hb.ApplierTerm = max(stored, floor) + 1
		item, err := attributevalue.MarshalMap(hb)
		if err != nil {
			return Taken{Heartbeat: hb}, fmt.Errorf("encode heartbeat: %w", err)
		}
		item[api.AttrDocumentID] = key[api.AttrDocumentID]
		in := &dynamodb.PutItemInput{TableName: &table, Item: item}
		taken := Taken{Heartbeat: hb}
		switch {
		case garbled:
			// Over exactly the value read: a replica that repaired it a moment ago wins.
			bad := out.Item[api.AttrApplierTerm]
			taken.Repaired = describeValue(bad)
			in.ConditionExpression = aws.String("#t = :bad")
			in.ExpressionAttributeNames = map[string]string{"#t": api.AttrApplierTerm}
			in.ExpressionAttributeValues = map[string]types.AttributeValue{":bad": bad}
		default:
			name := expression.Name(api.AttrApplierTerm)
			cond := expression.AttributeNotExists(expression.Name(api.AttrDocumentID))
			if exists {
				cond = name.Equal(expression.Value(stored))
				if _, ok := out.Item[api.AttrApplierTerm]; !ok {
					cond = expression.AttributeNotExists(name)
				}
			}
			expr, err := expression.NewBuilder().WithCondition(cond).Build()
			if err != nil {
				return taken, fmt.Errorf("build condition: %w", err)
			}
			in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = expr.Condition(), expr.Names(), expr.Values()
		}
		_, err = db.PutItem(ctx, in)
		if err == nil {
			return taken, nil
		}
		if !conditionalCheckFailed(err) {
			return taken, fmt.Errorf("take term %d in %s: %w", hb.ApplierTerm, table, err)
		}
	}
	return Taken{Heartbeat: hb}, fmt.Errorf("take a term in %s: another replica kept taking one (%d attempts): %w", table, takeTermAttempts, api.ErrPreconditionFailed)
}

// describeValue renders a stored attribute value for a log line (type and value, bounded).
func describeValue(v types.AttributeValue) string {
	var s string
	switch v := v.(type) {
	case *types.AttributeValueMemberN:
		s = "N " + v.Value
	case *types.AttributeValueMemberS:
		s = "S " + strconv.Quote(v.Value)
	default:
		s = fmt.Sprintf("%T", v)
	}
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return s
}

// Stored is the applierTerm of a heartbeat item (0 without one). An item whose
// applierTerm is not a number cannot be fenced against: an error wrapping api.ErrInvalidItem
// (Take writes over it).
func Stored(item map[string]types.AttributeValue) (int64, bool, error) {
	if len(item) == 0 {
		return 0, false, nil
	}
	v, ok := item[api.AttrApplierTerm]
	if !ok {
		return 0, true, nil
	}
	n, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		return 0, true, fmt.Errorf("%w: %s has an applierTerm that is not a number", api.ErrInvalidItem, api.HeartbeatID)
	}
	stored, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return 0, true, fmt.Errorf("%w: %s applierTerm %q: %w", api.ErrInvalidItem, api.HeartbeatID, n.Value, err)
	}
	return stored, true, nil
}

// LiveHolder reads the heartbeat (a consistent GetItem of api.HeartbeatID in table) and
// returns it when a live leader holds a term at or above met, the newer term a write of this
// process met: the heartbeat names such a term, and it is not overdue at now (api.Heartbeat's
// Overdue, with grace: a leader rewrites it at least every keepalive). nil when no live leader
// holds it: the heartbeat names an older term (a table restored to an earlier point in time,
// a stray write of a term nobody took), says its leader stopped, or is overdue or unreadable;
// a term above met may then be taken. Errors are DynamoDB's (wrapped): the caller cannot tell.
func LiveHolder(ctx context.Context, db awscall.DynamoDB, table string, met int64, now time.Time, grace time.Duration) (*api.Heartbeat, error) {
	key := map[string]types.AttributeValue{api.AttrDocumentID: &types.AttributeValueMemberS{Value: api.HeartbeatID}}
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("read the heartbeat in %s: %w", table, err)
	}
	stored, _, err := Stored(out.Item)
	if err != nil || stored < met {
		return nil, nil
	}
	var hb api.Heartbeat
	if err := attributevalue.UnmarshalMap(out.Item, &hb); err != nil || hb.Overdue(now, grace) || hb.Stopped != nil {
		return nil, nil // (a leader that said it stopped holds nothing)
	}
	return &hb, nil
}

// NewestStatus returns the newest applierTerm any item of tables carries (0 for none): the
// floor of every term taken. Each table is read through its narrow GSI
// api.StatusCheckIndexName, which projects applierTerm (billed by its ~200-byte index items,
// not by the statuses, which may hold 400 KB objects), or, when that Scan fails (no such
// index, or not ACTIVE yet), by a Scan of the table projected on applierTerm. The index is
// eventually consistent: a status written in the last second may be missing, which the write
// fence covers (a term that meets a newer one takes a term above it).
func NewestStatus(ctx context.Context, scan Scan, tables []string) (int64, error) {
	var newest int64
	expr, err := expression.NewBuilder().WithProjection(expression.NamesList(expression.Name(api.AttrDocumentID), expression.Name(api.AttrApplierTerm))).Build()
	if err != nil {
		return 0, fmt.Errorf("build projection: %w", err)
	}
	each := func(item map[string]types.AttributeValue) {
		if n, ok := item[api.AttrApplierTerm].(*types.AttributeValueMemberN); ok {
			if v, err := strconv.ParseInt(n.Value, 10, 64); err == nil {
				newest = max(newest, v)
			}
		}
	}
	for _, table := range tables {
		in := dynamodb.ScanInput{TableName: aws.String(table), ProjectionExpression: expr.Projection(), ExpressionAttributeNames: expr.Names()}
		indexed := in
		indexed.IndexName = aws.String(api.StatusCheckIndexName)
		if err := scan(ctx, indexed, each); err == nil {
			continue
		}
		if err := scan(ctx, in, each); err != nil {
			return 0, err
		}
	}
	return newest, nil
}

// Condition is the condition every write of term carries: the stored item has no applierTerm
// or one not newer than term, so DynamoDB itself refuses a write of an older term over an
// item of a newer one.
func Condition(term int64) expression.ConditionBuilder {
	name := expression.Name(api.AttrApplierTerm)
	return expression.Or(expression.AttributeNotExists(name), name.LessThanEqual(expression.Value(term)))
}

// Fence returns cond AND Condition(term).
func Fence(cond expression.ConditionBuilder, term int64) expression.ConditionBuilder {
	return cond.And(Condition(term))
}

// NewerInItem returns a *NewerTermError when item's applierTerm is newer than term, else nil.
func NewerInItem(item map[string]types.AttributeValue, term int64) error {
	n, ok := item[api.AttrApplierTerm].(*types.AttributeValueMemberN)
	if !ok {
		return nil
	}
	stored, perr := strconv.ParseInt(n.Value, 10, 64)
	if perr != nil || stored <= term {
		return nil
	}
	return &NewerTermError{Stored: stored}
}

// conditionalCheckFailed reports whether DynamoDB refused a write for its condition.
func conditionalCheckFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}
