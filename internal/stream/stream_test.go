package stream

import (
	"testing"
	"time"
)

// TestOptionsWithDefaults: zero durations take the defaults (the poll interval under
// DynamoDB's 5 GetRecords per second per shard), given ones stay.
func TestOptionsWithDefaults(t *testing.T) {
	got := Options{}.WithDefaults()
	if got.PollInterval != DefaultPollInterval || got.DiscoveryInterval != 10*time.Second || got.MaxBackoff != 10*time.Second || got.CallTimeout != 10*time.Second {
		t.Fatalf("defaults = %+v", got)
	}
	if time.Second/DefaultPollInterval >= 5 {
		t.Fatalf("DefaultPollInterval %v: %d GetRecords/s per shard, want under 5", DefaultPollInterval, time.Second/DefaultPollInterval)
	}
	given := Options{PollInterval: time.Second, DiscoveryInterval: time.Minute, MaxBackoff: 3 * time.Second, CallTimeout: time.Millisecond}
	if got := given.WithDefaults(); got.PollInterval != given.PollInterval || got.DiscoveryInterval != given.DiscoveryInterval || got.MaxBackoff != given.MaxBackoff || got.CallTimeout != given.CallTimeout {
		t.Fatalf("WithDefaults(%+v) = %+v: given durations changed", given, got)
	}
}
