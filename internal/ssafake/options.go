package ssafake

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ApplyUnforced implements kubecall.UnforcedApplier: a server-side apply without force. Like
// the apiserver, a data key another manager owns with another value is a 409 Conflict whose
// StatusCauses (FieldManagerConflict) name the manager (`conflict with "m" using v1`) and
// the field (`.data.key`); nothing is changed. Without a conflict it applies as Apply does.
func (k *Kube) ApplyUnforced(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, fm string) (*unstructured.Unstructured, error) {
	k.mu.Lock()
	live, err := k.Object(obj.GetNamespace(), obj.GetName())
	if err != nil && !apierrors.IsNotFound(err) {
		k.mu.Unlock()
		return nil, err
	}
	var causes []metav1.StatusCause
	if err == nil {
		data, _, _ := unstructured.NestedStringMap(live.Object, "data")
		want, _, _ := unstructured.NestedStringMap(obj.Object, "data")
		for m, keys := range ownership(live) {
			manager := strings.SplitN(m, "|", 2)[0]
			if m == fm+"|Apply|" {
				continue
			}
			for _, key := range keys {
				if v, ok := want[key]; ok && v != data[key] {
					causes = append(causes, metav1.StatusCause{Type: metav1.CauseTypeFieldManagerConflict,
						Message: fmt.Sprintf("conflict with %q using v1", manager), Field: ".data." + key})
				}
			}
		}
	}
	k.mu.Unlock()
	if len(causes) > 0 {
		sort.Slice(causes, func(i, j int) bool { return causes[i].Field < causes[j].Field })
		return nil, apierrors.NewApplyConflict(causes, fmt.Sprintf("Apply failed with %d conflicts", len(causes)))
	}
	return k.Apply(ctx, gvr, obj, fm)
}

// Create implements kubecall.Creator: an object that exists is AlreadyExists; else it is
// stored as Apply stores a new one (its fields owned by fm).
func (k *Kube) Create(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, fm string) (*unstructured.Unstructured, error) {
	k.mu.Lock()
	_, err := k.Object(obj.GetNamespace(), obj.GetName())
	k.mu.Unlock()
	switch {
	case err == nil:
		return nil, apierrors.NewAlreadyExists(gvr.GroupResource(), obj.GetName())
	case !apierrors.IsNotFound(err):
		return nil, err
	}
	return k.Apply(ctx, gvr, obj, fm)
}
