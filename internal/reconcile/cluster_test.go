package reconcile

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-applier-aws/kubeapplier/api"
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
		// kube-apiserver v1.37 answers 500 for invalid base64 in a Secret's data.
		{"invalid base64 in a Secret", apierrors.NewInternalError(errors.New(`failed to convert new object (default/s; /v1, Kind=Secret) to proper version: unable to convert unstructured object to /v1, Kind=Secret: error decoding from json: illegal base64 data at input byte 3`)), false},
	}
	for _, tc := range cases {
		if got := isTransient(tc.err); got != tc.want {
			t.Errorf("%s: isTransient = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestNotFoundKinds(t *testing.T) {
	cases := []struct {
		name             string
		err              error
		object, typeGone bool
	}{
		{"object", apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "c1"), true, false},
		{"another object", apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "c2"), false, false},
		{"namespace", apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "c1"), false, false},
		{"resource type", apierrors.NewGenericServerResponse(404, "get", schema.GroupResource{Group: "example.com", Resource: "widgets"}, "", "the server could not find the requested resource", 0, false), false, true},
		{"no details", &apierrors.StatusError{ErrStatus: metav1.Status{Code: 404, Reason: metav1.StatusReasonNotFound}}, false, true},
		{"not a 404", apierrors.NewInternalError(errors.New("x")), false, false},
		{"nil", nil, false, false},
	}
	for _, tc := range cases {
		if got := objectNotFound(tc.err, "c1"); got != tc.object {
			t.Errorf("%s: objectNotFound = %v, want %v", tc.name, got, tc.object)
		}
		if got := resourceNotServed(tc.err); got != tc.typeGone {
			t.Errorf("%s: resourceNotServed = %v, want %v", tc.name, got, tc.typeGone)
		}
		// The readiness check's read: nil and no error only for the object's own NotFound.
		if tc.err == nil {
			continue
		}
		kube := getErrKube{tc.err}
		u, err := getTarget(kube)(context.Background(), api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "n", Name: "c1"})
		if gone := u == nil && err == nil; gone != tc.object || (!tc.object && !errors.Is(err, tc.err)) {
			t.Errorf("%s: getTarget = %v, %v; want gone %v, else the error", tc.name, u, err, tc.object)
		}
	}
}
