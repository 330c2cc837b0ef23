package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
)

// localClients returns DynamoDB and Streams clients of the local stack's DynamoDB Local
// (KAA_INTEGRATION=1, KAA_DYNAMODB_ENDPOINT; `eval "$(make -s env)"`), in a database of their
// own (a fresh access key), or skips.
func localClients(t *testing.T) (*dynamodb.Client, *dynamodbstreams.Client) {
	t.Helper()
	ep := os.Getenv("KAA_DYNAMODB_ENDPOINT")
	if os.Getenv("KAA_INTEGRATION") != "1" || ep == "" {
		t.Skip("KAA_INTEGRATION=1 and KAA_DYNAMODB_ENDPOINT (the local stack) not set")
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	creds := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: "t" + hex.EncodeToString(b), SecretAccessKey: "local"}, nil
	})
	db := dynamodb.New(dynamodb.Options{Region: "us-east-1", Credentials: creds, BaseEndpoint: aws.String(ep)})
	st := dynamodbstreams.New(dynamodbstreams.Options{Region: "us-east-1", Credentials: creds, BaseEndpoint: aws.String(ep)})
	return db, st
}

// On DynamoDB Local with Streams: EnsureTables WithStatusStreams turns the stream on for
// existing status tables, and WaitForStatus of many goroutines is answered from the stream
// (one initial GetItem each) through one reader.
func TestIntegrationWaitForStatusStream(t *testing.T) {
	db, streams := localClients(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Tables first without status streams, then with: the UpdateTable path.
	if _, err := EnsureTables(ctx, db, "it-", "mc01"); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureTables(ctx, db, "it-", "mc01", WithStatusStreams()); err != nil {
		t.Fatal(err)
	}
	// Created with the stream at once (CreateTable), and a second run leaves it as it is.
	for range 2 {
		if _, err := EnsureTables(ctx, db, "it-", "mc02", WithStatusStreams()); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range DesireKinds {
		name := TableLayout{Prefix: "it-"}.Name("mc02", StatusTable, k)
		out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &name})
		if err != nil {
			t.Fatal(err)
		}
		if s := out.Table.StreamSpecification; s == nil || s.StreamViewType != types.StreamViewTypeNewAndOldImages || len(out.Table.GlobalSecondaryIndexes) == 0 {
			t.Fatalf("%s: stream %+v, indexes %d; want NEW_AND_OLD_IMAGES and the status check's index", name, s, len(out.Table.GlobalSecondaryIndexes))
		}
	}
	cdb := &countingDB{Client: db}
	c := NewClient(cdb, "it-", "mc01", WithStatusStreamsAPI(streams))
	defer c.Close()
	d := c.ApplyDesires()
	desc, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(d.StatusTable())})
	if err != nil {
		t.Fatal(err)
	}
	if s := desc.Table.StreamSpecification; s == nil || !aws.ToBool(s.StreamEnabled) || s.StreamViewType != types.StreamViewTypeNewAndOldImages {
		t.Fatalf("status table stream %+v, want NEW_AND_OLD_IMAGES", s)
	}
	const n = 10
	specs := make([]*ApplyDesire, n)
	for i := range specs {
		if specs[i], err = d.Create(ctx, sampleSpec(fmt.Sprintf("it-doc-%02d", i))); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for _, s := range specs {
		wg.Go(func() {
			st, err := d.WaitForStatus(ctx, s)
			if err == nil && !Answers(s, st) {
				err = fmt.Errorf("%s: not an answer", s.DocumentID)
			}
			errs <- err
		})
	}
	eventually(t, "all waiters joined", func() bool { return joined(c, d.StatusTable(), n) })
	time.Sleep(100 * time.Millisecond) // their initial GetItems made
	for _, s := range specs {
		if err := putLocalStatus(ctx, db, d.StatusTable(), s); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := cdb.gets(); got != n {
		t.Errorf("GetItem %d, want %d (one per wait, no polling)", got, n)
	}
}

// putLocalStatus writes what the applier would write answering spec.
func putLocalStatus(ctx context.Context, db DynamoDBAPI, table string, spec *ApplyDesire) error {
	created, updated := spec.StoredTimes()
	st := &ApplyDesire{DynamoDBMetadata: DynamoDBMetadata{DocumentID: spec.DocumentID, Version: 1, CreateTime: spec.UpdateTime, UpdateTime: spec.UpdateTime},
		Spec: ApplyDesireSpec{CommonSpec: spec.Spec.CommonSpec}}
	st.Status.Conditions = []Condition{{Type: ConditionSuccessful, Status: ConditionTrue, Reason: ReasonNoErrors, ObservedGeneration: spec.Version}}
	st.Status.ObservedDesireUpdateTime, st.Status.ObservedDesireCreateTime = updated, created
	item, err := EncodeItem(st)
	if err != nil {
		return err
	}
	item[AttrShard] = &types.AttributeValueMemberS{Value: "0"}
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: item})
	return err
}

// countingDB counts GetItem calls of a *dynamodb.Client.
type countingDB struct {
	*dynamodb.Client
	mu sync.Mutex
	n  int
}

func (c *countingDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return c.Client.GetItem(ctx, in, o...)
}

func (c *countingDB) gets() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}
