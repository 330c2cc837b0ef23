package main

import (
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestProcessCPUAgreesWithGetrusage(t *testing.T) {
	x := 0
	for i := range 200_000_000 {
		x += i % 7
	}
	got, err := processCPU(os.Getpid())
	var ru syscall.Rusage
	if rerr := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); rerr != nil {
		t.Fatal(rerr)
	}
	want := float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
	// /proc counts in clock ticks (10 ms), rusage in µs, read a moment apart.
	if err != nil || math.Abs(got-want) > 0.05 || got <= 0 {
		t.Fatalf("processCPU(self) = %v s, %v; getrusage says %v s (x=%d)", got, err, want, x)
	}
	if _, err := processCPU(999999999); err == nil {
		t.Error("processCPU of a pid that does not exist: no error")
	}
}

func TestRunRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	notDynamo := write("self.pid", strconv.Itoa(os.Getpid())+"\n") // the test binary: not DynamoDB Local
	garbage := write("garbage.pid", "abc\n")
	// Every case fails before any request: the port below is never dialled.
	const endpoint = "http://127.0.0.1:1"
	for _, tc := range []struct {
		name, records, endpoint, pidFile string
		plain, calls                     int
		want                             string
	}{
		{"no endpoint", "10", "", notDynamo, 0, 1, "no -dynamodb-endpoint"},
		{"no pid file", "10", endpoint, dir + "/missing.pid", 0, 1, "DynamoDB Local's pid"},
		{"pid not a number", "10", endpoint, garbage, 0, 1, `holds "abc"`},
		{"pid of another process", "10", endpoint, notDynamo, 0, 1, "is another process"},
		{"not a count", "10,x", endpoint, notDynamo, 0, 1, `-records: "x" is not a count`},
		{"negative", "-5", endpoint, notDynamo, 0, 1, `-records: "-5" is not a count`},
		{"negative items", "10", endpoint, notDynamo, -1, 1, "-items-without-stream: -1"},
		{"no calls", "10", endpoint, notDynamo, 0, 0, "-calls: 0, want at least 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(tc.records, tc.plain, tc.calls, tc.endpoint, tc.pidFile)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("run(%q, %d, %d) = %v; want an error containing %q", tc.records, tc.plain, tc.calls, err, tc.want)
			}
		})
	}
}
