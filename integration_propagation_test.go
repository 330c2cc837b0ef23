package kubeapplier

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/testenv"
)

// createFamily creates ConfigMap owner and its two dependents owner-a and owner-b, each with
// an ownerReference to the owner's uid that blocks its foreground deletion; owner-a carries
// finalizers (e.g. one the test removes later). It returns the dependents' names.
func (e *e2e) createFamily(owner string, finalizersOfA ...string) []string {
	e.t.Helper()
	e.createConfigMap(owner, map[string]string{"role": "owner"})
	live, err := e.getConfigMap(owner)
	if err != nil {
		e.t.Fatal(err)
	}
	deps := []string{owner + "-a", owner + "-b"}
	for i, name := range deps {
		var u unstructured.Unstructured
		var fins []string
		if i == 0 {
			fins = finalizersOfA
		}
		_ = json.Unmarshal([]byte(e.configMap(name, map[string]string{"role": "dependent"}, fins...)), &u.Object)
		block := true
		u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner, UID: live.GetUID(), BlockOwnerDeletion: &block}})
		if _, err := e.dyn.Resource(cmGVR).Namespace(e.ns).Create(context.Background(), &u, metav1.CreateOptions{}); err != nil {
			e.t.Fatal(err)
		}
	}
	return deps
}

// putDeleteWith writes DeleteDesire id of ConfigMap name with spec.propagationPolicy policy
// ("" leaves it absent).
func (e *e2e) putDeleteWith(id, name, policy string) {
	e.t.Helper()
	d := deleteDesire(id, TargetItem{Version: "v1", Resource: "configmaps", Namespace: e.ns, Name: name})
	d.Spec.PropagationPolicy = policy
	if _, err := e.deleteS.Create(context.Background(), d); err != nil {
		e.t.Fatal(err)
	}
}

// configMapGone reports whether ConfigMap name is gone (NotFound).
func (e *e2e) configMapGone(name string) bool {
	_, err := e.getConfigMap(name)
	return apierrors.IsNotFound(err)
}

// describeConfigMaps describes ConfigMaps names as they are now, for a failure message.
func (e *e2e) describeConfigMaps(names ...string) func() string {
	return func() string {
		var parts []string
		for _, n := range names {
			live, err := e.getConfigMap(n)
			if err != nil {
				parts = append(parts, fmt.Sprintf("%s: %v", n, err))
				continue
			}
			parts = append(parts, fmt.Sprintf("%s: deletionTimestamp %v finalizers %v ownerReferences %d",
				n, live.GetDeletionTimestamp(), live.GetFinalizers(), len(live.GetOwnerReferences())))
		}
		return strings.Join(parts, "; ")
	}
}

// TestIntegrationPropagation: spec.propagationPolicy of DeleteDesires against a real garbage
// collector (kube-controller-manager, started by this test only: the stack runs none).
// Foreground: the owner waits (WaitingForDeletion naming the collector's foregroundDeletion
// and the dependent left) while a dependent is held by a finalizer, and is Successful only once the owner and its
// dependents are gone. Orphan: the owner goes, its dependents stay without their
// ownerReferences, also when another delete was already deleting the owner in the background
// (the desire's own delete swaps the finalizers; the message says so). Background (absent):
// the owner goes, the collector deletes its dependents.
func TestIntegrationPropagation(t *testing.T) {
	e := startE2E(t, nil)
	gc := testenv.StartControllerManager(t, "garbagecollector")
	gc.WaitSynced(t, 90*time.Second)
	const gcTimeout = 60 * time.Second

	t.Run("Foreground", func(t *testing.T) {
		e.t = t
		deps := e.createFamily("fg", "example.com/hold")
		e.putDeleteWith("fg", "fg", api.PropagationForeground)
		st := waitCondition(e, e.specs.DeleteDesireStatus(), "fg", 1, ConditionFalse, ReasonWaitingForDeletion, 30*time.Second)
		msg := condition(st, ConditionSuccessful).Message
		t.Logf("waiting: %s", msg)
		if !strings.Contains(msg, "waiting for the garbage collector to delete its dependents") || !strings.Contains(msg, "foregroundDeletion") {
			t.Fatalf("message %q does not name the foreground deletion", msg)
		}
		// The dependent held by its finalizer is left for as long as the test holds it: every
		// listing of the blocking dependents before the finalizer's removal names it.
		if !strings.Contains(msg, "dependents left: ") || !strings.Contains(msg, "ConfigMap "+deps[0]) {
			t.Fatalf("message %q does not name the dependent left %s", msg, deps[0])
		}
		// The collector deletes the free dependent, and the held one waits for its finalizer:
		// the owner stays, with its foregroundDeletion finalizer.
		waitFor(t, gcTimeout, "the collector to delete fg-b and mark fg-a deleted", func() bool {
			a, err := e.getConfigMap(deps[0])
			return err == nil && a.GetDeletionTimestamp() != nil && e.configMapGone(deps[1])
		}, e.describeConfigMaps(append([]string{"fg"}, deps...)...))
		owner, err := e.getConfigMap("fg")
		if err != nil || owner.GetDeletionTimestamp() == nil || !strings.Contains(strings.Join(owner.GetFinalizers(), ","), "foregroundDeletion") {
			t.Fatalf("owner while a dependent is held: %v, %v", e.describeConfigMaps("fg")(), err)
		}
		st = waitCondition(e, e.specs.DeleteDesireStatus(), "fg", 1, ConditionFalse, ReasonWaitingForDeletion, 10*time.Second)
		if c := condition(st, ConditionSuccessful); !strings.Contains(c.Message, "foregroundDeletion") || !strings.Contains(c.Message, "ConfigMap "+deps[0]) {
			t.Fatalf("still waiting: %q", c.Message)
		}
		e.removeFinalizers(cmGVR, deps[0])
		waitCondition(e, e.specs.DeleteDesireStatus(), "fg", 1, ConditionTrue, ReasonNoErrors, gcTimeout)
		for _, n := range append([]string{"fg"}, deps...) {
			if !e.configMapGone(n) {
				t.Fatalf("Successful=True while %s is left: %s", n, e.describeConfigMaps(n)())
			}
		}
	})

	t.Run("Orphan", func(t *testing.T) {
		e.t = t
		deps := e.createFamily("or")
		e.putDeleteWith("or", "or", api.PropagationOrphan)
		waitCondition(e, e.specs.DeleteDesireStatus(), "or", 1, ConditionTrue, ReasonNoErrors, gcTimeout)
		if !e.configMapGone("or") {
			t.Fatalf("Successful=True while the owner is there: %s", e.describeConfigMaps("or")())
		}
		// The collector removed the ownerReferences before it let the owner go.
		for _, n := range deps {
			live, err := e.getConfigMap(n)
			if err != nil {
				t.Fatalf("dependent %s of an Orphan delete: %v", n, err)
			}
			if live.GetDeletionTimestamp() != nil || len(live.GetOwnerReferences()) != 0 {
				t.Fatalf("dependent %s not orphaned: %s", n, e.describeConfigMaps(n)())
			}
		}
		// And they stay: nothing collects them later.
		time.Sleep(2 * time.Second)
		for _, n := range deps {
			if e.configMapGone(n) {
				t.Fatalf("dependent %s of an Orphan delete was collected", n)
			}
		}
	})

	t.Run("Orphan, the owner already deleted in the background by another", func(t *testing.T) {
		e.t = t
		deps := e.createFamily("ob")
		// Another writer deletes the owner in the background; a finalizer holds it there.
		hold := []byte(`{"metadata":{"finalizers":["example.com/hold"]}}`)
		if _, err := e.dyn.Resource(cmGVR).Namespace(e.ns).Patch(context.Background(), "ob", "application/merge-patch+json", hold, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		background := metav1.DeletePropagationBackground
		if err := e.dyn.Resource(cmGVR).Namespace(e.ns).Delete(context.Background(), "ob", metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
			t.Fatal(err)
		}
		e.putDeleteWith("ob", "ob", api.PropagationOrphan)
		st := waitCondition(e, e.specs.DeleteDesireStatus(), "ob", 1, ConditionFalse, ReasonWaitingForDeletion, 30*time.Second)
		msg := condition(st, ConditionSuccessful).Message
		t.Logf("waiting: %s", msg)
		if !strings.Contains(msg, "was already being deleted by another delete; this desire's delete with propagationPolicy Orphan was sent") {
			t.Fatalf("message %q does not say the owner was already being deleted", msg)
		}
		// The collector orphans the dependents while the owner is held.
		waitFor(t, gcTimeout, "the collector to orphan the dependents", func() bool {
			for _, n := range deps {
				if live, err := e.getConfigMap(n); err != nil || len(live.GetOwnerReferences()) != 0 {
					return false
				}
			}
			return true
		}, e.describeConfigMaps(append([]string{"ob"}, deps...)...))
		e.removeFinalizers(cmGVR, "ob")
		waitCondition(e, e.specs.DeleteDesireStatus(), "ob", 1, ConditionTrue, ReasonNoErrors, gcTimeout)
		time.Sleep(2 * time.Second)
		for _, n := range deps {
			if e.configMapGone(n) {
				t.Fatalf("dependent %s of an Orphan delete was collected", n)
			}
		}
	})

	t.Run("Background (absent)", func(t *testing.T) {
		e.t = t
		deps := e.createFamily("bg")
		e.putDeleteWith("bg", "bg", "")
		waitCondition(e, e.specs.DeleteDesireStatus(), "bg", 1, ConditionTrue, ReasonNoErrors, 30*time.Second)
		waitFor(t, gcTimeout, "the collector to delete the dependents", func() bool {
			return e.configMapGone(deps[0]) && e.configMapGone(deps[1])
		}, e.describeConfigMaps(deps...))
	})
}
