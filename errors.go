package kubeapplier

import (
	"errors"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/awscall"
	"github.com/kube-applier-aws/kubeapplier/internal/reconcile"
	"github.com/kube-applier-aws/kubeapplier/internal/stream"
)

// Sentinel errors of the DynamoDB layer: the api module's values, so errors.Is works across
// both. Test with errors.Is or the Is*Error helpers; the AWS error stays reachable with
// errors.As. Since the table layer moved to internal/tables, only the root's tests use
// ErrAlreadyExists, ErrPreconditionFailed, ErrItemTooLarge, ItemTooLargeError,
// IsAlreadyExistsError and IsPreconditionFailedError: drop them once those tests moved (issue
// #39; api.ErrAlreadyExists etc.).
var (
	// ErrNotFound: no item with that documentID.
	ErrNotFound = api.ErrNotFound
	// ErrAlreadyExists: Create found an item with that documentID.
	ErrAlreadyExists = api.ErrAlreadyExists
	// ErrPreconditionFailed: Replace was given a Version that is no longer the stored one.
	ErrPreconditionFailed = api.ErrPreconditionFailed
	// ErrItemTooLarge: the encoded item exceeds MaxItemSize; see ItemTooLargeError.
	ErrItemTooLarge = api.ErrItemTooLarge
)

// ItemTooLargeError is returned, before any call, for an item over DynamoDB's 400 KB limit
// (api.ItemTooLargeError: Table, DocumentID, Size and Limit in bytes).
type ItemTooLargeError = api.ItemTooLargeError

// IsNotFoundError reports whether err wraps ErrNotFound.
func IsNotFoundError(err error) bool { return errors.Is(err, ErrNotFound) }

// IsAlreadyExistsError reports whether err wraps ErrAlreadyExists.
func IsAlreadyExistsError(err error) bool { return errors.Is(err, ErrAlreadyExists) }

// IsPreconditionFailedError reports whether err wraps ErrPreconditionFailed.
func IsPreconditionFailedError(err error) bool { return errors.Is(err, ErrPreconditionFailed) }

// ErrInvalidItem is wrapped by decode errors: a DynamoDB item that is not a valid desire
// (missing documentID, attributes of the wrong type, kubeContent that is not JSON).
var ErrInvalidItem = api.ErrInvalidItem

// ErrStreamNotConfigured is returned at start-up for a specs table without a stream, or with a
// view type other than NEW_AND_OLD_IMAGES (the applier needs both images of every change).
var ErrStreamNotConfigured = stream.ErrStreamNotConfigured

// ErrTableNotFound: a table the applier needs does not exist (create it, e.g. with EnsureTables).
var ErrTableNotFound = awscall.ErrTableNotFound

// ErrLeaseGivenUp: a replica that held a Lease gave it up because its start-up check failed
// Options.StartupChecksHoldingLease times in a row (the check's last error is wrapped too).
var ErrLeaseGivenUp = errors.New("lease given up: the start-up check kept failing")

// ErrInvalidOptions is wrapped by every error New returns for bad Options.
var ErrInvalidOptions = errors.New("invalid options")

// PreCheckError is a desire refused before any API call; Message says why in words a person
// can act on. It is permanent until the spec changes. (Defined by the default reconcilers,
// internal/reconcile.)
type PreCheckError = reconcile.PreCheckError

// ErrKindNotServed: the cluster's discovery does not know the kind or resource (yet).
var ErrKindNotServed = reconcile.ErrKindNotServed
