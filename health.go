package kubeapplier

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/kube-applier-aws/kubeapplier/api"
	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// readiness is an ApplyDesire's Ready condition as kstatus computed it: status is kstatus's
// Current, InProgress, Failed, Terminating or NotFound, message its message.
type readiness struct {
	status  string
	message string
}

// condition is the Ready condition for r: True only when Current.
func (r *readiness) condition(observedGeneration int64, t time.Time) api.Condition {
	s := ConditionFalse
	if r.status == string(status.CurrentStatus) {
		s = ConditionTrue
	}
	return api.Condition{Type: ConditionReady, Status: s, Reason: r.status, Message: compactMessage(r.message),
		ObservedGeneration: observedGeneration, LastTransitionTime: t}
}

// statusless are the kinds without a status to wait for: always Current while they exist,
// known without a request. (kstatus says so too, but only after a GET of the object.)
var statusless = map[schema.GroupKind]bool{
	{Kind: "ConfigMap"}: true, {Kind: "Secret"}: true, {Kind: "ServiceAccount"}: true,
	{Kind: "Endpoints"}: true, {Kind: "LimitRange"}: true, {Kind: "ResourceQuota"}: true,
	{Group: "rbac.authorization.k8s.io", Kind: "Role"}: true, {Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}: true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}: true, {Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}: true,
	{Group: "networking.k8s.io", Kind: "NetworkPolicy"}: true, {Group: "scheduling.k8s.io", Kind: "PriorityClass"}: true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}: true, {Group: "coordination.k8s.io", Kind: "Lease"}: true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}:   true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:     true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}:        true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: true,
}

// hasStatus reports whether a kind's readiness depends on its status (and so on every new
// resourceVersion, not only on changes of what was applied).
func hasStatus(gk schema.GroupKind) bool { return !statusless[gk] }

// healthCheck computes ApplyDesires' Ready conditions with kstatus: from the apply's response
// (no request), then at most one GET per new resourceVersion the target's watch reports,
// rate-limited; kinds without status need no GET at all.
type healthCheck struct {
	kube    KubeClient
	limiter *rate.Limiter

	mu   sync.Mutex
	last map[string]readAt // by ApplyDesire ID; dropped at term end
}

// readAt is the readiness computed at one resourceVersion of one object.
type readAt struct {
	target TargetItem
	rv     string
	ready  *readiness
}

// healthGetsPerSecond bounds the GETs that readiness costs (a burst of rollouts).
const healthGetsPerSecond = 50

func newHealthCheck(kube KubeClient) *healthCheck {
	return &healthCheck{kube: kube, limiter: rate.NewLimiter(healthGetsPerSecond, 2*healthGetsPerSecond), last: map[string]readAt{}}
}

// ofObject computes the readiness of live (an apply's response, or a GET) and remembers it
// for live's resourceVersion.
func (h *healthCheck) ofObject(id string, t TargetItem, live *unstructured.Unstructured) *readiness {
	r := compute(live)
	if !hasStatus(live.GroupVersionKind().GroupKind()) {
		return r // never looked up: ofStamp answers such kinds from the stamp
	}
	h.mu.Lock()
	h.last[id] = readAt{target: t, rv: live.GetResourceVersion(), ready: r}
	h.mu.Unlock()
	return r
}

// ofStamp is the readiness of t as its watch shows it: NotFound, Terminating, Current for a
// kind without status, else the remembered result for the stamp's resourceVersion or one
// computed from a GET.
func (h *healthCheck) ofStamp(ctx context.Context, id string, t TargetItem, gk schema.GroupKind, st *objectStamp, exists bool) (*readiness, error) {
	switch {
	case !exists:
		return &readiness{status: string(status.NotFoundStatus), message: "Resource not found"}, nil
	case st.deleting:
		return &readiness{status: string(status.TerminatingStatus), message: "Resource scheduled for deletion"}, nil
	case !hasStatus(gk):
		return &readiness{status: string(status.CurrentStatus), message: "Resource is always ready"}, nil
	}
	h.mu.Lock()
	last, ok := h.last[id]
	h.mu.Unlock()
	if ok && last.target == t && (last.rv == st.resourceVersion || olderVersion(st.resourceVersion, last.rv)) {
		return last.ready, nil
	}
	if err := h.limiter.Wait(ctx); err != nil {
		return nil, fmt.Errorf("reading %s for its readiness: %w", t, err)
	}
	live, err := h.kube.Get(ctx, GVROf(t), t.Namespace, t.Name)
	if objectNotFound(err, t.Name) {
		return &readiness{status: string(status.NotFoundStatus), message: "Resource not found"}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s for its readiness: %w", t, err)
	}
	return h.ofObject(id, t, live), nil
}

// compute is kstatus's verdict on u; an object kstatus cannot read is Unknown.
func compute(u *unstructured.Unstructured) *readiness {
	res, err := status.Compute(u)
	if err != nil {
		return &readiness{status: string(status.UnknownStatus), message: err.Error()}
	}
	msg := res.Message
	if msg == "" {
		msg = "Resource is " + string(res.Status) // e.g. a Ready=False condition without a message
	}
	return &readiness{status: string(res.Status), message: msg}
}

func (h *healthCheck) forget(id string) {
	h.mu.Lock()
	delete(h.last, id)
	h.mu.Unlock()
}

func (h *healthCheck) endTerm() {
	h.mu.Lock()
	h.last = map[string]readAt{}
	h.mu.Unlock()
}

// readyUnknown is the Ready reason when the object was not observed (kstatus's name for it).
const readyUnknown = string(status.UnknownStatus)
