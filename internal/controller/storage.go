package controller

import (
	"context"
	"errors"
	"time"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
)

// Lister reads desires from an informer's cache (no DynamoDB call).
type Lister[T api.Desire] interface {
	// Get returns the cached desire with that documentID, or api.ErrNotFound.
	Get(id string) (T, error)
	// List returns every cached desire.
	List() []T
}

// SpecReader reads a specs table with consistent reads: is a spec really gone, which
// incarnation and version is current?
type SpecReader[T api.Desire] interface {
	// Get returns the desire with that documentID, api.ErrNotFound, or an error wrapping
	// api.ErrInvalidItem for an item that does not decode.
	Get(ctx context.Context, id string) (T, error)
}

// StatusTable reads and writes one status table (the root package's ResourceCRUD: its
// errors are the api module's sentinels).
type StatusTable[T api.Desire] interface {
	Get(ctx context.Context, id string) (T, error)
	List(ctx context.Context) ([]T, error)
	Create(ctx context.Context, d T) (T, error)
	Replace(ctx context.Context, d T) (T, error)
	Delete(ctx context.Context, id string) error
	ListIDs(ctx context.Context) ([]string, error)
}

// WriteMark identifies one write of a status document: its version and updateTime as stored
// (RFC 3339). A document deleted and put back by someone else at the same version has
// another updateTime.
type WriteMark struct {
	Version    int64
	UpdateTime string
}

// is reports whether the write mark is m's: the same version and updateTime.
func (st WriteMark) is(m *api.DynamoDBMetadata) bool {
	if st.Version != m.Version {
		return false
	}
	u, err := time.Parse(time.RFC3339Nano, st.UpdateTime)
	return err == nil && u.Equal(m.UpdateTime)
}

// DefaultReconcileTime bounds one reconcile with its status write when Config does not.
const DefaultReconcileTime = 30 * time.Second

// term is the leadership term (internal/fencing: every rule that fences the applier's writes).
type term = fencing.Term

func isNotFound(err error) bool           { return errors.Is(err, api.ErrNotFound) }
func isAlreadyExists(err error) bool      { return errors.Is(err, api.ErrAlreadyExists) }
func isPreconditionFailed(err error) bool { return errors.Is(err, api.ErrPreconditionFailed) }
