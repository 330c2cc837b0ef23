package kubeapplier

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/testenv"
)

// backendEnv returns the environment a backend example runs with: the test's own DynamoDB
// Local database (its access key), table prefix, management cluster and namespace.
func backendEnv(t *testing.T, e *e2e) []string {
	t.Helper()
	db, ok := e.db.(*dynamodb.Client)
	if !ok {
		t.Fatalf("the backend side's DynamoDB client is a %T", e.db)
	}
	creds, err := db.Options().Credentials.Retrieve(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	endpoint, prefix := os.Getenv(testenv.EnvDynamoDBEndpoint), e.prefix
	return append(os.Environ(), "AWS_ACCESS_KEY_ID="+creds.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+creds.SecretAccessKey,
		"AWS_REGION=us-east-1", "AWS_ENDPOINT_URL_DYNAMODB="+endpoint, "AWS_EC2_METADATA_DISABLED=true",
		"MANAGEMENT_CLUSTER=mc01", "TABLE_PREFIX="+prefix, "NAMESPACE="+e.ns, "TASK_KEY=hc-"+e.ns)
}

// runBackend runs an example as the README shows it and returns its output; the example
// fails (exit status) when a status does not answer or is not Successful.
func runBackend(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	t.Logf("%s %s:\n%s", name, strings.Join(args, " "), out)
	if err != nil {
		t.Fatalf("%s in %s: %v", name, dir, err)
	}
	return string(out)
}

// assertBackendRun checks an example's output: the apply and the delete both reported
// Successful=True, and the object is gone.
func assertBackendRun(t *testing.T, e *e2e, out, object string) {
	t.Helper()
	for _, want := range []string{"ApplyDesire ", "DeleteDesire "} {
		if !strings.Contains(out, want) || !strings.Contains(out[strings.Index(out, want):], "Successful=True NoErrors") {
			t.Fatalf("output lacks %q ... Successful=True NoErrors", want)
		}
	}
	if _, err := e.getConfigMap(object); err == nil {
		t.Fatalf("ConfigMap %s still exists after the DeleteDesire", object)
	}
}

// TestIntegrationBackendGo runs examples/backend-go (a module needing only the api module)
// exactly as the README shows it, against an applier on the local stack.
func TestIntegrationBackendGo(t *testing.T) {
	e := startE2E(t, nil)
	out := runBackend(t, filepath.Join("examples", "backend-go"), backendEnv(t, e), "go", "run", ".")
	assertBackendRun(t, e, out, "backend-go")
}

// TestIntegrationBackendPython runs examples/backend-python/backend.py with boto3 exactly as
// the README shows it, and holds both codecs to the spec items it wrote (round trip).
func TestIntegrationBackendPython(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil || exec.Command("python3", "-c", "import boto3").Run() != nil {
		if testenv.Required() {
			t.Fatal("python3 with boto3 is required (hack/ensure-tools.sh installs python3-boto3)")
		}
		t.Skip("python3 with boto3 not installed")
	}
	e := startE2E(t, nil)
	out := runBackend(t, filepath.Join("examples", "backend-python"), backendEnv(t, e), "python3", "backend.py")
	assertBackendRun(t, e, out, "backend-python")
	items := 0
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		_, js, ok := strings.Cut(sc.Text(), " spec item: ")
		if !ok {
			continue
		}
		items++
		item, err := api.ItemFromJSON([]byte(js))
		if err != nil {
			t.Fatal(err)
		}
		var d Desire = &ApplyDesire{}
		if strings.HasPrefix(sc.Text(), "deletedesires") {
			d = &DeleteDesire{}
		}
		// The codec reads boto3's item and writes every attribute back as it was.
		if err := api.DecodeItem(item, d); err != nil {
			t.Fatal(err)
		}
		got, err := api.EncodeItem(d)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range item {
			want, _ := api.ItemToJSON(api.Item{k: v})
			if g, _ := api.ItemToJSON(api.Item{k: got[k]}); !bytes.Equal(g, want) {
				t.Errorf("the codec wrote %s, boto3 wrote %s", g, want)
			}
		}
	}
	if items != 2 {
		t.Fatalf("%d spec items in the output, want 2", items)
	}
}
