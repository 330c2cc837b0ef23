package kubeapplier

import (
	"errors"
	"fmt"
	"github.com/kube-applier-aws/kubeapplier/api"
	"testing"
)

// TestSentinelErrors: each Is*Error helper recognises its sentinel through wrapping and
// nothing else; ItemTooLargeError is ErrItemTooLarge and says both sizes.
func TestSentinelErrors(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("context: %w", err) }
	checks := []struct {
		name string
		is   func(error) bool
		err  error
	}{
		{"IsNotFoundError", IsNotFoundError, ErrNotFound},
		{"IsAlreadyExistsError", IsAlreadyExistsError, api.ErrAlreadyExists},
		{"IsPreconditionFailedError", IsPreconditionFailedError, api.ErrPreconditionFailed},
	}
	for _, c := range checks {
		if !c.is(wrap(c.err)) {
			t.Errorf("%s does not see a wrapped %v", c.name, c.err)
		}
		for _, other := range checks {
			if other.err != c.err && c.is(other.err) {
				t.Errorf("%s takes %v for its own", c.name, other.err)
			}
		}
	}
	big := &api.ItemTooLargeError{Table: "t", DocumentID: "d", Size: 409601, Limit: api.MaxItemSize}
	if !errors.Is(wrap(big), api.ErrItemTooLarge) || errors.Is(big, ErrNotFound) {
		t.Fatal("ItemTooLargeError is not ErrItemTooLarge (only)")
	}
	if msg := big.Error(); msg != "item d for table t is 409601 bytes, over DynamoDB's item limit of 409600 bytes" {
		t.Fatalf("message %q", msg)
	}
	if pc := (&PreCheckError{Message: "kubeContent is empty"}); pc.Error() != "kubeContent is empty" {
		t.Fatalf("PreCheckError message %q", pc.Error())
	}
}
