package controller

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Condition messages are read by people: they lead with what failed and why (the reconcilers
// build them so: "server-side apply of ConfigMap ns/name failed: <the apiserver's reason>"),
// and they stay small. compactMessage enforces the size for every message that reaches a
// status, whoever built it: a long token (an object's name, a digest, a blob without spaces)
// is shortened in its middle, where it says least, and a message still longer than
// MaxMessageBytes loses its middle, never its head (what failed) nor its tail (the
// apiserver's reason, a streak's note).

// MaxMessageBytes bounds a condition message (1 KiB).
const MaxMessageBytes = 1024

// longToken is a run of characters without a delimiter, long enough to shorten.
var longToken = regexp.MustCompile(`[^\s"'/:,;=(){}\[\]<>` + "`" + `]{` + fmt.Sprint(longTokenRunes+1) + `,}`)

const (
	longTokenRunes = 100 // a token longer than this is shortened (a long DNS name stays whole)
	tokenKeepRunes = 40  // runes kept at each end of a shortened token
)

// compactMessage returns s within MaxMessageBytes, valid UTF-8, with long tokens shortened in
// their middle ("head…tail (N bytes)") and, when still too long, its middle cut. It is
// idempotent: a compacted message is returned as it is.
func compactMessage(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = longToken.ReplaceAllStringFunc(s, func(tok string) string {
		if utf8.RuneCountInString(tok) <= longTokenRunes {
			return tok // a byte-long run of few runes
		}
		r := []rune(tok)
		return fmt.Sprintf("%s…%s (%d bytes)", string(r[:tokenKeepRunes]), string(r[len(r)-tokenKeepRunes:]), len(tok))
	})
	if len(s) <= MaxMessageBytes {
		return s
	}
	// Keep 40% at the head and the rest at the tail (the reason comes last).
	cut := fmt.Sprintf(" …[%d bytes cut]… ", len(s)) // an upper bound of the count, fixed width
	room := MaxMessageBytes - len(cut)
	head, tail := runePrefix(s, room*2/5), runeSuffix(s, room-room*2/5)
	return head + fmt.Sprintf(" …[%d bytes cut]… ", len(s)-len(head)-len(tail)) + tail
}

// runePrefix is the longest prefix of s of at most n bytes that ends on a rune boundary.
func runePrefix(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// runeSuffix is the longest suffix of s of at most n bytes that starts on a rune boundary.
func runeSuffix(s string, n int) string {
	if n >= len(s) {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}
