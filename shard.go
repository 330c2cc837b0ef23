package kubeapplier

import (
	"github.com/kube-applier-aws/kubeapplier/api"
)

// Index-poll backends find status changes through a global secondary index of every status
// table (docs/operating.md "Index-poll backends"): partition key `shard` (S, "0"-"3"), sort key
// `updateTime` (S). Backends of this design query `shard = :s` with :s of type S: the key must
// be a string.
const (
	// StatusIndexName is the status tables' GSI that EnsureTables creates with
	// WithStatusIndex: keyed by attrShard and updateTime (api.StatusIndexName).
	StatusIndexName = api.StatusIndexName
	// StatusCheckIndexName is the status tables' narrow GSI the periodic status check Scans
	// (api.StatusCheckIndexName); EnsureTables creates it on every status table.
	StatusCheckIndexName = api.StatusCheckIndexName
	// attrShard is the status document's shard for the GSI: a decimal string "0"-"3" (S).
	attrShard = api.AttrShard
	// attrUpdateTime is the document's last write time (RFC 3339, UTC), the GSI's sort key.
	attrUpdateTime = api.AttrUpdateTime
)

// StatusShard (only the root's tests use it: drop for api.StatusShard, issue #39) returns the `shard` of the status document documentID (api.StatusShard): its
// first 8 hex digits once hyphens are removed, read as a number, modulo 4; ok is false when
// the ID does not start with 8 hex digits: such a document is in shard 0.
func StatusShard(documentID string) (shard int, ok bool) { return api.StatusShard(documentID) }

// IsReservedID reports whether documentID is reserved for the applier's own documents (the
// heartbeat, HeartbeatID): every documentID starting with "_" (api.IsReservedID). A reserved
// ID is never a desire: status listings skip it, and a spec that uses one is ignored.
func IsReservedID(documentID string) bool { return api.IsReservedID(documentID) }
