package kubeapplier

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
)

// The leadership term: every rule that fences the applier's writes lives here.
//
// A term's number is taken from DynamoDB itself at the start of every term, in both run modes
// (its own Lease, or a controller-runtime manager's election): a conditional PutItem of the
// heartbeat document raises its applierTerm by one (takeTerm). It only grows, whatever
// happens to a Lease (deleted, renamed, restored: client-go re-creates it with 0 transitions).
// Every status write carries it and is refused by DynamoDB over an item of a newer term; the
// heartbeat too. A replica whose write meets a newer term ends its term (term.lost).
//
// Where a Lease is known (the applier's own, or the manager's one it follows), a term is also
// valid only while that Lease cannot have passed to another process: no write and no cluster
// change starts after, and none runs past the Lease's expiry (term.callContext).

// errNewerTerm: a write met an item of a newer term in DynamoDB. Another replica leads now;
// this one ends its term. It is an errFenced; newerTermError carries the term met.
var errNewerTerm = fmt.Errorf("%w: a newer leadership term began in DynamoDB", errFenced)

// newerTermError is errNewerTerm with the newer term met, stored on the item written.
type newerTermError struct{ stored int64 }

func (e *newerTermError) Error() string {
	return fmt.Sprintf("the item belongs to leadership term %d: %v", e.stored, errNewerTerm)
}

// Is makes it errNewerTerm and errFenced.
func (e *newerTermError) Is(target error) bool { return target == errNewerTerm || target == errFenced }

// newerTermOf returns the newer term an error met, 0 when none.
func newerTermOf(err error) int64 {
	var n *newerTermError
	if errors.As(err, &n) {
		return n.stored
	}
	return 0
}

// term is a leadership term as the controllers, the status writers and the heartbeat see it.
type term struct {
	// number is the term taken from DynamoDB (takeTerm); 0 only in tests of parts that run
	// without one (status writes then carry no applierTerm and are not fenced).
	number int64
	// leader is the identity of the Lease holder leading (the heartbeat's leader), and start
	// when the term was taken.
	leader string
	start  time.Time
	// valid reports whether a call started now still ends before the Lease could pass to
	// another process; nil: no Lease is known (fencing in DynamoDB only).
	valid func() bool
	// expiry returns the instant by which every call of the term must have ended (the Lease's
	// earliest expiry, less a safety margin); nil or zero: none known.
	expiry func() time.Time
	// callTimeout bounds each status read or write.
	callTimeout time.Duration
	// lost ends the term: a write met a newer term. nil: nothing to end (tests).
	lost func(error)
}

// unelected is the term of parts run on their own in tests: no number, no Lease.
var unelected = term{callTimeout: defaultCallTimeout}

// callContext returns ctx bounded by timeout and by the term's expiry, or errFenced when the
// term may be over: a call that could land after another process began leading never starts.
func (t term) callContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc, error) {
	if t.valid != nil && !t.valid() {
		return nil, nil, fmt.Errorf("term %d: the lease may have passed to another process: %w", t.number, errFenced)
	}
	if timeout <= 0 {
		timeout = defaultCallTimeout
	}
	now := time.Now()
	deadline := now.Add(timeout)
	if t.expiry != nil {
		if e := t.expiry(); !e.IsZero() && e.Before(deadline) {
			deadline = e
		}
	}
	if !deadline.After(now) {
		return nil, nil, fmt.Errorf("term %d: the lease may expire before a call could end: %w", t.number, errFenced)
	}
	cctx, cancel := context.WithDeadline(ctx, deadline)
	return cctx, cancel, nil
}

// do runs one status call within the term: errFenced without calling when the term may be
// over; else call under the term's call deadline. A call that met a newer term ends the term.
func (t term) do(ctx context.Context, call func(context.Context) error) error {
	cctx, cancel, err := t.callContext(ctx, t.callTimeout)
	if err != nil {
		return err
	}
	defer cancel()
	err = call(cctx)
	t.met(err)
	return err
}

// met ends the term when err says a newer term wrote.
func (t term) met(err error) {
	if t.lost != nil && errors.Is(err, errNewerTerm) {
		t.lost(err)
	}
}

// termKey carries the term of a reconcile in its context, so every cluster mutation it makes
// is checked against the term and bounded by its expiry (see deadlineKube).
type termKey struct{}

// withTerm returns ctx carrying t.
func withTerm(ctx context.Context, t term) context.Context {
	return context.WithValue(ctx, termKey{}, t)
}

// termOfContext returns the term ctx carries; without one, a term without a Lease.
func termOfContext(ctx context.Context) term {
	t, _ := ctx.Value(termKey{}).(term)
	return t
}

// termValid returns errFenced when ctx carries a term that may be over: a leader that may have
// lost its lease does not change the cluster any more than it writes a status.
func termValid(ctx context.Context) error {
	_, cancel, err := termOfContext(ctx).callContext(ctx, time.Second)
	if cancel != nil {
		cancel()
	}
	return err
}

// takeTermAttempts bounds the conditional puts of one takeTerm (each conflict means another
// replica took a term at the same moment).
const takeTermAttempts = 5

// takeTerm takes the next leadership term in DynamoDB: it reads the heartbeat document
// (HeartbeatID, a consistent GetItem) and puts hb there with applierTerm one above both the
// stored term and floor (the newest term this process met), conditional on the stored term
// being unchanged. When the heartbeat holds no term (deleted by an operator, a restored or new
// table), seed (when set) gives the newest term the statuses carry, so the new term is above
// theirs too. hb's Kinds should say nothing yet: the new term has observed nothing. It uses
// only GetItem, Scan and PutItem, which the example IAM policy grants on status tables.
// Returns the heartbeat as written; an error when DynamoDB fails or keeps conflicting.
func takeTerm(ctx context.Context, api DynamoDBAPI, table string, hb Heartbeat, floor int64, seed func(context.Context) (int64, error)) (Heartbeat, error) {
	key := map[string]types.AttributeValue{attrDocumentID: &types.AttributeValueMemberS{Value: HeartbeatID}}
	for range takeTermAttempts {
		out, err := api.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return hb, fmt.Errorf("read the term in %s: %w", table, err)
		}
		stored, exists, err := storedTerm(out.Item)
		if err != nil {
			return hb, fmt.Errorf("read the term in %s: %w", table, err)
		}
		if stored == 0 && seed != nil {
			seeded, err := seed(ctx)
			if err != nil {
				return hb, fmt.Errorf("no term in %s; reading the statuses' terms: %w", table, err)
			}
			floor = max(floor, seeded)
		}
		hb.Term = max(stored, floor) + 1
		item, err := attributevalue.MarshalMap(hb)
		if err != nil {
			return hb, fmt.Errorf("encode heartbeat: %w", err)
		}
		item[attrDocumentID] = key[attrDocumentID]
		name := expression.Name(attrApplierTerm)
		cond := expression.AttributeNotExists(expression.Name(attrDocumentID))
		if exists {
			cond = name.Equal(expression.Value(stored))
			if _, ok := out.Item[attrApplierTerm]; !ok {
				cond = expression.AttributeNotExists(name)
			}
		}
		expr, err := expression.NewBuilder().WithCondition(cond).Build()
		if err != nil {
			return hb, fmt.Errorf("build condition: %w", err)
		}
		_, err = api.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: item, ConditionExpression: expr.Condition(),
			ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values()})
		if err == nil {
			return hb, nil
		}
		if !isConditionalCheckFailed(err) {
			return hb, fmt.Errorf("take term %d in %s: %w", hb.Term, table, err)
		}
	}
	return hb, fmt.Errorf("take a term in %s: another replica kept taking one (%d attempts): %w", table, takeTermAttempts, ErrPreconditionFailed)
}

// storedTerm is the applierTerm of a heartbeat item (0 without one). An item whose
// applierTerm is not a number cannot be fenced against: an error.
func storedTerm(item map[string]types.AttributeValue) (int64, bool, error) {
	if len(item) == 0 {
		return 0, false, nil
	}
	v, ok := item[attrApplierTerm]
	if !ok {
		return 0, true, nil
	}
	n, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		return 0, true, fmt.Errorf("%w: %s has an applierTerm that is not a number", ErrInvalidItem, HeartbeatID)
	}
	stored, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return 0, true, fmt.Errorf("%w: %s applierTerm %q: %w", ErrInvalidItem, HeartbeatID, n.Value, err)
	}
	return stored, true, nil
}

// newestStatusTerm returns the newest applierTerm any item of tables carries (a Scan of each,
// projected on documentID and applierTerm; 0 for none): the floor of a term taken where the
// heartbeat holds none.
func newestStatusTerm(ctx context.Context, api DynamoDBAPI, tables []string) (int64, error) {
	var newest int64
	for _, table := range tables {
		expr, err := expression.NewBuilder().WithProjection(expression.NamesList(expression.Name(attrDocumentID), expression.Name(attrApplierTerm))).Build()
		if err != nil {
			return 0, fmt.Errorf("build projection: %w", err)
		}
		err = scanItems(ctx, api, dynamodb.ScanInput{TableName: aws.String(table), ProjectionExpression: expr.Projection(),
			ExpressionAttributeNames: expr.Names()}, func(item map[string]types.AttributeValue) {
			if n, ok := item[attrApplierTerm].(*types.AttributeValueMemberN); ok {
				if v, err := strconv.ParseInt(n.Value, 10, 64); err == nil {
					newest = max(newest, v)
				}
			}
		})
		if err != nil {
			return 0, err
		}
	}
	return newest, nil
}
