// Package intern shares equal strings between the many small records the applier keeps per
// object and per desire (namespaces, field managers, condition reasons): one copy of each
// value instead of one per record.
package intern

import "sync"

// Strings is a set of interned strings; the zero value is ready to use and safe for
// concurrent use. It only grows: intern values from a small vocabulary.
type Strings struct {
	mu sync.Mutex
	m  map[string]string
}

// Intern returns the set's copy of s, adding s when it has none.
func (in *Strings) Intern(s string) string {
	if s == "" {
		return ""
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if v, ok := in.m[s]; ok {
		return v
	}
	if in.m == nil {
		in.m = map[string]string{}
	}
	in.m[s] = s
	return s
}
