package kubeapplier

import (
	"strings"
	"testing"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
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
			if len(got) > maxMessageBytes || !utf8.ValidString(got) {
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

// TestLongNameMessageKeepsTheReason: an ApplyDesire whose object has a 300,000-character name
// is refused by the apiserver, which quotes the name three times; the condition leads with
// what failed, stays within 1 KiB and keeps the apiserver's reason.
func TestLongNameMessageKeepsTheReason(t *testing.T) {
	name := strings.Repeat("a", 300000)
	kube := newFakeKube()
	kube.errs["apply"] = apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, name, field.ErrorList{
		field.Invalid(field.NewPath("metadata", "name"), name, "must be no more than 253 characters")})
	h := newHarness[*ApplyDesire](KindApplyDesire, NewApplyReconciler(kube, newMapper(), "fm"))
	_, st := h.sync(t, applyDesire("long", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+name+`","namespace":"ns"}}`))
	for _, c := range st.Status.Conditions {
		if len(c.Message) > maxMessageBytes {
			t.Fatalf("%s message has %d bytes", c.Type, len(c.Message))
		}
	}
	msg := condition(st, ConditionSuccessful).Message
	for _, want := range []string{"server-side apply of ConfigMap ns/aaaa", "(300000 bytes)", "must be no more than 253 characters"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("message lacks %q: %s", want, msg)
		}
	}
	if !strings.HasPrefix(msg, "server-side apply of ConfigMap") {
		t.Fatalf("message does not lead with what failed: %s", msg)
	}
}
