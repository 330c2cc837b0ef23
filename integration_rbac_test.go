package kubeapplier

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/kube-applier-aws/kubeapplier/internal/testenv"
)

// applyManifests server-side applies every document of the YAML files, as an admin.
func applyManifests(t *testing.T, cfg *rest.Config, files ...string) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
		for {
			var u unstructured.Unstructured
			if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if len(u.Object) == 0 {
				continue
			}
			m, err := mapper.RESTMapping(u.GroupVersionKind().GroupKind(), u.GroupVersionKind().Version)
			if err != nil {
				t.Fatal(err)
			}
			var r dynamic.ResourceInterface = dyn.Resource(m.Resource)
			if m.Scope.Name() == meta.RESTScopeNameNamespace {
				r = dyn.Resource(m.Resource).Namespace(u.GetNamespace())
			}
			if _, err := r.Apply(context.Background(), u.GetName(), &u, metav1.ApplyOptions{FieldManager: "kaa-rbac-test", Force: true}); err != nil {
				t.Fatalf("apply %s %s: %v", u.GetKind(), u.GetName(), err)
			}
		}
	}
}

// TestIntegrationRBAC runs the applier as the ServiceAccount of examples/deploy, bound only to
// examples/deploy/rbac.yaml (through impersonation): what the ClusterRole grants succeeds, a
// ClusterRoleBinding (deliberately not granted) is reported KubeAPIError "forbidden" without
// retries, and the leader-election Role allows exactly the applier's own Lease.
func TestIntegrationRBAC(t *testing.T) {
	admin := testenv.Kube(t)
	applyManifests(t, admin, "examples/deploy/namespace.yaml", "examples/deploy/serviceaccount.yaml", "examples/deploy/rbac.yaml")
	asSA := rest.CopyConfig(admin)
	asSA.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:kube-applier-aws:kube-applier-aws"}

	// Leader election: the applier's Lease only.
	kc, err := kubernetes.NewForConfig(asSA)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// The apiserver's RBAC authorizer learns of a new Role/RoleBinding through its informers:
	// a request right after they were applied may still be refused.
	var leaseErr error
	waitFor(t, 10*time.Second, "the RBAC just applied in effect", func() bool {
		_, leaseErr = kc.CoordinationV1().Leases("kube-applier-aws").Get(ctx, DefaultLeaseName, metav1.GetOptions{})
		return leaseErr == nil || apierrors.IsNotFound(leaseErr)
	}, func() string { return fmt.Sprintf("get own lease: %v", leaseErr) })
	if _, err := kc.CoordinationV1().Leases("kube-applier-aws").Get(ctx, "someone-else", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("get another lease: %v, want Forbidden", err)
	}
	if _, err := kc.CoordinationV1().Leases("kube-system").Get(ctx, DefaultLeaseName, metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("get a lease in kube-system: %v, want Forbidden", err)
	}

	var applyRec *countingReconciler[*ApplyDesire]
	e := startE2EWith(t, func(o *Options) { o.RESTConfig = asSA }, func(a *Applier) {
		applyRec = &countingReconciler[*ApplyDesire]{inner: a.apply.Reconciler, n: map[string]int{}}
		a.apply.Reconciler = applyRec
	})
	crb := fmt.Sprintf(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":%q},
	"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"},
	"subjects":[{"kind":"ServiceAccount","name":"kube-applier-aws","namespace":"kube-applier-aws"}]}`, e.ns+"-escalate")
	e.putApply("allowed-cm", e.configMap("allowed-cm", map[string]string{"a": "b"}))
	e.putApply("escalate", crb)
	e.putApply("role", fmt.Sprintf(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"r","namespace":%q},
	"rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["get"]}]}`, e.ns))
	e.putApply("role-escalate", fmt.Sprintf(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"r2","namespace":%q},
	"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["*"]}]}`, e.ns))

	waitCondition(e, e.specs.ApplyDesireStatus(), "allowed-cm", 1, ConditionTrue, ReasonNoErrors, 15*time.Second)
	waitCondition(e, e.specs.ApplyDesireStatus(), "role", 1, ConditionTrue, ReasonNoErrors, 15*time.Second)
	for _, id := range []string{"escalate", "role-escalate"} {
		st := waitCondition(e, e.specs.ApplyDesireStatus(), id, 1, ConditionFalse, ReasonKubeAPIError, 15*time.Second)
		msg := condition(st, ConditionSuccessful).Message
		if !strings.Contains(msg, "forbidden") || condition(st, ConditionDegraded).Status != ConditionFalse {
			t.Errorf("%s: %q (Degraded %s), want forbidden, not degraded", id, msg, condition(st, ConditionDegraded).Status)
		}
		t.Logf("%s: %s", id, msg)
	}
	if _, err := e.dyn.Resource(rbacGVR("clusterrolebindings")).Get(ctx, e.ns+"-escalate", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the forbidden ClusterRoleBinding exists: %v", err)
	}

	del := deleteDesire("del-cm", TargetItem{Version: "v1", Resource: "configmaps", Namespace: e.ns, Name: "allowed-cm"})
	if _, err := e.deleteS.Create(ctx, del); err != nil {
		t.Fatal(err)
	}
	waitCondition(e, e.specs.DeleteDesireStatus(), "del-cm", 1, ConditionTrue, ReasonNoErrors, 15*time.Second)
	// Deleting what the role does not cover is refused the same way.
	del = deleteDesire("del-crole", TargetItem{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles", Name: "cluster-admin"})
	if _, err := e.deleteS.Create(ctx, del); err != nil {
		t.Fatal(err)
	}
	st := waitCondition(e, e.specs.DeleteDesireStatus(), "del-crole", 1, ConditionFalse, ReasonKubeAPIError, 15*time.Second)
	if msg := condition(st, ConditionSuccessful).Message; !strings.Contains(msg, "forbidden") {
		t.Errorf("delete cluster-admin: %q, want forbidden", msg)
	}
	if _, err := e.dyn.Resource(rbacGVR("clusterroles")).Get(ctx, "cluster-admin", metav1.GetOptions{}); err != nil {
		t.Fatalf("cluster-admin: %v", err)
	}
	// A ReadDesire of a resource outside the role: the watch is forbidden.
	e.createRead("read-crole", TargetItem{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles", Name: "cluster-admin"})
	rst := waitCondition(e, e.specs.ReadDesireStatus(), "read-crole", 1, ConditionFalse, ReasonKubeAPIError, 40*time.Second)
	if msg := condition(rst, ConditionSuccessful).Message; !strings.Contains(msg, "forbidden") || rst.Status.KubeContent != nil {
		t.Errorf("read cluster-admin: %q (content %v), want forbidden and no content", msg, rst.Status.KubeContent != nil)
	}
	time.Sleep(3 * time.Second)
	// Permanent until the spec or RBAC changes: one reconcile, and at most one more when the
	// target's watch (forbidden too) reports failing to the desires it serves.
	if n := applyRec.count("escalate"); n < 1 || n > 2 {
		t.Errorf("forbidden apply reconciled %d times, want 1 or 2 (permanent until the spec or RBAC changes)", n)
	}
}

func rbacGVR(resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: resource}
}
