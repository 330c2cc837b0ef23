package kubeapplier

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestIsTransient(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"500", apierrors.NewInternalError(errors.New("boom")), true},
		{"429", apierrors.NewTooManyRequests("slow down", 1), true},
		{"timeout", apierrors.NewTimeoutError("t", 1), true},
		{"conflict", apierrors.NewConflict(gr, "c", errors.New("x")), true},
		{"namespace not found", apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "n"), true},
		{"terminating namespace", apierrors.NewForbidden(gr, "c", errors.New("unable to create new content in namespace n because it is being terminated")), true},
		{"rbac forbidden", apierrors.NewForbidden(gr, "c", errors.New("user cannot patch")), false},
		{"400", apierrors.NewBadRequest("bad"), false},
		{"422", apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "c", nil), false},
		{"413", apierrors.NewRequestEntityTooLargeError("big"), false},
		{"network", errors.New("connection refused"), true},
		{"schema mismatch", apierrors.NewInternalError(errors.New(`failed to create typed patch object (/x; /v1, Kind=ConfigMap): .data.a: expected string, got &value.valueUnstructured{Value:1}`)), false},
	}
	for _, tc := range cases {
		if got := isTransient(tc.err); got != tc.want {
			t.Errorf("%s: isTransient = %v, want %v", tc.name, got, tc.want)
		}
	}
}
