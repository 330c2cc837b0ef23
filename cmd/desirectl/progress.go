package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// isTerminal reports whether w is a terminal (progress is shown there, never in a pipe or file).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progressWidth bounds the progress line, which is rewritten in place.
const progressWidth = 160

// progress rewrites one line on a terminal (stderr) while a wait runs: elapsed time, how many
// desires are done, and where each pending one stands (counted by state when there are many).
// On anything but a terminal it prints nothing.
type progress struct {
	w     io.Writer // nil: not a terminal
	shown bool
}

func (a *app) newProgress() *progress {
	if a.isTerminal == nil || !a.isTerminal(a.stderr) {
		return &progress{}
	}
	return &progress{w: a.stderr}
}

// show replaces the line with the state of the wait.
func (p *progress) show(elapsed, timeout time.Duration, total int, pending []*waitItem, want conditionWant) {
	if p.w == nil {
		return
	}
	line := fmt.Sprintf("waiting %s of %s: %d/%d done; ", elapsed.Round(time.Second), timeout, total-len(pending), total)
	if len(pending) <= 3 {
		var parts []string
		for _, it := range pending {
			parts = append(parts, it.ref()+" "+pendingState(it, want))
		}
		line += strings.Join(parts, "; ")
	} else {
		counts := map[string]int{}
		for _, it := range pending {
			counts[pendingState(it, want)]++
		}
		states := make([]string, 0, len(counts))
		for s := range counts {
			states = append(states, s)
		}
		sort.Slice(states, func(i, j int) bool {
			if counts[states[i]] != counts[states[j]] {
				return counts[states[i]] > counts[states[j]]
			}
			return states[i] < states[j]
		})
		var parts []string
		for _, s := range states {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
		line += fmt.Sprintf("%d pending: %s", len(pending), strings.Join(parts, ", "))
	}
	if len(line) > progressWidth {
		line = line[:progressWidth-1] + "…"
	}
	fmt.Fprint(p.w, "\r\033[K"+line)
	p.shown = true
}

// clear erases the line, before anything else is printed and when the wait ends.
func (p *progress) clear() {
	if p.w != nil && p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}

// pendingState is a pending desire's state in a few words: "no status yet", "status of an
// earlier spec", or the condition's status and reason.
func pendingState(it *waitItem, want conditionWant) string {
	if it.last == nil {
		return "no status yet"
	}
	s := it.last.StatusCommon()
	c := s.Condition(want.typ)
	switch {
	case c == nil:
		return "no " + want.typ + " condition yet"
	case !answers(s, c, &it.spec):
		return "status of an earlier spec"
	}
	st := c.Type + "=" + string(c.Status)
	if s.IsTrue(api.ConditionDegraded) {
		st += " Degraded"
	}
	if c.Reason != "" {
		st += " " + c.Reason
	}
	return st
}
