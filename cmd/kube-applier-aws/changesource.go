package main

import (
	"fmt"

	"github.com/kube-applier-aws/kubeapplier"
)

// source is the change source --change-source names, with its periods: an unknown name, or a
// period the library would replace by its default (zero or negative) or that leaves no room
// for a poll between relists, is refused.
func (f flags) source() (kubeapplier.ChangeSource, error) {
	switch f.changeSource {
	case "streams":
		return kubeapplier.StreamsSource{}, nil
	case "index-poll":
		if f.indexPollPeriod <= 0 {
			return nil, fmt.Errorf("--index-poll-period must be over 0, not %s", f.indexPollPeriod)
		}
		if f.indexRelistPeriod < f.indexPollPeriod {
			return nil, fmt.Errorf("--index-relist-period (%s) must be at least --index-poll-period (%s)", f.indexRelistPeriod, f.indexPollPeriod)
		}
		return kubeapplier.IndexPollSource{PollPeriod: f.indexPollPeriod, RelistPeriod: f.indexRelistPeriod}, nil
	}
	return nil, fmt.Errorf("--change-source must be streams or index-poll, not %q", f.changeSource)
}
