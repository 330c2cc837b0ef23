package testenv_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kube-applier-aws/kubeapplier/internal/testenv"
)

var stackScript = filepath.Join("..", "..", "hack", "local-stack.sh")

// evalEnv runs `eval "$(hack/local-stack.sh env)"` for the stack in dir in a bash with a bare
// environment, as `eval "$(make -s env)"` does in a terminal, and returns the variables that
// the eval set.
func evalEnv(t *testing.T, dir string) map[string]string {
	t.Helper()
	script := `set -e; eval "$(bash "$1" env)"; env -0`
	cmd := exec.Command("bash", "-c", script, "bash", stackScript)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "KAA_STACK_DIR=" + dir}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("local-stack.sh env: %v\n%s", err, stderr.String())
	}
	vars := map[string]string{}
	for _, kv := range strings.Split(string(out), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	return vars
}

// fakeStack lays out a state directory as `up` leaves it (the env file as an earlier version
// of the script wrote it), with a stand-in process per component whose command line names the
// program the script checks for.
func fakeStack(t *testing.T, endpoint string) string {
	t.Helper()
	dir := t.TempDir()
	env := "export KAA_DYNAMODB_ENDPOINT=" + endpoint + "\nexport KAA_KUBECONFIG=" + filepath.Join(dir, "kubeconfig") +
		"\nexport AWS_REGION=us-east-1\nexport AWS_ACCESS_KEY_ID=local\nexport AWS_SECRET_ACCESS_KEY=local\n"
	// kube-apiserver.cmd as `start` records it: the folder, then the command line, %q-quoted.
	kas := fmt.Sprintf("%s %s --secure-port=1\n", dir, filepath.Join(dir, `kube\ bin`, "kube-apiserver"))
	for name, content := range map[string]string{"env": env, "kubeconfig": "apiVersion: v1\nkind: Config\n", "kube-apiserver.cmd": kas} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for name, exe := range map[string]string{"dynamodb": "DynamoDBLocal.jar", "etcd": "etcd", "kube-apiserver": "kube-apiserver"} {
		// sh stays the process (two commands), its argv naming exe; its process group is ended.
		p := exec.Command("sh", "-c", "sleep 60; exit 0", exe)
		p.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(-p.Process.Pid, syscall.SIGKILL); _ = p.Wait() })
		if err := os.WriteFile(filepath.Join(dir, name+".pid"), []byte(strconv.Itoa(p.Process.Pid)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// `make env` (hack/local-stack.sh env) exports what the library's default AWS chain and the
// AWS CLI need for DynamoDB Local, also for a stack started by an earlier version of the script.
func TestStackEnvExports(t *testing.T) {
	const endpoint = "http://127.0.0.1:23456"
	dir := fakeStack(t, endpoint)
	vars := evalEnv(t, dir)
	for k, want := range map[string]string{
		"KAA_DYNAMODB_ENDPOINT":     endpoint,
		"KAA_KUBECONFIG":            filepath.Join(dir, "kubeconfig"),
		"KUBECONFIG":                filepath.Join(dir, "kubeconfig"),
		"AWS_ENDPOINT_URL":          endpoint, // the Go SDK and the AWS CLI
		"AWS_ENDPOINT_URL_DYNAMODB": endpoint, // what examples/backend-python passes to boto3 < 1.28, which reads no endpoint variable
		"AWS_REGION":                "us-east-1",
		"AWS_DEFAULT_REGION":        "us-east-1", // the AWS CLI v1 reads only this one
		"AWS_ACCESS_KEY_ID":         "local",
		"AWS_SECRET_ACCESS_KEY":     "local",
		"AWS_PAGER":                 "",
		"AWS_EC2_METADATA_DISABLED": "true",
		"KAA_KUBE_BIN_DIR":          filepath.Join(dir, "kube bin"), // kube-controller-manager's folder (testenv.StartControllerManager)
	} {
		got, ok := vars[k]
		if !ok || got != want {
			t.Errorf("%s = %q (set: %v), want %q", k, got, ok, want)
		}
	}

	// The Go SDK's default chain, as the library builds it without Options.AWSConfig, finds the
	// endpoint and the region in that environment alone.
	for k := range vars {
		if strings.HasPrefix(k, "AWS_") {
			t.Setenv(k, vars[k])
		}
	}
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "none"))
	cfg, err := config.LoadDefaultConfig(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BaseEndpoint == nil || *cfg.BaseEndpoint != endpoint || cfg.Region != "us-east-1" {
		t.Fatalf("SDK config from the environment: endpoint %v region %q, want %s us-east-1", cfg.BaseEndpoint, cfg.Region, endpoint)
	}

	// A stack that is not running prints nothing to evaluate.
	stopped := t.TempDir()
	cmd := exec.Command("bash", stackScript, "env")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "KAA_STACK_DIR=" + stopped}
	if out, err := cmd.Output(); err == nil || len(out) != 0 {
		t.Fatalf("env of a stopped stack: %v, stdout %q; want a failure and nothing to eval", err, out)
	}
}

// TestIntegrationStackEnvReachesDynamoDB: with nothing but what `make env` exports for the
// running local stack, the AWS CLI and the Go SDK's default chain reach DynamoDB Local.
func TestIntegrationStackEnvReachesDynamoDB(t *testing.T) {
	dir := filepath.Dir(lookupOrSkip(t, testenv.EnvKubeconfig))
	vars := evalEnv(t, dir)

	aws, err := exec.LookPath("aws")
	if err != nil {
		msg := "the AWS CLI (aws) is not installed"
		if testenv.Required() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cli := exec.CommandContext(ctx, aws, "dynamodb", "list-tables", "--output", "json")
	cli.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for k, v := range vars {
		if strings.HasPrefix(k, "AWS_") {
			cli.Env = append(cli.Env, k+"="+v)
		}
	}
	out, err := cli.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"TableNames"`) {
		t.Fatalf("aws dynamodb list-tables with make env's exports: %v\n%s", err, out)
	}

	for k, v := range vars {
		if strings.HasPrefix(k, "AWS_") {
			t.Setenv(k, v)
		}
	}
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dynamodb.NewFromConfig(cfg).ListTables(ctx, &dynamodb.ListTablesInput{}); err != nil {
		t.Fatalf("Go SDK default chain with make env's exports: %v", err)
	}
}

func lookupOrSkip(t *testing.T, name string) string {
	t.Helper()
	if v := os.Getenv(name); v != "" {
		return v
	}
	msg := "integration test: " + name + " not set; run `make test`"
	if testenv.Required() {
		t.Fatal(msg + " (CI or KAA_INTEGRATION=1 forbids skipping)")
	}
	t.Skip(msg)
	return ""
}
