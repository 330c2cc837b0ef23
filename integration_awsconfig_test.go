package kubeapplier

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/logging"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kube-applier-aws/kubeapplier/internal/testenv"
)

// sdkLines records what an AWS SDK logger receives.
type sdkLines struct {
	mu    sync.Mutex
	lines []string
}

func (s *sdkLines) Logf(c logging.Classification, format string, v ...any) {
	s.mu.Lock()
	s.lines = append(s.lines, string(c)+" "+fmt.Sprintf(format, v...))
	s.mu.Unlock()
}

func (s *sdkLines) get() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lines...)
}

// TestIntegrationAWSConfigDynamoDBLocal: clients New builds from an AWSConfig with an endpoint
// (DynamoDB Local) take its error answers, which lack the CRC32 header, without a warning,
// log through Options.Log (never the configuration's own logger), and count their requests.
// A client built from the same configuration without the applier warns: the check can fail.
func TestIntegrationAWSConfigDynamoDBLocal(t *testing.T) {
	env := testenv.DynamoDB(t)
	creds, err := env.Client.Options().Credentials.Retrieve(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	cfgLogger := &sdkLines{}
	cfg := aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(env.Endpoint), Logger: cfgLogger,
		Credentials: credentials.NewStaticCredentialsProvider(creds.AccessKeyID, creds.SecretAccessKey, "")}
	missing := &dynamodb.GetItemInput{TableName: aws.String(env.Prefix + "no-such-table"),
		Key: map[string]ddbtypes.AttributeValue{"documentID": &ddbtypes.AttributeValueMemberS{Value: "x"}}}

	// Control: the SDK's own client warns about DynamoDB Local's error answer.
	control := &sdkLines{}
	plain := cfg.Copy()
	plain.Logger = control
	if _, err := dynamodb.NewFromConfig(plain).GetItem(context.Background(), missing); err == nil {
		t.Fatal("GetItem of a missing table succeeded")
	}
	t.Logf("control: %q", control.get())
	if len(control.get()) == 0 {
		t.Fatal("control: the SDK logged nothing for DynamoDB Local's error answer; this test would prove nothing")
	}

	var logs logCapture
	reg := prometheus.NewRegistry()
	a, err := New(Options{ManagementCluster: "mc01", TablePrefix: env.Prefix, AWSConfig: &cfg,
		RESTConfig: testenv.Kube(t), Log: logs.logger(), MetricsRegisterer: reg})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := a.opts.DynamoDB.GetItem(context.Background(), missing); err == nil {
			t.Fatal("GetItem of a missing table succeeded")
		}
	}
	if got := cfgLogger.get(); len(got) != 0 {
		t.Fatalf("the AWSConfig's own logger got %q", got)
	}
	if logs.has("aws-sdk") {
		t.Fatalf("SDK warnings logged:\n%s", logs.dump())
	}
	if got := values(t, reg, "kube_applier_dynamodb_requests_total", "operation")["mc01/GetItem"]; got != 3 {
		t.Fatalf("GetItem requests counted: %v, want 3", got)
	}
}
