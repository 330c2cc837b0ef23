package main

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestProcessCPU(t *testing.T) {
	// Burn a little CPU so the reading of this process is above zero.
	x := 0
	for i := range 50_000_000 {
		x += i % 7
	}
	got, err := processCPU(strconv.Itoa(os.Getpid()))
	if err != nil || got <= 0 {
		t.Fatalf("processCPU(self) = %v, %v; want > 0 s, no error (x=%d)", got, err, x)
	}
	if _, err := processCPU("999999999"); err == nil {
		t.Error("processCPU of a pid that does not exist: no error")
	}
}

func TestRunRefusesBadInput(t *testing.T) {
	pidFile := t.TempDir() + "/dynamodb.pid"
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Every case fails before any request: the port below is never dialled.
	const endpoint = "http://127.0.0.1:1"
	for _, tc := range []struct {
		name, records, endpoint, pidFile string
		calls                            int
		want                             string
	}{
		{"no endpoint", "10", "", pidFile, 1, "no -dynamodb-endpoint"},
		{"no pid file", "10", endpoint, pidFile + ".missing", 1, "DynamoDB Local's pid"},
		{"not a count", "10,x", endpoint, pidFile, 1, `-records: "x" is not a count`},
		{"negative", "-5", endpoint, pidFile, 1, `-records: "-5" is not a count`},
		{"no calls", "10", endpoint, pidFile, 0, "-calls: 0, want at least 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(tc.records, tc.calls, tc.endpoint, tc.pidFile)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("run(%q, %d) = %v; want an error containing %q", tc.records, tc.calls, err, tc.want)
			}
		})
	}
}
