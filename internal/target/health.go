package target

import (
	"context"
	"fmt"
	"sync"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// Readiness is an ApplyDesire's Ready condition as kstatus computed it: Status is kstatus's
// Current, InProgress, Failed, Terminating or NotFound, Message its message. For a desire
// with health rules (healthrules.go), Current, InProgress or Failed come from the rules, or
// Status is api.ReasonHealthRuleInvalid.
type Readiness struct {
	Status  string
	Message string
}

// Ready reports whether r is kstatus's Current: the Ready condition is True.
func (r *Readiness) Ready() bool { return r.Status == string(status.CurrentStatus) }

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

// HasStatus reports whether a kind's readiness depends on its status (and so on every new
// resourceVersion, not only on changes of what was applied).
func HasStatus(gk schema.GroupKind) bool { return !statusless[gk] }

// HealthCheck computes ApplyDesires' Ready conditions with kstatus: from the apply's response
// (no request), then at most one GET per new resourceVersion the target's watch reports,
// rate-limited; kinds without status need no GET at all.
type HealthCheck struct {
	get     GetFunc
	limiter *rate.Limiter

	mu    sync.Mutex
	last  map[string]readAt          // by ApplyDesire ID; dropped at term end
	rules map[string]api.HealthRules // by ApplyDesire ID: health rules replacing kstatus (healthrules.go)
}

// readAt is the readiness computed at one resourceVersion of one object.
type readAt struct {
	target api.TargetItem
	rv     string
	rules  api.HealthRules // the health rules it was computed with (none: kstatus)
	ready  *Readiness
}

// healthGetsPerSecond bounds the GETs that readiness costs (a burst of rollouts).
const healthGetsPerSecond = 50

// GetFunc reads target t from the apiserver: nil and no error when the object does not exist.
type GetFunc func(ctx context.Context, t api.TargetItem) (*unstructured.Unstructured, error)

// NewHealthCheck returns a readiness check that reads objects through get.
func NewHealthCheck(get GetFunc) *HealthCheck {
	return &HealthCheck{get: get, limiter: rate.NewLimiter(healthGetsPerSecond, 2*healthGetsPerSecond), last: map[string]readAt{},
		rules: map[string]api.HealthRules{}}
}

// OfObject computes the readiness of live (an apply's response, or a GET) and remembers it
// for live's resourceVersion.
func (h *HealthCheck) OfObject(id string, t api.TargetItem, live *unstructured.Unstructured) *Readiness {
	rules, byRules := h.rulesOf(id)
	var r *Readiness
	if byRules {
		r = evaluateRules(rules, live)
	} else {
		r = compute(live)
	}
	if !byRules && !HasStatus(live.GroupVersionKind().GroupKind()) {
		return r // never looked up: OfSighting answers such kinds from the sighting
	}
	h.mu.Lock()
	h.last[id] = readAt{target: t, rv: live.GetResourceVersion(), rules: rules, ready: r}
	h.mu.Unlock()
	return r
}

// OfSighting is the readiness of t as its watch shows it: NotFound, Terminating, Current for a
// kind without status, else the remembered result for the sighting's resourceVersion or one
// computed from a GET.
func (h *HealthCheck) OfSighting(ctx context.Context, id string, t api.TargetItem, gk schema.GroupKind, st *Sighting, exists bool) (*Readiness, error) {
	switch {
	case !exists:
		return &Readiness{Status: string(status.NotFoundStatus), Message: "Resource not found"}, nil
	case st.deleting:
		return &Readiness{Status: string(status.TerminatingStatus), Message: "Resource scheduled for deletion"}, nil
	}
	rules, byRules := h.rulesOf(id)
	if !byRules && !HasStatus(gk) {
		return &Readiness{Status: string(status.CurrentStatus), Message: "Resource is always ready"}, nil
	}
	h.mu.Lock()
	last, ok := h.last[id]
	h.mu.Unlock()
	if ok && last.target == t && last.rules == rules && (last.rv == st.resourceVersion || olderVersion(st.resourceVersion, last.rv)) {
		return last.ready, nil
	}
	if err := h.limiter.Wait(ctx); err != nil {
		return nil, fmt.Errorf("reading %s for its readiness: %w", t, err)
	}
	live, err := h.get(ctx, t)
	if err == nil && live == nil {
		return &Readiness{Status: string(status.NotFoundStatus), Message: "Resource not found"}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s for its readiness: %w", t, err)
	}
	return h.OfObject(id, t, live), nil
}

// compute is kstatus's verdict on u; an object kstatus cannot read is Unknown.
func compute(u *unstructured.Unstructured) *Readiness {
	res, err := status.Compute(u)
	if err != nil {
		return &Readiness{Status: string(status.UnknownStatus), Message: err.Error()}
	}
	msg := res.Message
	if msg == "" {
		msg = "Resource is " + string(res.Status) // e.g. a Ready=False condition without a message
	}
	return &Readiness{Status: string(res.Status), Message: msg}
}

func (h *HealthCheck) Forget(id string) {
	h.mu.Lock()
	delete(h.last, id)
	delete(h.rules, id)
	h.mu.Unlock()
}

func (h *HealthCheck) EndTerm() {
	h.mu.Lock()
	h.last = map[string]readAt{}
	h.rules = map[string]api.HealthRules{}
	h.mu.Unlock()
}

// ReadyUnknown is the Ready reason when the object was not observed (kstatus's name for it).
const ReadyUnknown = string(status.UnknownStatus)
