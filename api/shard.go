package api

import (
	"strconv"
	"strings"
)

// Index-poll backends find status changes through a global secondary index of every status
// table: partition key `shard` (S, "0"-"3"), sort key `updateTime` (S, RFC 3339).
const (
	// StatusIndexName is the status tables' GSI, keyed by AttrShard (S) and `updateTime` (S).
	StatusIndexName = "updateTime-index"
	// AttrShard is the status document's top-level attribute holding its shard: a decimal
	// string (S) "0".."3", see StatusShard. Every status document the applier writes carries
	// it ("0" when the documentID is no UUID), so every status is in the index.
	AttrShard = "shard"
	// StatusCheckIndexName is the status tables' narrow GSI the applier's periodic status
	// check Scans instead of the table (a Scan is billed by the size of the items read: a
	// status mirroring a 100 KB object costs 25 read units in a table Scan, ~200 bytes here).
	// Keyed by AttrShard (S) and `updateTime` (S) like StatusIndexName, it projects
	// `version` and `applierTerm` only (INCLUDE), besides the keys and `documentID`.
	StatusCheckIndexName = "statusCheck-index"
	// StatusShards is how many shards the index spreads status documents over: a poller
	// queries shards "0" to "3".
	StatusShards = 4
)

// StatusShard returns the shard of the status document documentID: its first 8 hex digits
// once hyphens are removed, read as a number, modulo StatusShards. A UUID's "7b1fdb4e-decf-..."
// gives 0x7b1fdb4e % 4 = 2; case does not matter. ok is false when the ID does not start with
// 8 hex digits (not a UUID): such a document is in shard 0 (shard is 0), so that it is in the
// indexes too. The attribute stores strconv.Itoa(shard) as S.
func StatusShard(documentID string) (shard int, ok bool) {
	digits := strings.ReplaceAll(documentID, "-", "")
	if len(digits) < 8 {
		return 0, false
	}
	n, err := strconv.ParseUint(digits[:8], 16, 32)
	if err != nil {
		return 0, false
	}
	return int(n % StatusShards), true
}
