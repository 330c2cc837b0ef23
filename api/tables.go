package api

import "strings"

// DesireKind names a desire type; table names use it lower-cased with an "s"
// ("applydesires").
type DesireKind string

// The three desire kinds.
const (
	KindApplyDesire  DesireKind = "ApplyDesire"
	KindDeleteDesire DesireKind = "DeleteDesire"
	KindReadDesire   DesireKind = "ReadDesire"
)

// DesireKinds lists every kind, in a stable order.
var DesireKinds = []DesireKind{KindApplyDesire, KindDeleteDesire, KindReadDesire}

// TableKind is "specs" (written by the backend, read by the applier) or "status" (written by
// the applier only).
type TableKind string

// The two table kinds.
const (
	SpecsTable  TableKind = "specs"
	StatusTable TableKind = "status"
)

// HeartbeatID is the documentID of the heartbeat: one document per management cluster in its
// ApplyDesire status table, which a backend can already read. Reserved (IsReservedID), it is
// no status: listings of status tables skip it, and it has no `shard`, so it is in no index.
const HeartbeatID = "_heartbeat"

// IsReservedID reports whether documentID is reserved for the applier's own documents (the
// heartbeat, HeartbeatID): every documentID starting with "_". A reserved ID is never a
// desire: status listings skip it, and a spec that uses one is ignored (it gets no status).
func IsReservedID(documentID string) bool { return strings.HasPrefix(documentID, "_") }
