package api

import (
	"errors"
	"fmt"
)

// Sentinel errors. Test with errors.Is; the AWS error stays reachable with errors.As. The
// applier's package (kubeapplier) re-exports the same values, so errors.Is works across both.
var (
	// ErrNotFound: no item with that documentID.
	ErrNotFound = errors.New("desire not found")
	// ErrAlreadyExists: Create found an item with that documentID.
	ErrAlreadyExists = errors.New("desire already exists")
	// ErrPreconditionFailed: Replace or DeleteIf was given a Version that is no longer the
	// stored one.
	ErrPreconditionFailed = errors.New("desire version precondition failed")
	// ErrItemTooLarge: the encoded item exceeds MaxItemSize; see ItemTooLargeError.
	ErrItemTooLarge = errors.New("desire item too large")
	// ErrInvalidItem: an item does not decode as a desire (or the heartbeat): a missing or
	// mistyped attribute; or Create, Replace, Delete or DeleteIf refused, before any call, a
	// desire no applier would answer: an empty or reserved documentID (IsReservedID), an
	// ApplyDesire without kubeContent.
	ErrInvalidItem = errors.New("invalid desire item")
	// ErrStatusIndexOutdated: EnsureTables with WithStatusIndex found a status table whose
	// updateTime-index has a `shard` hash key of type N (releases before the key became S). An
	// index cannot change its key type in place: delete the index (or move to a new table) and
	// run EnsureTables again (docs/operating.md "Index-poll backends").
	ErrStatusIndexOutdated = errors.New("status index has an outdated key type")
)

// ItemTooLargeError is returned, before any call, for an item over DynamoDB's 400 KB limit.
type ItemTooLargeError struct {
	Table      string
	DocumentID string
	Size       int // bytes, as DynamoDB counts them
	Limit      int // bytes
}

func (e *ItemTooLargeError) Error() string {
	return fmt.Sprintf("item %s for table %s is %d bytes, over DynamoDB's item limit of %d bytes", e.DocumentID, e.Table, e.Size, e.Limit)
}

// Is makes errors.Is(err, ErrItemTooLarge) true.
func (e *ItemTooLargeError) Is(target error) bool { return target == ErrItemTooLarge }
