package reconcile

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/kubecall"
	"github.com/kube-applier-aws/kubeapplier/internal/target"
)

// applyFunc is a server-side apply of obj as fieldManager: forced (Kube.Apply) or not
// (kubecall.UnforcedApplier).
type applyFunc func(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, fieldManager string) (*unstructured.Unstructured, error)

// applyVerb returns how d is applied: with force (the default), or without it when
// spec.forceConflicts is false (#40), so that a field another manager owns is a 409 Conflict
// and not taken; its drift repairs too. A Kube without ApplyUnforced cannot serve such a
// desire: an error wrapping kubecall.ErrNoOptionVerb (never a forced apply instead).
func (r *Apply) applyVerb(d *api.ApplyDesire) (applyFunc, error) {
	if d.Spec.ForcesConflicts() {
		return r.kube.Apply, nil
	}
	u, ok := r.kube.(kubecall.UnforcedApplier)
	if !ok {
		return nil, fmt.Errorf("%w (ApplyUnforced)", kubecall.ErrNoOptionVerb)
	}
	return u.ApplyUnforced, nil
}

// noVerbVerdict refuses an apply the Kube cannot make as the desire asks (err wraps
// kubecall.ErrNoOptionVerb); ok is false for any other err.
func noVerbVerdict(ref string, err error) (controller.Verdict, bool) {
	if !errors.Is(err, kubecall.ErrNoOptionVerb) {
		return controller.Verdict{}, false
	}
	return controller.Refused(api.ReasonKubeAPIError, fmt.Sprintf("server-side apply of %s cannot be made: %v; "+
		"spec.forceConflicts false needs it, nothing was written (never a forced apply instead)", ref, err)), true
}

// conflictPaths is how many field paths of a 409 an ApplyConflict message names.
const conflictPaths = 5

// conflictManager finds the manager in an apiserver's FieldManagerConflict cause message:
// `conflict with "kubectl-edit" using v1` (with `with subresource "scale"` for a manager of a
// subresource).
var conflictManager = regexp.MustCompile(`conflict with "([^"]*)"`)

// conflictVerdict is the verdict of an unforced apply that the apiserver refused with 409
// Conflict for fields other managers own (StatusCauses of type FieldManagerConflict: the
// manager in each cause's message, the field path in its Field): Refused(ApplyConflict), not
// Degraded and not retried with back-off, naming the managers and the first paths. The
// desire is registered on its target's watch (t, what), so it is looked at again when the
// object changes (another manager giving the fields up), and at the resync. ok is false for
// any other error.
func (r *Apply) conflictVerdict(d *api.ApplyDesire, t api.TargetItem, ref string, what target.Interest, err error) (controller.Verdict, bool) {
	managers, paths, ok := fieldConflicts(err)
	if !ok {
		return controller.Verdict{}, false
	}
	if r.drift != nil {
		r.drift.Observe(d.DocumentID, t, what)
	}
	return controller.Refused(api.ReasonApplyConflict, conflictMessage(ref, managers, paths)), true
}

// fieldConflicts returns the managers (in order of first mention) and field paths of a 409
// apply conflict; ok is false when err is no such conflict.
func fieldConflicts(err error) (managers, paths []string, ok bool) {
	var se apierrors.APIStatus
	if !apierrors.IsConflict(err) || !errors.As(err, &se) || se.Status().Details == nil {
		return nil, nil, false
	}
	seen := map[string]bool{}
	for _, c := range se.Status().Details.Causes {
		if c.Type != metav1.CauseTypeFieldManagerConflict {
			continue
		}
		ok = true
		if m := conflictManager.FindStringSubmatch(c.Message); m != nil && !seen[m[1]] {
			seen[m[1]] = true
			managers = append(managers, m[1])
		}
		if c.Field != "" {
			paths = append(paths, c.Field)
		}
	}
	return managers, paths, ok
}

// conflictMessage is the ApplyConflict message (docs/contract.md's wording).
func conflictMessage(ref string, managers, paths []string) string {
	quoted := make([]string, len(managers))
	for i, m := range managers {
		quoted[i] = fmt.Sprintf("%q", m)
	}
	who := "field managers " + strings.Join(quoted, ", ")
	if len(managers) == 0 {
		who = "other field managers"
	}
	over := ""
	if len(paths) > 0 {
		shown := paths
		if len(shown) > conflictPaths {
			shown = shown[:conflictPaths]
		}
		over = " over " + strings.Join(shown, ", ")
		if more := len(paths) - len(shown); more > 0 {
			over += fmt.Sprintf(" and %d more", more)
		}
	}
	return fmt.Sprintf("server-side apply of %s conflicts with %s%s (spec.forceConflicts is false: their fields are not taken)", ref, who, over)
}
