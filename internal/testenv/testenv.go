// Package testenv connects integration tests to the local stack that hack/local-stack.sh runs
// (DynamoDB Local with Streams, etcd and kube-apiserver). It is a test helper, not library API.
//
// The stack announces itself through the environment (`eval "$(hack/local-stack.sh env)"`).
// Without it, integration tests skip, unless Required() says this run must not skip them:
// a CI run that silently skipped every integration test would prove nothing.
package testenv

import (
	"context"
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Environment variables written by `hack/local-stack.sh env`.
const (
	EnvDynamoDBEndpoint = "KAA_DYNAMODB_ENDPOINT"
	EnvKubeconfig       = "KAA_KUBECONFIG"
)

// cleanupTimeout bounds each cleanup call: t.Context() is already canceled when cleanups run.
const cleanupTimeout = 30 * time.Second

// Required reports whether integration tests must run (and fail without the stack) instead of
// skipping: on CI (CI non-empty) or when asked with KAA_INTEGRATION=1, as `make test` does.
func Required() bool {
	return os.Getenv("CI") != "" || os.Getenv("KAA_INTEGRATION") == "1"
}

// lookup returns the environment variable's value, or skips/fails the test when it is missing.
func lookup(t testing.TB, name string) string {
	t.Helper()
	if v := os.Getenv(name); v != "" {
		return v
	}
	msg := "integration test: " + name + " not set; run `make test` to start DynamoDB Local and kube-apiserver"
	if Required() {
		t.Fatalf("%s (CI or KAA_INTEGRATION=1 forbids skipping)", msg)
	}
	t.Skip(msg)
	return ""
}

// Dynamo is a test's own view of DynamoDB Local.
type Dynamo struct {
	Client   *dynamodb.Client
	Streams  *dynamodbstreams.Client
	Prefix   string // table-name prefix unique to this call, e.g. "tk3j9x0qa-"
	Endpoint string
}

// DynamoDB returns clients for DynamoDB Local that see an empty, isolated database.
//
// Isolation comes from a fresh random access key: DynamoDB Local (run without -sharedDb) keeps
// one database per access key and region. That also keeps tests fast, because stream records
// left by earlier tests slow down every later operation on the same database. Tables whose
// names start with Prefix are deleted when the test ends.
func DynamoDB(t testing.TB) Dynamo {
	t.Helper()
	endpoint := lookup(t, EnvDynamoDBEndpoint)

	// Explicit region and static credentials override whatever the environment or ~/.aws holds;
	// retries and timeouts stay the SDK defaults, as in production.
	cfg, err := config.LoadDefaultConfig(context.Background(),
		config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("t"+randomString(16), "local", "")),
	)
	if err != nil {
		t.Fatalf("testenv: load AWS config: %v", err)
	}
	d := Dynamo{
		// Per-client BaseEndpoint wins over AWS_ENDPOINT_URL* settings from the environment.
		Client: dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
			o.BaseEndpoint = aws.String(endpoint)
			// DynamoDB Local's 4xx answers lack the CRC32 header; the SDK would warn on each.
			o.DisableValidateResponseChecksum = true
		}),
		Streams: dynamodbstreams.NewFromConfig(cfg, func(o *dynamodbstreams.Options) {
			o.BaseEndpoint = aws.String(endpoint)
		}),
		Prefix:   "t" + randomString(8) + "-",
		Endpoint: endpoint,
	}
	t.Cleanup(func() { DeleteTablesWithPrefix(t, d.Client, d.Prefix) })
	return d
}

// DeleteTablesWithPrefix deletes every table whose name starts with prefix. Errors are logged,
// not fatal: it runs as cleanup, where a leftover table harms nobody (each test has its own
// database) but only frees memory in DynamoDB Local.
func DeleteTablesWithPrefix(t testing.TB, client *dynamodb.Client, prefix string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	pages := dynamodb.NewListTablesPaginator(client, &dynamodb.ListTablesInput{})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			t.Logf("testenv: cleanup: list tables: %v", err)
			return
		}
		for _, name := range page.TableNames {
			if !strings.HasPrefix(name, prefix) {
				continue
			}
			if _, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
				t.Logf("testenv: cleanup: delete table %s: %v", name, err)
			}
		}
	}
}

// Kube returns a client config for the local kube-apiserver (admin token), with client-side
// rate limits high enough not to be the bottleneck of a test (client-go's default is 5/10).
func Kube(t testing.TB) *rest.Config {
	t.Helper()
	path := lookup(t, EnvKubeconfig)
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("testenv: load kubeconfig %s: %v", path, err)
	}
	cfg.QPS = 500
	cfg.Burst = 1000
	return cfg
}

var namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// Namespace creates a namespace unique to this test and deletes it when the test ends.
//
// The deletion is not awaited: no kube-controller-manager runs, so a deleted namespace stays
// Terminating forever (and refuses new objects). Tests therefore never reuse a namespace.
func Namespace(t testing.TB, cfg *rest.Config) string {
	t.Helper()
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("testenv: dynamic client: %v", err)
	}
	name := Name(t, "t-"+t.Name())
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Namespace",
		"metadata":   map[string]any{"name": name},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if _, err := client.Resource(namespaces).Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("testenv: create namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		err := client.Resource(namespaces).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Logf("testenv: cleanup: delete namespace %s: %v", name, err)
		}
	})
	return name
}

// Name returns a unique name that is a valid DNS-1123 label (so also a valid subdomain):
// prefix lowercased, with runs of other characters turned into "-", cut to fit 63 characters,
// then "-" and 5 random characters. The t argument is there for symmetry with the other helpers.
func Name(t testing.TB, prefix string) string {
	t.Helper()
	const maxLen, suffixLen = 63, 5
	p := strings.Trim(invalidRun.ReplaceAllString(strings.ToLower(prefix), "-"), "-")
	if p == "" {
		p = "t"
	}
	if len(p) > maxLen-1-suffixLen {
		p = strings.TrimRight(p[:maxLen-1-suffixLen], "-")
	}
	return p + "-" + randomString(suffixLen)
}

var invalidRun = regexp.MustCompile(`[^a-z0-9]+`)

// randomString returns n random lowercase letters and digits. Uniqueness is all that matters
// here; math/rand/v2 is seeded randomly per process, so parallel test binaries differ too.
func randomString(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rand.IntN(len(alphabet))]
	}
	return string(b)
}
