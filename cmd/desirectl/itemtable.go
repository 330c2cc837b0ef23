package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// dynamoDB is the part of *dynamodb.Client desirectl's tables use, so a fake can stand in.
// Table administration (api.TableAdminAPI, tableDeleter) is asked of it with a type assertion.
type dynamoDB interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// itemTable reads and writes the desires of one table in the api module's item layout
// (api.EncodeItem, docs/contract.md), as the applier's own table client does for the
// unfenced writes of a specs table. It is desirectl's instead of api.Client's Desires because
// desirectl lists whole tables (a Scan, which api.Client has no call for) and writes specs
// the way it always did (no api.Client checks or defaults).
type itemTable[T api.Desire] struct {
	db   dynamoDB
	name string
}

func newItemTable[T api.Desire](db dynamoDB, name string) *itemTable[T] {
	return &itemTable[T]{db: db, name: name}
}

func (t *itemTable[T]) key(id string) api.Item {
	return api.Item{api.AttrDocumentID: &types.AttributeValueMemberS{Value: id}}
}

// Get returns the desire id (a consistent read); an error wrapping api.ErrNotFound when there
// is none, api.ErrInvalidItem when it does not decode.
func (t *itemTable[T]) Get(ctx context.Context, id string) (T, error) {
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

// scanPageLimit caps the items of one Scan page, as the applier's Scans do: DynamoDB Local,
// asked for a page without a Limit, reads the rest of the table for each one (quadratic).
const scanPageLimit = 1000

// List returns every desire of the table (a paged, consistent Scan). Items that do not decode are left
// out and returned in the joined error beside the good ones, so one bad document cannot hide
// the others.
func (t *itemTable[T]) List(ctx context.Context) ([]T, error) {
	var (
		out []T
		bad []error
	)
	in := &dynamodb.ScanInput{TableName: &t.name, ConsistentRead: aws.Bool(true), Limit: aws.Int32(scanPageLimit)}
	for {
		page, err := t.db.Scan(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", t.name, err)
		}
		for _, item := range page.Items {
			d := api.NewDesire[T]()
			if err := api.DecodeItem(item, d); err != nil {
				bad = append(bad, err)
				continue
			}
			out = append(out, d)
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, errors.Join(bad...)
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// Create stores d with Version 1 and CreateTime = UpdateTime = now; api.ErrAlreadyExists when
// the documentID is taken, api.ErrItemTooLarge over 400 KB.
func (t *itemTable[T]) Create(ctx context.Context, d T) (T, error) {
	var zero T
	d = d.DeepCopyDesire().(T)
	now := time.Now().UTC().Round(0)
	m := d.Meta()
	m.Version, m.CreateTime, m.UpdateTime = 1, now, now
	err := t.put(ctx, d, expression.AttributeNotExists(expression.Name(api.AttrDocumentID)))
	if isConditionalCheckFailed(err) {
		return zero, fmt.Errorf("create %s in %s: %w: %w", m.DocumentID, t.name, api.ErrAlreadyExists, err)
	}
	if err != nil {
		return zero, err
	}
	return d, nil
}

// Replace stores d if the stored Version still equals d's, with Version+1 and UpdateTime =
// now; api.ErrPreconditionFailed when stale or deleted, api.ErrItemTooLarge over 400 KB.
func (t *itemTable[T]) Replace(ctx context.Context, d T) (T, error) {
	var zero T
	d = d.DeepCopyDesire().(T)
	m := d.Meta()
	expected := m.Version
	m.Version++
	m.UpdateTime = time.Now().UTC().Round(0)
	err := t.put(ctx, d, expression.Name(api.AttrVersion).Equal(expression.Value(expected)))
	if isConditionalCheckFailed(err) {
		return zero, fmt.Errorf("replace %s in %s at version %d: %w: %w", m.DocumentID, t.name, expected, api.ErrPreconditionFailed, err)
	}
	if err != nil {
		return zero, err
	}
	return d, nil
}

func (t *itemTable[T]) put(ctx context.Context, d T, cond expression.ConditionBuilder) error {
	item, err := api.EncodeItem(d)
	if err != nil {
		return err
	}
	if size := api.ItemSize(item); size > api.MaxItemSize {
		return &api.ItemTooLargeError{Table: t.name, DocumentID: d.Meta().DocumentID, Size: size, Limit: api.MaxItemSize}
	}
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return fmt.Errorf("build condition: %w", err)
	}
	_, err = t.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &t.name, Item: item,
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values()})
	if err != nil {
		return fmt.Errorf("put %s into %s: %w", d.Meta().DocumentID, t.name, err)
	}
	return nil
}

// Delete removes the desire id; api.ErrNotFound when there is none.
func (t *itemTable[T]) Delete(ctx context.Context, id string) error {
	expr, err := expression.NewBuilder().WithCondition(expression.AttributeExists(expression.Name(api.AttrDocumentID))).Build()
	if err != nil {
		return fmt.Errorf("build condition: %w", err)
	}
	_, err = t.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &t.name, Key: t.key(id),
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values()})
	if isConditionalCheckFailed(err) {
		return fmt.Errorf("delete %s from %s: %w", id, t.name, api.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("delete %s from %s: %w", id, t.name, err)
	}
	return nil
}

func isConditionalCheckFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}
