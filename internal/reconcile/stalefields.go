package reconcile

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-applier-aws/kubeapplier/internal/kubecall"
)

// managedFields entries keep the apiVersion they were written at. Once a CRD stops serving
// that version, every apply of the object fails ("request to convert CR to an invalid
// group/version", kubernetes/kubernetes#111937) for good. The ApplyDesire reconciler repairs
// it as controllers that apply for a living do: it removes the entries of the version named,
// under a resourceVersion precondition, and applies again. When that is not possible the
// desire reports StaleFieldOwners naming the version and the managers, retried with back-off:
// it is neither the desire's fault nor the applier's.

// staleVersionError matches the apiserver's refusal and captures the group/version.
var staleVersionError = regexp.MustCompile(`request to convert CR to an invalid group/version: ([A-Za-z0-9.\-]+/[A-Za-z0-9\-]+)`)

// staleVersion returns the group/version an apply failed to convert to, if err is that failure.
func staleVersion(err error) (string, bool) {
	if err == nil {
		return "", false
	}
	m := staleVersionError.FindStringSubmatch(err.Error())
	if m == nil {
		return "", false
	}
	return m[1], true
}

// errKeepOthersStale: an unforced apply does not remove other managers' stale entries.
var errKeepOthersStale = errors.New("not removed: spec.forceConflicts is false, and removing another manager's entries would take its fields")

// staleRepairAttempts bounds the remove-and-apply rounds of one reconcile (one per stale
// version the apiserver names).
const staleRepairAttempts = 3

// applyRepairingStaleFields applies obj with apply (forced or not, applyVerb); when the apiserver refuses it for managedFields of a
// version no longer served, it removes those entries and applies again. note says what was
// removed ("" when nothing); stale is set when the refusal remains, with what blocks it.
// Unforced (spec.forceConflicts false), only the applier's own entries are removed: removing
// another manager's would hand its fields to the apply, the take-over the desire refused.
func (r *Apply) applyRepairingStaleFields(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, apply applyFunc, unforced bool) (live *unstructured.Unstructured, note string, stale error, err error) {
	var removed []string
	for attempt := 0; ; attempt++ {
		live, err = apply(ctx, gvr, obj, r.fieldManager)
		gv, isStale := staleVersion(err)
		if !isStale {
			if len(removed) > 0 && err == nil {
				note = "; removed managedFields entries at apiVersions the cluster no longer serves, which blocked every apply: " + strings.Join(removed, ", ")
			}
			return live, note, nil, err
		}
		if attempt == staleRepairAttempts {
			return nil, "", fmt.Errorf("managedFields entries at %s still block the apply after %d removals", gv, attempt), err
		}
		managers, rerr := r.removeStaleEntries(ctx, gvr, obj.GetNamespace(), obj.GetName(), gv, unforced)
		if rerr != nil {
			who := "their managers"
			if len(managers) > 0 {
				who = strings.Join(managers, ", ")
			}
			how := "removing them failed"
			if errors.Is(rerr, errKeepOthersStale) {
				how = "they are"
			}
			return nil, "", fmt.Errorf("managedFields entries of %s at %s, which the cluster no longer serves, make the apiserver refuse every apply "+
				"(kubernetes/kubernetes#111937); %s: %w", who, gv, how, rerr), err
		}
		for _, m := range managers {
			removed = append(removed, m+" at "+gv)
		}
	}
}

// removeStaleEntries removes the object's managedFields entries at apiVersion gv, under a
// resourceVersion precondition, and returns their managers ("manager (Update)"). ownOnly
// (an unforced apply): an entry of another manager is not removed, and nothing is
// (errKeepOthersStale).
func (r *Apply) removeStaleEntries(ctx context.Context, gvr schema.GroupVersionResource, namespace, name, gv string, ownOnly bool) ([]string, error) {
	cur, err := r.kube.Get(ctx, gvr, namespace, name)
	if err != nil {
		return nil, fmt.Errorf("reading the object: %w", err)
	}
	var keep []metav1.ManagedFieldsEntry
	var managers []string
	others := false
	for _, e := range cur.GetManagedFields() {
		if e.APIVersion == gv {
			others = others || e.Manager != r.fieldManager
			who := e.Manager + " (" + string(e.Operation)
			if e.Subresource != "" {
				who += " through /" + e.Subresource
			}
			managers = append(managers, who+")")
			continue
		}
		keep = append(keep, e)
	}
	if len(managers) == 0 {
		return nil, nil // gone meanwhile: the next apply tells
	}
	if ownOnly && others {
		return managers, errKeepOthersStale
	}
	ed, ok := r.kube.(kubecall.ManagedFieldsEditor) // DynamicKube has it
	if !ok {
		return managers, kubecall.ErrNoManagedFieldsEditor
	}
	if err := ed.ReplaceManagedFields(ctx, gvr, namespace, name, cur.GetResourceVersion(), keep); err != nil {
		return managers, err
	}
	return managers, nil
}
