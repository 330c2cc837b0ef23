package main

import (
	"strings"
	"testing"
)

func TestFairnessModes(t *testing.T) {
	for rounds, want := range map[int]string{1: "fifo fair", 2: "fifo fair fair fifo", 3: "fifo fair fair fifo fifo fair"} {
		if got := strings.Join(fairnessModes(rounds), " "); got != want {
			t.Errorf("fairnessModes(%d) = %s, want %s", rounds, got, want)
		}
	}
}
