package api

import "testing"

// TestStatusShardDigits: the cases of the applier's own test (moved from the root's
// shard_test.go), computed by hand.
func TestStatusShardDigits(t *testing.T) {
	// Computed by hand: the first 8 hex digits without hyphens, as a number, modulo 4 (the
	// last two bits of the 8th digit).
	tests := []struct {
		id    string
		shard int
		ok    bool
	}{
		{"7b1fdb4e-decf-5d4c-a307-6718bada47d7", 2, true}, // 0x7b1fdb4e = 2065685326; ...4e = 78 = 4*19+2
		{"ef461ccc-f3c9-5c36-95fc-3187f1cc60ba", 0, true}, // ...cc = 204 = 4*51
		{"EF461CCD-F3C9-5C36-95FC-3187F1CC60BA", 1, true}, // upper case: ...cd = 205
		{"ab-cd-ef-01-23", 1, true},                       // hyphens removed first: abcdef01
		{"00000003", 3, true},                             // exactly 8 digits
		{"ffffffffffffffff", 3, true},                     // only the first 8 count
		{"12345678-0000", 0, true},                        // 0x78 = 120
		{"1234567", 0, false},                             // fewer than 8 digits
		{"1234567g-0000", 0, false},                       // not hex
		{"+1234567-0000", 0, false},                       // a sign is not a digit
		{"_heartbeat", 0, false},                          // reserved IDs are in no shard
		{"task-1", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, ok := StatusShard(tt.id)
		if got != tt.shard || ok != tt.ok {
			t.Errorf("StatusShard(%q) = %d, %v; want %d, %v", tt.id, got, ok, tt.shard, tt.ok)
		}
	}
}

func TestStatusShard(t *testing.T) {
	tests := []struct {
		id    string
		shard int
		ok    bool
	}{
		{"7b1fdb4e-decf-5d4c-a307-6718bada47d7", 2, true},
		{"EF461CCD-0000-5000-8000-000000000000", 1, true},
		{"ffffffff-ffff", 3, true},
		{"task-1", 0, false},
		{HeartbeatID, 0, false},
		{"1234567", 0, false},
	}
	for _, tt := range tests {
		if got, ok := StatusShard(tt.id); got != tt.shard || ok != tt.ok {
			t.Errorf("StatusShard(%q) = %d, %v; want %d, %v", tt.id, got, ok, tt.shard, tt.ok)
		}
	}
}
