package kubeapplier

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-applier-aws/kubeapplier/internal/fencing"
)

// Every call to the kube-apiserver gets a deadline (Options.CallTimeout), as DynamoDB and
// Streams calls do (internal/awscall): a hung call cannot hold a reconcile, a term or a
// shutdown for ever. deadlineKube puts it on whatever KubeClient Options holds, the caller's
// own included; it also refuses mutations of a term that may be over (fencing.ErrFenced) and ends each
// within the term's expiry (internal/fencing), so none lands after another process may lead.

type deadlineKube struct {
	kube    KubeClient
	timeout time.Duration
}

func (d deadlineKube) Apply(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, fieldManager string) (*unstructured.Unstructured, error) {
	ctx, cancel, err := fencing.Of(ctx).CallContext(ctx, d.timeout)
	if err != nil {
		return nil, err
	}
	defer cancel()
	return d.kube.Apply(ctx, gvr, obj, fieldManager)
}

func (d deadlineKube) Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	return d.kube.Get(ctx, gvr, namespace, name)
}

func (d deadlineKube) Delete(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, uid types.UID) error {
	ctx, cancel, err := fencing.Of(ctx).CallContext(ctx, d.timeout)
	if err != nil {
		return err
	}
	defer cancel()
	return d.kube.Delete(ctx, gvr, namespace, name, uid)
}

// ReplaceManagedFields passes the call to the wrapped client when it has the method: a
// mutation like Apply, refused in a term that may be over and ended within its expiry.
func (d deadlineKube) ReplaceManagedFields(ctx context.Context, gvr schema.GroupVersionResource, namespace, name, resourceVersion string, fields []metav1.ManagedFieldsEntry) error {
	ed, ok := d.kube.(managedFieldsEditor)
	if !ok {
		return errNoManagedFieldsEditor
	}
	ctx, cancel, err := fencing.Of(ctx).CallContext(ctx, d.timeout)
	if err != nil {
		return err
	}
	defer cancel()
	return ed.ReplaceManagedFields(ctx, gvr, namespace, name, resourceVersion, fields)
}
