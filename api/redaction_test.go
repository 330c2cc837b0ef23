package api

import (
	"encoding/base64"
	"testing"
)

// TestRedactedValue holds the placeholder to what readers of statuses (desirectl, backends)
// compare against: base64 of "REDACTED".
func TestRedactedValue(t *testing.T) {
	if got := RedactedValue; got != base64.StdEncoding.EncodeToString([]byte("REDACTED")) {
		t.Fatalf("RedactedValue = %q", got)
	}
}
