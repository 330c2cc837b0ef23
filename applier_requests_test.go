package kubeapplier

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/rest"
)

// TestDynamoDBRequestsCounted: the DynamoDB and Streams clients an Applier uses count every
// attempt (a retried call counts twice) by operation, whether New built them or was given them.
func TestDynamoDBRequestsCounted(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		if calls.Add(1) == 1 { // the first attempt fails, the SDK retries
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"try again"}`))
			return
		}
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	cfg := aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("k", "s", "")}
	given := dynamodb.NewFromConfig(cfg)
	for _, how := range []string{"built from AWSConfig", "given"} {
		t.Run(how, func(t *testing.T) {
			calls.Store(0)
			reg := prometheus.NewRegistry()
			opts := Options{ManagementCluster: "mc01", AWSConfig: &cfg, Kube: newFakeKube(), RESTMapper: newMapper(),
				DynamicClient: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), MetricsRegisterer: reg}
			if how == "given" {
				opts.AWSConfig = nil
				opts.DynamoDB, opts.Streams = given, AWSStreams{DB: given, Streams: dynamodbstreams.NewFromConfig(cfg)}
			}
			a, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.opts.DynamoDB.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String("t"),
				Key: map[string]ddbtypes.AttributeValue{"documentID": &ddbtypes.AttributeValueMemberS{Value: "x"}}}); err != nil {
				t.Fatal(err)
			}
			if _, err := a.opts.Streams.GetRecords(context.Background(), &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String("i")}); err != nil {
				t.Fatal(err)
			}
			got := values(t, reg, "kube_applier_dynamodb_requests_total", "operation")
			if got["mc01/GetItem"] != 2 || got["mc01/GetRecords"] != 1 || len(got) != 2 {
				t.Fatalf("kube_applier_dynamodb_requests_total by management_cluster/operation = %v, want GetItem 2 (a retry), GetRecords 1", got)
			}
		})
	}
}

// TestKubeRequestsOnSharedHTTPClient: with Options.HTTPClient, the clients built from
// RESTConfig send through that client's transport, and their requests are counted by verb.
func TestKubeRequestsOnSharedHTTPClient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/readyz" {
			_, _ = w.Write([]byte("ok"))
			return
		}
		_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"ns"}}`))
	}))
	defer srv.Close()
	var shared atomic.Int32
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		shared.Add(1)
		return http.DefaultTransport.RoundTrip(r)
	})}
	reg := prometheus.NewRegistry()
	a, err := New(Options{ManagementCluster: "mc01", DynamoDB: newMemDB(), Streams: AWSStreams{},
		RESTConfig: &rest.Config{Host: srv.URL}, HTTPClient: hc, MetricsRegisterer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.opts.DynamicClient.Resource(cmGVR).Namespace("ns").Get(context.Background(), "c", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := a.wiring.kubeProbe(context.Background()); err != nil {
		t.Fatal(err)
	}
	if shared.Load() != 2 {
		t.Fatalf("the shared HTTP client carried %d requests, want 2", shared.Load())
	}
	got := values(t, reg, "kube_applier_kube_requests_total", "verb")
	if got["mc01/get"] != 1 || got["mc01/discovery"] != 1 || len(got) != 2 {
		t.Fatalf("kube_applier_kube_requests_total by management_cluster/verb = %v, want get 1, discovery 1", got)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// The applier's clients count their requests by group/resource, with the verb.
func TestKubeRequestsByResource(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"ns"}}`))
	}))
	defer srv.Close()
	reg := prometheus.NewRegistry()
	a, err := New(Options{ManagementCluster: "mc01", DynamoDB: newMemDB(), Streams: AWSStreams{},
		RESTConfig: &rest.Config{Host: srv.URL}, MetricsRegisterer: reg})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := a.opts.DynamicClient.Resource(cmGVR).Namespace("ns").Get(context.Background(), "c", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	_ = a.wiring.kubeProbe(context.Background())
	got := values(t, reg, "kube_applier_kube_resource_requests_total", "resource")
	if got["mc01/configmaps"] != 2 || got["mc01/"] != 1 || len(got) != 2 {
		t.Fatalf("by resource = %v, want configmaps 2 and discovery (\"\") 1", got)
	}
}
