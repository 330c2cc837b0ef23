package main

// CPU and memory of processes and cores, read from /proc.

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// procStats are one reading of /proc/PID.
type procStats struct {
	RSSKiB, HWMKiB int64
	CPUSeconds     float64
	Threads        int64
}

var clkTck = func() float64 {
	if out, err := exec.Command("getconf", "CLK_TCK").Output(); err == nil {
		if v, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64); err == nil && v > 0 {
			return v
		}
	}
	return 100
}()

// readProc reads pid's RSS, peak RSS and threads (/proc/PID/status) and CPU time
// (/proc/PID/stat).
func readProc(pid int) (procStats, error) {
	var s procStats
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	sc := bufio.NewScanner(strings.NewReader(string(status)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			s.RSSKiB = v
		case "VmHWM:":
			s.HWMKiB = v
		case "Threads:":
			s.Threads = v
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// Fields after the command name (which may hold spaces) start at field 3 (state);
	// utime and stime are fields 14 and 15.
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return s, errors.New("unexpected /proc/PID/stat")
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return s, errors.New("short /proc/PID/stat")
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	s.CPUSeconds = (ut + st) / clkTck
	return s, nil
}

// selfCPU is this process's CPU time (user + system), in seconds.
func selfCPU() float64 {
	s, err := readProc(os.Getpid())
	if err != nil {
		return 0
	}
	return s.CPUSeconds
}

// cpuPerItem is the CPU each process spent between two stackCPU readings, in ms per item,
// by name: only processes read both times (the same pid).
func cpuPerItem(before, after map[string]float64, n int) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if v0, ok := before[k]; ok && n > 0 && v >= v0 {
			name, _, _ := strings.Cut(k, " ")
			out[name] = math.Round(1e5*(v-v0)/float64(n)) / 100
		}
	}
	return out
}

// cpuSeconds is the CPU each process spent between two stackCPU readings (seconds), by name;
// a process first read in after (started in between) counts all its CPU.
func cpuSeconds(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		name, _, _ := strings.Cut(k, " ")
		out[name] = math.Round(100*(v-before[k])) / 100
	}
	return out
}

// cpuBreakdown spells a cpuPerItem or cpuSeconds reading: "applier 1.52, kube-apiserver 2.10,
// ... ms".
func cpuBreakdown(m map[string]float64, unit string) string {
	var parts []string
	for _, k := range []string{"applier", "harness", "kube-apiserver", "etcd", "dynamodb"} {
		if v, ok := m[k]; ok {
			parts = append(parts, fmt.Sprintf("%s %.2f", k, v))
		}
	}
	return strings.Join(parts, ", ") + " " + unit
}

// coreTicks reads /proc/stat's first line: the ticks all cores spent busy and in all (idle
// and iowait count as not busy). The share busy between two readings says whether the
// machine's cores were saturated.
func coreTicks() (busy, all float64) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, 0
	}
	// user nice system idle iowait irq softirq steal guest guest_nice: guest time is counted in
	// user and nice already, and idle and iowait are not busy.
	for i, s := range f[1:min(len(f), 9)] {
		v, _ := strconv.ParseFloat(s, 64)
		all += v
		if i != 3 && i != 4 {
			busy += v
		}
	}
	return busy, all
}

// busyShare is the share of the cores' time spent busy between two coreTicks readings.
func busyShare(busy0, all0, busy1, all1 float64) float64 {
	if all1 <= all0 {
		return math.NaN()
	}
	return (busy1 - busy0) / (all1 - all0)
}

// loadavg is /proc/loadavg's 1, 5 and 15 minute averages ("" when unreadable).
func loadavg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	fs := strings.Fields(string(raw))
	if len(fs) < 3 {
		return ""
	}
	return strings.Join(fs[:3], " ")
}
