package main

import (
	"context"
	"errors"
	"hash/crc32"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// The DynamoDB client of desirectl validates the CRC32 of responses that carry one and
// warns about none that carry none (DynamoDB Local's error answers).
func TestDynamoDBClientValidatesOnlySentChecksums(t *testing.T) {
	const notFound = `{"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException","message":"Cannot do operations on a non-existent table"}`
	for _, tc := range []struct {
		name        string
		status      int
		body        string
		crc         string // "" none, "ok" the right one, else that value
		plainClient bool   // the SDK's client as it comes, for comparison
		wantErr     bool
		wantWarning bool
	}{
		{name: "error without checksum", status: 400, body: notFound, wantErr: true},
		{name: "error without checksum, SDK as it comes", status: 400, body: notFound, plainClient: true, wantErr: true, wantWarning: true},
		{name: "answer without checksum", status: 200, body: `{}`},
		{name: "answer with its checksum", status: 200, body: `{}`, crc: "ok"},
		{name: "error with its checksum", status: 400, body: notFound, crc: "ok", wantErr: true},
		{name: "answer with a wrong checksum", status: 200, body: `{}`, crc: "12345", wantWarning: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				switch tc.crc {
				case "":
				case "ok":
					w.Header().Set(crc32Header, strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(tc.body))), 10))
				default:
					w.Header().Set(crc32Header, tc.crc)
				}
				w.Header().Set("Content-Type", "application/x-amz-json-1.0")
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			t.Setenv("AWS_ACCESS_KEY_ID", "local")
			t.Setenv("AWS_SECRET_ACCESS_KEY", "local")
			var (
				mu   sync.Mutex
				logs []string
			)
			log := funcr.New(func(prefix, args string) {
				mu.Lock()
				defer mu.Unlock()
				logs = append(logs, prefix+" "+args)
			}, funcr.Options{})
			ctx := logr.NewContext(context.Background(), log)
			api, err := newDynamoDBClient(ctx, settings{contextEntry{AWSRegion: "us-east-1", EndpointURL: srv.URL}})
			if err != nil {
				t.Fatal(err)
			}
			if tc.plainClient {
				c := api.(*dynamodb.Client)
				api = dynamodb.New(c.Options(), func(o *dynamodb.Options) { o.APIOptions = nil })
			}
			_, err = api.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"),
				Key: map[string]types.AttributeValue{"documentID": &types.AttributeValueMemberS{Value: "x"}}})
			var rnf *types.ResourceNotFoundException
			if tc.wantErr != errors.As(err, &rnf) {
				t.Fatalf("error %v, want a ResourceNotFoundException: %v", err, tc.wantErr)
			}
			mu.Lock()
			defer mu.Unlock()
			warned := strings.Contains(strings.Join(logs, "\n"), "checksum")
			if warned != tc.wantWarning {
				t.Fatalf("checksum warning logged: %v, want %v; logs: %q", warned, tc.wantWarning, logs)
			}
		})
	}
}
