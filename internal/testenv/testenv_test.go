package testenv_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"

	"github.com/kube-applier-aws/kubeapplier/internal/testenv"
)

func TestRequired(t *testing.T) {
	for _, tc := range []struct {
		ci, integration string
		want            bool
	}{
		{"", "", false},
		{"true", "", true},
		{"1", "", true},
		{"", "1", true},
		{"", "0", false},
		{"", "true", false}, // only "1" asks for integration tests
		{"true", "0", true}, // CI always requires them
	} {
		t.Setenv("CI", tc.ci)
		t.Setenv("KAA_INTEGRATION", tc.integration)
		if got := testenv.Required(); got != tc.want {
			t.Errorf("CI=%q KAA_INTEGRATION=%q: Required() = %v, want %v", tc.ci, tc.integration, got, tc.want)
		}
	}
}

func TestNameIsUniqueDNSLabel(t *testing.T) {
	seen := map[string]bool{}
	for _, prefix := range []string{
		"",
		"cm",
		"t-" + t.Name(),
		"--Weird_Prefix/With Spaces--",
		strings.Repeat("TestSomethingVeryLong/sub_test", 5),
	} {
		name := testenv.Name(t, prefix)
		if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
			t.Errorf("Name(%q) = %q: not a DNS-1123 label: %v", prefix, name, errs)
		}
		if seen[name] {
			t.Errorf("Name(%q) = %q: repeated", prefix, name)
		}
		seen[name] = true
	}
}

// TestDynamoDBStream proves DynamoDB Local serves tables and their streams: an item written is
// readable as one INSERT record, with its new image, from the shard's start.
func TestDynamoDBStream(t *testing.T) {
	d := testenv.DynamoDB(t)
	ctx := t.Context()
	table := d.Prefix + "desires"

	_, err := d.Client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(table),
		AttributeDefinitions: []ddbtypes.AttributeDefinition{
			{AttributeName: aws.String("documentID"), AttributeType: ddbtypes.ScalarAttributeTypeS},
		},
		KeySchema: []ddbtypes.KeySchemaElement{
			{AttributeName: aws.String("documentID"), KeyType: ddbtypes.KeyTypeHash},
		},
		BillingMode: ddbtypes.BillingModePayPerRequest,
		StreamSpecification: &ddbtypes.StreamSpecification{
			StreamEnabled:  aws.Bool(true),
			StreamViewType: ddbtypes.StreamViewTypeNewAndOldImages,
		},
	})
	if err != nil {
		t.Fatalf("CreateTable: %v", err)
	}

	_, err = d.Client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(table),
		Item: map[string]ddbtypes.AttributeValue{
			"documentID": &ddbtypes.AttributeValueMemberS{Value: "doc-1"},
			"version":    &ddbtypes.AttributeValueMemberN{Value: "1"},
		},
	})
	if err != nil {
		t.Fatalf("PutItem: %v", err)
	}

	desc, err := d.Client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatalf("DescribeTable: %v", err)
	}
	streamARN := aws.ToString(desc.Table.LatestStreamArn)
	if streamARN == "" {
		t.Fatal("DescribeTable: no LatestStreamArn")
	}

	stream, err := d.Streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(streamARN)})
	if err != nil {
		t.Fatalf("DescribeStream: %v", err)
	}
	shards := stream.StreamDescription.Shards
	if len(shards) != 1 {
		t.Fatalf("DescribeStream: %d shards, want 1", len(shards))
	}

	it, err := d.Streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
		StreamArn:         aws.String(streamARN),
		ShardId:           shards[0].ShardId,
		ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon,
	})
	if err != nil {
		t.Fatalf("GetShardIterator: %v", err)
	}
	recs, err := d.Streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it.ShardIterator})
	if err != nil {
		t.Fatalf("GetRecords: %v", err)
	}
	if len(recs.Records) != 1 {
		t.Fatalf("GetRecords: %d records, want 1", len(recs.Records))
	}
	rec := recs.Records[0]
	if rec.EventName != streamtypes.OperationTypeInsert {
		t.Errorf("record event = %q, want INSERT", rec.EventName)
	}
	img := rec.Dynamodb.NewImage
	if id, ok := img["documentID"].(*streamtypes.AttributeValueMemberS); !ok || id.Value != "doc-1" {
		t.Errorf("NewImage documentID = %#v, want S doc-1", img["documentID"])
	}
	if v, ok := img["version"].(*streamtypes.AttributeValueMemberN); !ok || v.Value != "1" {
		t.Errorf("NewImage version = %#v, want N 1", img["version"])
	}
}

// TestKubeServerSideApply proves the local kube-apiserver serves server-side apply.
func TestKubeServerSideApply(t *testing.T) {
	cfg := testenv.Kube(t)
	ns := testenv.Namespace(t, cfg)
	name := testenv.Name(t, "cm")
	ctx := t.Context()

	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("dynamic client: %v", err)
	}
	configMaps := client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns)

	desired := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"data":       map[string]any{"greeting": "hello"},
	}}
	if _, err := configMaps.Apply(ctx, name, desired, metav1.ApplyOptions{FieldManager: "testenv", Force: true}); err != nil {
		t.Fatalf("Apply: %v", err)
	}

	got, err := configMaps.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if v, _, _ := unstructured.NestedString(got.Object, "data", "greeting"); v != "hello" {
		t.Errorf("data.greeting = %q, want hello", v)
	}
	var managed bool
	for _, mf := range got.GetManagedFields() {
		if mf.Manager == "testenv" && mf.Operation == metav1.ManagedFieldsOperationApply {
			managed = true
		}
	}
	if !managed {
		t.Errorf("managedFields = %+v, want an Apply entry of manager testenv", got.GetManagedFields())
	}
}
