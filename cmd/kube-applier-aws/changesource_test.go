package main

import (
	"strings"
	"testing"
	"time"

	"github.com/kube-applier-aws/kubeapplier"
)

// TestChangeSourceFlags: --change-source picks the library's source with the periods given,
// defaulting to the streams and to upstream's periods; an unknown source or periods the
// library would not run as asked are refused, naming the flag.
func TestChangeSourceFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want kubeapplier.ChangeSource
		err  string
	}{
		{nil, kubeapplier.StreamsSource{}, ""},
		{[]string{"--change-source=streams"}, kubeapplier.StreamsSource{}, ""},
		{[]string{"--change-source=index-poll"}, kubeapplier.IndexPollSource{PollPeriod: kubeapplier.DefaultIndexPollPeriod, RelistPeriod: kubeapplier.DefaultIndexRelistPeriod}, ""},
		{[]string{"--change-source=index-poll", "--index-poll-period=1s", "--index-relist-period=30s"}, kubeapplier.IndexPollSource{PollPeriod: time.Second, RelistPeriod: 30 * time.Second}, ""},
		{[]string{"--change-source=sqs"}, nil, "--change-source must be streams or index-poll"},
		{[]string{"--change-source=index-poll", "--index-poll-period=0s"}, nil, "--index-poll-period must be over 0"},
		{[]string{"--change-source=index-poll", "--index-poll-period=1m", "--index-relist-period=30s"}, nil, "--index-relist-period (30s) must be at least"},
	} {
		var f flags
		if err := newCommand(&f).Flags().Parse(append([]string{"--management-cluster", "mc01"}, tc.args...)); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		got, err := f.source()
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: err %v, want %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%v: source %#v, %v; want %#v", tc.args, got, err, tc.want)
		}
	}
}
