package kubeapplier

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Every call to DynamoDB, DynamoDB Streams and the kube-apiserver gets a deadline
// (Options.CallTimeout): a hung call cannot hold a reconcile, a term or a shutdown for ever.
// These wrappers put it on whatever client Options holds, the caller's own included; the
// cluster's wrapper also refuses mutations of a term that may be over (errFenced) and ends
// each within the term's expiry (term.go), so none lands after another process may lead.

type deadlineDynamoDB struct {
	api     DynamoDBAPI
	timeout time.Duration
}

func (d deadlineDynamoDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	return d.api.GetItem(ctx, in, opts...)
}

func (d deadlineDynamoDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	return d.api.PutItem(ctx, in, opts...)
}

func (d deadlineDynamoDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	return d.api.DeleteItem(ctx, in, opts...)
}

func (d deadlineDynamoDB) Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	return d.api.Scan(ctx, in, opts...)
}

type deadlineStreams struct {
	api     StreamsAPI
	timeout time.Duration
}

func (d deadlineStreams) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	return d.api.DescribeTable(ctx, in, opts...)
}

func (d deadlineStreams) DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	return d.api.DescribeStream(ctx, in, opts...)
}

func (d deadlineStreams) GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	return d.api.GetShardIterator(ctx, in, opts...)
}

func (d deadlineStreams) GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	return d.api.GetRecords(ctx, in, opts...)
}

type deadlineKube struct {
	kube    KubeClient
	timeout time.Duration
}

func (d deadlineKube) Apply(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, fieldManager string) (*unstructured.Unstructured, error) {
	ctx, cancel, err := termOfContext(ctx).callContext(ctx, d.timeout)
	if err != nil {
		return nil, err
	}
	defer cancel()
	return d.kube.Apply(ctx, gvr, obj, fieldManager)
}

func (d deadlineKube) Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	return d.kube.Get(ctx, gvr, namespace, name)
}

func (d deadlineKube) Delete(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, uid types.UID) error {
	ctx, cancel, err := termOfContext(ctx).callContext(ctx, d.timeout)
	if err != nil {
		return err
	}
	defer cancel()
	return d.kube.Delete(ctx, gvr, namespace, name, uid)
}

// ReplaceManagedFields passes the call to the wrapped client when it has the method: a
// mutation like Apply, refused in a term that may be over and ended within its expiry.
func (d deadlineKube) ReplaceManagedFields(ctx context.Context, gvr schema.GroupVersionResource, namespace, name, resourceVersion string, fields []metav1.ManagedFieldsEntry) error {
	ed, ok := d.kube.(managedFieldsEditor)
	if !ok {
		return errNoManagedFieldsEditor
	}
	ctx, cancel, err := termOfContext(ctx).callContext(ctx, d.timeout)
	if err != nil {
		return err
	}
	defer cancel()
	return ed.ReplaceManagedFields(ctx, gvr, namespace, name, resourceVersion, fields)
}
