package controller

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestCompactMessage: every message is at most 1 KiB of valid UTF-8, long tokens are
// shortened in their middle, the head (what failed) and the tail (the reason) are kept, and
// compacting twice changes nothing.
func TestCompactMessage(t *testing.T) {
	long := strings.Repeat("a", 300000) + "-end"
	cases := []struct {
		name string
		in   string
		keep []string // must appear in the compacted message
		gone []string // must not
	}{
		{"short message unchanged", "applied ConfigMap ns/cm", []string{"applied ConfigMap ns/cm"}, nil},
		{"long name in the middle of a sentence", "server-side apply of ConfigMap ns/" + long + " failed: must be no more than 253 characters",
			[]string{"server-side apply of ConfigMap ns/aaaa", "a-end (300004 bytes)", "failed: must be no more than 253 characters"}, []string{strings.Repeat("a", 100)}},
		{"many long tokens: the middle is cut, head and reason kept", "deleting widgets " + strings.Repeat(long[:60]+" ", 200) + "failed: the reason",
			[]string{"deleting widgets", "bytes cut", "failed: the reason"}, nil},
		{"one long run of multibyte runes", "x " + strings.Repeat("é", 1000) + " failed: why",
			[]string{"x éééé", "(2000 bytes)", "failed: why"}, nil},
		{"long sentence of short words", strings.Repeat("word ", 2000) + "because of this",
			[]string{"word word", "because of this"}, nil},
		{"invalid UTF-8", "bad \xff\xfe byte", []string{"bad", "byte"}, []string{"\xff"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := compactMessage(tc.in)
			if len(got) > MaxMessageBytes || !utf8.ValidString(got) {
				t.Fatalf("%d bytes (valid UTF-8: %t): %.200q", len(got), utf8.ValidString(got), got)
			}
			for _, k := range tc.keep {
				if !strings.Contains(got, k) {
					t.Errorf("lost %q: %q", k, got)
				}
			}
			for _, g := range tc.gone {
				if strings.Contains(got, g) {
					t.Errorf("kept %.40q: %.300q", g, got)
				}
			}
			if again := compactMessage(got); again != got {
				t.Errorf("not idempotent:\n%q\n%q", got, again)
			}
		})
	}
}
