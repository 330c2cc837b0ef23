package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBuildSpeaksTheContract: desirectl's build takes of this repository the api module (and
// the small shared packages of cmd/internal and internal/awslog), never the applier's package:
// no Prometheus, leader election or kstatus in the CLI (issue #39).
func TestBuildSpeaksTheContract(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		switch {
		case dep == "github.com/kube-applier-aws/kubeapplier",
			strings.Contains(dep, "prometheus"), strings.Contains(dep, "leaderelection"), strings.Contains(dep, "cli-utils"):
			t.Errorf("desirectl depends on %s", dep)
		}
	}
}
