// Package kubecall is the middleware of every call the applier makes to the kube-apiserver,
// as internal/awscall is for DynamoDB and Streams: a deadline on each call, the term's fence
// on each cluster change (internal/fencing), and the counters of the requests the clients
// built from a RESTConfig send.
package kubecall

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
)

// Client is the applier's cluster client (the root package's KubeClient).
type Client interface {
	Apply(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, fieldManager string) (*unstructured.Unstructured, error)
	Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error)
	Delete(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, uid types.UID, resourceVersion string) error
}

// ManagedFieldsEditor is the optional Client method that replaces an object's managedFields.
type ManagedFieldsEditor interface {
	ReplaceManagedFields(ctx context.Context, gvr schema.GroupVersionResource, namespace, name, resourceVersion string, fields []metav1.ManagedFieldsEntry) error
}

// ErrNoManagedFieldsEditor: the Client has no ReplaceManagedFields method.
var ErrNoManagedFieldsEditor = errors.New("the KubeClient cannot edit managedFields (no ReplaceManagedFields method)")

// The optional Client methods below carry out desire options (docs/contract.md "Desire
// options"); a Client without one cannot serve the option, and its desires are refused with
// ErrNoOptionVerb (wrapped, naming the method), never carried out with the default verb.

// ErrNoOptionVerb: the Client lacks the optional method a desire option needs.
var ErrNoOptionVerb = errors.New("the KubeClient has no method for this desire option")

// UnforcedApplier is the optional Client method that server-side applies without force:
// fields other managers own are not taken, the apiserver answers 409 Conflict instead
// (spec.forceConflicts false).
type UnforcedApplier interface {
	ApplyUnforced(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, fieldManager string) (*unstructured.Unstructured, error)
}

// Creator is the optional Client method that creates obj (POST) with fieldManager; an object
// that exists is an AlreadyExists *apierrors.StatusError (spec.applyPolicy CreateOnly).
type Creator interface {
	Create(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, fieldManager string) (*unstructured.Unstructured, error)
}

// PropagatingDeleter is the optional Client method that deletes like Client.Delete (uid and
// resourceVersion preconditions) with the given propagation policy (spec.propagationPolicy).
type PropagatingDeleter interface {
	DeleteWithPropagation(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, uid types.UID, resourceVersion string, propagation metav1.DeletionPropagation) error
}

// WithDeadline returns kube whose every call has a deadline of timeout: a hung call cannot
// hold a reconcile, a term or a shutdown for ever. Its mutations (Apply, Delete,
// ReplaceManagedFields) are refused in a term that may be over (fencing.ErrFenced) and end
// within the term's expiry, so none lands after another process may lead. term returns the
// term the applier leads (the last one it led, once over); nil, or a zero Term: no fence.
func WithDeadline(kube Client, timeout time.Duration, term func() fencing.Term) Client {
	if term == nil {
		term = func() fencing.Term { return fencing.Term{} }
	}
	return deadlineClient{kube: kube, timeout: timeout, term: term}
}

type deadlineClient struct {
	kube    Client
	timeout time.Duration
	term    func() fencing.Term
}

func (d deadlineClient) Apply(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, fieldManager string) (*unstructured.Unstructured, error) {
	ctx, cancel, err := d.term().CallContext(ctx, d.timeout)
	if err != nil {
		return nil, err
	}
	defer cancel()
	return d.kube.Apply(ctx, gvr, obj, fieldManager)
}

func (d deadlineClient) Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	return d.kube.Get(ctx, gvr, namespace, name)
}

func (d deadlineClient) Delete(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, uid types.UID, resourceVersion string) error {
	ctx, cancel, err := d.term().CallContext(ctx, d.timeout)
	if err != nil {
		return err
	}
	defer cancel()
	return d.kube.Delete(ctx, gvr, namespace, name, uid, resourceVersion)
}

// ReplaceManagedFields passes the call to the wrapped client when it has the method: a
// mutation like Apply, refused in a term that may be over and ended within its expiry.
func (d deadlineClient) ReplaceManagedFields(ctx context.Context, gvr schema.GroupVersionResource, namespace, name, resourceVersion string, fields []metav1.ManagedFieldsEntry) error {
	ed, ok := d.kube.(ManagedFieldsEditor)
	if !ok {
		return ErrNoManagedFieldsEditor
	}
	ctx, cancel, err := d.term().CallContext(ctx, d.timeout)
	if err != nil {
		return err
	}
	defer cancel()
	return ed.ReplaceManagedFields(ctx, gvr, namespace, name, resourceVersion, fields)
}

// ApplyUnforced passes the call to the wrapped client when it has the method (else
// ErrNoOptionVerb): a mutation like Apply.
func (d deadlineClient) ApplyUnforced(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, fieldManager string) (*unstructured.Unstructured, error) {
	a, ok := d.kube.(UnforcedApplier)
	if !ok {
		return nil, fmt.Errorf("%w (ApplyUnforced)", ErrNoOptionVerb)
	}
	ctx, cancel, err := d.term().CallContext(ctx, d.timeout)
	if err != nil {
		return nil, err
	}
	defer cancel()
	return a.ApplyUnforced(ctx, gvr, obj, fieldManager)
}

// Create passes the call to the wrapped client when it has the method (else ErrNoOptionVerb):
// a mutation like Apply.
func (d deadlineClient) Create(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, fieldManager string) (*unstructured.Unstructured, error) {
	c, ok := d.kube.(Creator)
	if !ok {
		return nil, fmt.Errorf("%w (Create)", ErrNoOptionVerb)
	}
	ctx, cancel, err := d.term().CallContext(ctx, d.timeout)
	if err != nil {
		return nil, err
	}
	defer cancel()
	return c.Create(ctx, gvr, obj, fieldManager)
}

// DeleteWithPropagation passes the call to the wrapped client when it has the method (else
// ErrNoOptionVerb): a mutation like Delete.
func (d deadlineClient) DeleteWithPropagation(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, uid types.UID, resourceVersion string, propagation metav1.DeletionPropagation) error {
	pd, ok := d.kube.(PropagatingDeleter)
	if !ok {
		return fmt.Errorf("%w (DeleteWithPropagation)", ErrNoOptionVerb)
	}
	ctx, cancel, err := d.term().CallContext(ctx, d.timeout)
	if err != nil {
		return err
	}
	defer cancel()
	return pd.DeleteWithPropagation(ctx, gvr, namespace, name, uid, resourceVersion, propagation)
}
