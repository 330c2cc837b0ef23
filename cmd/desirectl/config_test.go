package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestConfigContextsRoundTrip(t *testing.T) {
	h := newHarness(t)
	if got := h.mustRun("config", "set-context", "local", "--aws-region", "eu-west-1", "--endpoint-url", "http://localhost:8000",
		"--management-cluster", "mc-local", "--cluster-id", "c-9", "--task-key", "task-9", "--table-prefix", "dev-"); got != "Context \"local\" created.\n" {
		t.Fatalf("set-context: %q", got)
	}
	// Only the given fields change.
	if got := h.mustRun("config", "set-context", "local", "--cluster-id", "c-10"); got != "Context \"local\" modified.\n" {
		t.Fatalf("set-context again: %q", got)
	}
	if got := h.mustRun("config", "current-context"); got != "test\n" {
		t.Fatalf("current-context: %q", got)
	}
	if got := h.mustRun("config", "use-context", "local"); got != "Switched to context \"local\".\n" {
		t.Fatalf("use-context: %q", got)
	}
	if got := h.mustRun("config", "current-context"); got != "local\n" {
		t.Fatalf("current-context: %q", got)
	}
	want := strings.Join([]string{
		"CURRENT   NAME    MANAGEMENT-CLUSTER   CLUSTER-ID   TASK-KEY   AWS-REGION   ENDPOINT-URL            TABLE-PREFIX",
		"*         local   mc-local             c-10         task-9     eu-west-1    http://localhost:8000   dev-",
		"          test    mc1                  cluster-1               us-east-1                            t-",
		""}, "\n")
	if got := h.mustRun("config", "get-contexts"); got != want {
		t.Fatalf("get-contexts:\n%s\nwant:\n%s", got, want)
	}

	// The file is YAML with the documented keys.
	data, err := os.ReadFile(h.configPath)
	if err != nil {
		t.Fatal(err)
	}
	var cfg configFile
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		t.Fatal(err)
	}
	local := cfg.context("local")
	if cfg.CurrentContext != "local" || local == nil || *local != (contextEntry{Name: "local", AWSRegion: "eu-west-1",
		EndpointURL: "http://localhost:8000", ManagementCluster: "mc-local", ClusterID: "c-10", TaskKey: "task-9", TablePrefix: "dev-"}) {
		t.Fatalf("config file:\n%s", data)
	}
	for _, key := range []string{"current-context: local", "aws-region:", "endpoint-url:", "management-cluster:", "cluster-id:", "task-key:", "table-prefix:"} {
		if !strings.Contains(string(data), key) {
			t.Errorf("config file lacks %q:\n%s", key, data)
		}
	}

	out, errOut, code := h.run("config", "delete-context", "local")
	assertExit(t, code, 0, errOut)
	if !strings.HasPrefix(out, "deleted context local from ") || !strings.Contains(errOut, "warning: this removed your current context") {
		t.Fatalf("delete-context: %q %q", out, errOut)
	}
	_, errOut, code = h.run("config", "current-context")
	assertExit(t, code, exitUsage, errOut)
	if errOut != "error: current-context is not set\n" {
		t.Fatalf("stderr %q", errOut)
	}
}

func TestConfigErrors(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"config", "use-context", "nope"}, `error: context "nope" not found in ` + h.configPath + "\n"},
		{[]string{"config", "delete-context", "nope"}, `error: context "nope" not found in ` + h.configPath + "\n"},
		{[]string{"config", "set-context"}, "error: accepts 1 arg(s), received 0; see 'desirectl config set-context --help'\n"},
		{[]string{"get", "configmaps", "--context", "nope"}, `error: context "nope" not found in ` + h.configPath + "\n"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, errOut, code := h.run(tc.args...)
			assertExit(t, code, exitUsage, errOut)
			if errOut != tc.want {
				t.Fatalf("stderr %q, want %q", errOut, tc.want)
			}
		})
	}
}

func TestConfigPathPrecedence(t *testing.T) {
	h := newHarness(t)
	other := filepath.Join(h.dir, "other.yaml")
	h.mustRun("--config", other, "config", "set-context", "x", "--management-cluster", "m")
	if got := h.mustRun("--config", other, "config", "get-contexts"); !strings.Contains(got, " x ") || strings.Contains(got, "test") {
		t.Fatalf("--config file: %q", got)
	}
	// Without --config and $DESIRECTL_CONFIG: <user config dir>/desirectl/config.yaml.
	delete(h.env, configEnv)
	h.mustRun("config", "set-context", "y", "--management-cluster", "m")
	if _, err := os.Stat(filepath.Join(h.dir, "userconfig", "desirectl", "config.yaml")); err != nil {
		t.Fatal(err)
	}
}

func TestGlobalFlagsOverrideContext(t *testing.T) {
	h := newHarness(t)
	var got settings
	a := newApp(nil, nil, nil)
	a.setupLogs = testLogs // klog stays on e2eKlog (integration_test.go)
	a.getenv = func(k string) string { return h.env[k] }
	a.root = a.newRootCommand()
	a.root.SetArgs([]string{"--management-cluster", "other", "--table-prefix", "", "--endpoint-url", "http://x", "config"})
	a.root.SetOut(&strings.Builder{})
	if err := a.root.Execute(); err != nil {
		t.Fatal(err)
	}
	got, err := a.settings()
	if err != nil {
		t.Fatal(err)
	}
	want := settings{contextEntry{Name: "test", AWSRegion: "us-east-1", EndpointURL: "http://x", ManagementCluster: "other", ClusterID: testCluster}}
	if got != want {
		t.Fatalf("settings %+v, want %+v", got, want)
	}
	if tk, _ := got.desireTaskKey(); tk != testCluster {
		t.Fatalf("task key %q", tk)
	}
}
