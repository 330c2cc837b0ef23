package main

// The applier's change source (issue #41 item 4) as the harness starts it: -change-source,
// -index-poll-period and the sources scenario's -sources.

import (
	"fmt"
	"strings"
	"time"

	kubeapplier "github.com/kube-applier-aws/kubeapplier"
)

// changeSource is one change source of the applier (issue #41 item 4), as the binary's flags
// name it.
type changeSource struct {
	Name       string        `json:"name"`                  // "streams" or "index-poll" (--change-source)
	PollPeriod time.Duration `json:"poll_period,omitempty"` // index-poll: --index-poll-period (0: the binary's default)
}

// String is the source as the result rows name it: "streams", "index-poll 15s (default)",
// "index-poll 1s".
func (s changeSource) String() string {
	switch {
	case s.Name != "index-poll":
		return s.Name
	case s.PollPeriod == 0:
		return fmt.Sprintf("index-poll %s (default)", kubeapplier.DefaultIndexPollPeriod)
	default:
		return "index-poll " + s.PollPeriod.String()
	}
}

// period is the poll period in effect (0 for streams).
func (s changeSource) period() time.Duration {
	switch {
	case s.Name != "index-poll":
		return 0
	case s.PollPeriod == 0:
		return kubeapplier.DefaultIndexPollPeriod
	default:
		return s.PollPeriod
	}
}

// flags are the applier's flags for s: none for streams, so an applier of the default source
// starts exactly as before the flag existed.
func (s changeSource) flags() []string {
	if s.Name != "index-poll" {
		return nil
	}
	f := []string{"--change-source=index-poll"}
	if s.PollPeriod > 0 {
		f = append(f, "--index-poll-period="+s.PollPeriod.String())
	}
	return f
}

// parseSources reads -sources: "streams", "index-poll" (its default periods) or
// "index-poll:<poll period>", comma-separated, in order.
func parseSources(list string) ([]changeSource, error) {
	var out []changeSource
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		name, period, hasPeriod := strings.Cut(f, ":")
		switch {
		case f == "":
			continue
		case name == "streams" && !hasPeriod:
			out = append(out, changeSource{Name: name})
		case name == "index-poll" && !hasPeriod:
			out = append(out, changeSource{Name: name})
		case name == "index-poll":
			d, err := time.ParseDuration(period)
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("-sources %q: %q: the poll period must be a positive duration", list, f)
			}
			out = append(out, changeSource{Name: name, PollPeriod: d})
		default:
			return nil, fmt.Errorf("-sources %q: %q is not streams, index-poll or index-poll:<period>", list, f)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-sources %q: no source named", list)
	}
	return out, nil
}
