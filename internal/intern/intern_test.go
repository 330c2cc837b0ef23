package intern

import (
	"testing"
	"unsafe"
)

func TestInternSharesOneCopy(t *testing.T) {
	var in Strings
	a := in.Intern(string([]byte("kube-system")))
	b := in.Intern(string([]byte("kube-system")))
	if a != b || unsafe.StringData(a) != unsafe.StringData(b) {
		t.Fatalf("two interned copies of one value: %p, %p", unsafe.StringData(a), unsafe.StringData(b))
	}
	if c := in.Intern("default"); c != "default" || unsafe.StringData(c) == unsafe.StringData(a) {
		t.Fatalf("Intern(default) = %q, sharing another value's bytes", c)
	}
	if in.Intern("") != "" || len(in.m) != 2 {
		t.Fatalf("the empty string was added: %d values", len(in.m))
	}
}
