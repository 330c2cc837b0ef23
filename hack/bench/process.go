package main

// One kube-applier-aws process: stop, kill, its log.

import (
	"os"
	"os/exec"
	"syscall"
	"time"
)

// applierProc is one kube-applier-aws process.
type applierProc struct {
	name    string
	cmd     *exec.Cmd
	pid     int
	logPath string
	started time.Time
	exited  chan struct{}
	exitErr error
}

// stop sends SIGTERM and waits, then SIGKILL.
func (p *applierProc) stop(grace time.Duration) {
	if p == nil {
		return
	}
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

func (p *applierProc) gone() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *applierProc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// logSince returns what the applier's log gained after offset, and the new offset.
func logSince(path string, offset int64) (string, int64) {
	f, err := os.Open(path)
	if err != nil {
		return "", offset
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() <= offset {
		return "", offset
	}
	buf := make([]byte, st.Size()-offset)
	n, _ := f.ReadAt(buf, offset)
	return string(buf[:n]), offset + int64(n)
}

func logSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}
