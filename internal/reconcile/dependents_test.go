package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	discoveryfake "k8s.io/client-go/discovery/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
)

// ownerUID is the uid of the owner in the dependents tests.
const ownerUID = types.UID("uid-1")

// dependentsDiscovery serves namespaced configmaps, secrets and apps/v1 deployments (verbs
// list and delete), cluster-scoped namespaces, a subresource and a namespaced type without
// delete (neither listed); brokenGroup, when set, fails the discovery of
// broken.example.net/v1.
type dependentsDiscovery struct {
	*discoveryfake.FakeDiscovery
	brokenGroup bool
}

func newDependentsDiscovery(brokenGroup bool) *dependentsDiscovery {
	verbs := metav1.Verbs{"get", "list", "watch", "delete"}
	res := func(name, kind string, namespaced bool, v metav1.Verbs) metav1.APIResource {
		return metav1.APIResource{Name: name, Kind: kind, Namespaced: namespaced, Verbs: v}
	}
	lists := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			res("configmaps", "ConfigMap", true, verbs), res("secrets", "Secret", true, verbs),
			res("namespaces", "Namespace", false, verbs), res("pods/log", "Pod", true, metav1.Verbs{"get"}),
			res("bindings", "Binding", true, metav1.Verbs{"create"}),
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{res("deployments", "Deployment", true, verbs)}},
	}
	if brokenGroup {
		lists = append(lists, &metav1.APIResourceList{GroupVersion: "broken.example.net/v1"})
	}
	return &dependentsDiscovery{FakeDiscovery: &discoveryfake.FakeDiscovery{Fake: &k8stesting.Fake{Resources: lists}}, brokenGroup: brokenGroup}
}

func (d *dependentsDiscovery) ServerResourcesForGroupVersionWithContext(ctx context.Context, gv string) (*metav1.APIResourceList, error) {
	if d.brokenGroup && gv == "broken.example.net/v1" {
		return nil, errors.New("503 service unavailable")
	}
	return d.FakeDiscovery.ServerResourcesForGroupVersionWithContext(ctx, gv)
}

// dependent is object name of kind apiVersion/kind in ns, with an ownerReference to uid owner
// (none when ""), blocking its deletion or not.
func dependent(apiVersion, kind, ns, name string, owner types.UID, block bool) runtime.Object {
	o := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: apiVersion, Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name)}}
	if owner != "" {
		o.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner, BlockOwnerDeletion: &block}}
	}
	return o
}

func newMetadataFake(objs ...runtime.Object) *metadatafake.FakeMetadataClient {
	s := metadatafake.NewTestScheme()
	metav1.AddMetaToScheme(s)
	return metadatafake.NewSimpleMetadataClient(s, objs...)
}

// listActions returns the LISTs md was asked for, as "resource ns".
func listActions(md *metadatafake.FakeMetadataClient) []string {
	var out []string
	for _, a := range md.Actions() {
		if a.GetVerb() == "list" {
			out = append(out, a.GetResource().Resource+" "+a.GetNamespace())
		}
	}
	return out
}

// TestDependentsNote: a Foreground owner's blocking dependents of its namespace are named
// (kind and name, sorted, at most five), whatever else is there is not; a type that cannot be
// listed makes the note partial, never "none left"; a cluster-scoped owner's are not listed.
func TestDependentsNote(t *testing.T) {
	cases := []struct {
		name        string
		ns          string // the owner's; "" cluster-scoped
		finalizers  []string
		objs        []runtime.Object
		failSecrets bool
		brokenGroup bool
		want        string
		wantNot     []string
		wantLists   int // LISTs made
	}{
		{name: "blocking dependents named, sorted", ns: "ns", finalizers: []string{"foregroundDeletion"},
			objs: []runtime.Object{
				dependent("v1", "ConfigMap", "ns", "dep-2", ownerUID, true),
				dependent("v1", "ConfigMap", "ns", "dep-1", ownerUID, true),
				dependent("apps/v1", "Deployment", "ns", "web", ownerUID, true),
				dependent("v1", "Secret", "ns", "free", ownerUID, false),
				dependent("v1", "ConfigMap", "ns", "stranger", "uid-other", true),
				dependent("v1", "ConfigMap", "ns", "plain", "", false),
				dependent("v1", "ConfigMap", "other", "elsewhere", ownerUID, true),
			},
			want:    "dependents left: ConfigMap dep-1, ConfigMap dep-2, Deployment web",
			wantNot: []string{"free", "stranger", "plain", "elsewhere", "could not"}, wantLists: 3},
		{name: "more than five: counted", ns: "ns", finalizers: []string{"foregroundDeletion"},
			objs: func() []runtime.Object {
				var objs []runtime.Object
				for i := range 8 {
					objs = append(objs, dependent("v1", "ConfigMap", "ns", fmt.Sprintf("d%d", i), ownerUID, true))
				}
				return objs
			}(),
			want: "dependents left: ConfigMap d0, ConfigMap d1, ConfigMap d2, ConfigMap d3, ConfigMap d4, and 3 more", wantLists: 3},
		{name: "none blocking: never claimed gone", ns: "ns", finalizers: []string{"foregroundDeletion"},
			objs: []runtime.Object{dependent("v1", "ConfigMap", "ns", "free", ownerUID, false)},
			want: "no blocking dependents seen; waiting for the garbage collector", wantNot: []string{"free"}, wantLists: 3},
		{name: "a LIST failing: partial", ns: "ns", finalizers: []string{"foregroundDeletion"}, failSecrets: true,
			objs: []runtime.Object{dependent("v1", "ConfigMap", "ns", "dep-1", ownerUID, true)},
			want: "dependents left: ConfigMap dep-1 (dependents of some types could not be listed)", wantLists: 3},
		{name: "a LIST failing, none seen: partial, not none left", ns: "ns", finalizers: []string{"foregroundDeletion"}, failSecrets: true,
			want: "no blocking dependents seen (dependents of some types could not be listed); waiting for the garbage collector", wantLists: 3},
		{name: "a group's discovery failing: partial", ns: "ns", finalizers: []string{"foregroundDeletion"}, brokenGroup: true,
			objs: []runtime.Object{dependent("v1", "ConfigMap", "ns", "dep-1", ownerUID, true)},
			want: "dependents left: ConfigMap dep-1 (dependents of some types could not be listed)", wantLists: 3},
		{name: "cluster-scoped owner: not listed", finalizers: []string{"foregroundDeletion"},
			objs: []runtime.Object{dependent("v1", "ConfigMap", "ns", "dep-1", ownerUID, true)},
			want: "its dependents are not listed for a cluster-scoped object", wantNot: []string{"dep-1"}},
		{name: "no foregroundDeletion finalizer: nothing said, nothing listed", ns: "ns", finalizers: []string{"orphan"},
			objs: []runtime.Object{dependent("v1", "ConfigMap", "ns", "dep-1", ownerUID, true)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			md := newMetadataFake(tc.objs...)
			if tc.failSecrets {
				md.PrependReactor("list", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, errors.New("secrets is forbidden")
				})
			}
			f := newDependents(newDependentsDiscovery(tc.brokenGroup), md)
			owner := configMapObject("owner", tc.finalizers...)
			owner.SetNamespace(tc.ns)
			owner.SetUID(ownerUID)
			got := f.note(context.Background(), "d", owner)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("note %q, want %q", got, tc.want)
			}
			for _, n := range tc.wantNot {
				if strings.Contains(got, n) {
					t.Errorf("note %q names %q", got, n)
				}
			}
			lists := listActions(md)
			if len(lists) != tc.wantLists {
				t.Errorf("LISTs %q, want %d", lists, tc.wantLists)
			}
			for _, l := range lists {
				if !strings.HasSuffix(l, " "+tc.ns) {
					t.Errorf("LIST %q outside the owner's namespace %q", l, tc.ns)
				}
			}
		})
	}
}

// TestDependentsRateLimit: at most one listing per desire per dependentsEvery: a reconcile in
// between reuses the last note without a LIST; a later one, another desire, or the same desire
// with another owner uid (re-created) lists again.
func TestDependentsRateLimit(t *testing.T) {
	md := newMetadataFake(dependent("v1", "ConfigMap", "ns", "dep-1", ownerUID, true))
	f := newDependents(newDependentsDiscovery(false), md)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.now = func() time.Time { return now }
	owner := configMapObject("owner", "foregroundDeletion")
	owner.SetNamespace("ns")
	owner.SetUID(ownerUID)
	ctx := context.Background()
	lists := func() int { return len(listActions(md)) }

	first := f.note(ctx, "d", owner)
	perListing := lists()
	if perListing == 0 || !strings.Contains(first, "ConfigMap dep-1") {
		t.Fatalf("first note %q after %d LISTs", first, perListing)
	}
	// dep-1 is gone meanwhile: a reconcile within dependentsEvery says nothing new.
	if err := md.Tracker().Delete(cmGVR, "ns", "dep-1"); err != nil {
		t.Fatal(err)
	}
	now = now.Add(dependentsEvery - time.Second)
	if got := f.note(ctx, "d", owner); got != first || lists() != perListing {
		t.Fatalf("within %s: note %q after %d LISTs, want %q after %d", dependentsEvery, got, lists(), first, perListing)
	}
	if f.note(ctx, "other", owner); lists() != 2*perListing {
		t.Fatalf("another desire: %d LISTs, want %d", lists(), 2*perListing)
	}
	now = now.Add(time.Second)
	if got := f.note(ctx, "d", owner); !strings.Contains(got, "no blocking dependents seen") || lists() != 3*perListing {
		t.Fatalf("after %s: note %q after %d LISTs", dependentsEvery, got, lists())
	}
	owner.SetUID("uid-2")
	if f.note(ctx, "d", owner); lists() != 4*perListing {
		t.Fatalf("another owner uid: %d LISTs, want %d", lists(), 4*perListing)
	}
	f.forget("d")
	if _, ok := f.last["d"]; ok {
		t.Fatal("forget kept the listing")
	}
}

// TestDeleteForegroundNamesDependents: a Delete with a metadata client names the blocking
// dependents in its WaitingForDeletion message after the foregroundDeletion words; without one
// the message is today's.
func TestDeleteForegroundNamesDependents(t *testing.T) {
	target := api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "owner"}
	for _, withMetadata := range []bool{true, false} {
		t.Run(fmt.Sprint("metadata ", withMetadata), func(t *testing.T) {
			fake := newFakeKube()
			fake.Apply(context.Background(), cmGVR, configMapObject("owner"), "setup")
			cfg := DeleteConfig{Kube: fake, Mapper: newMapper(), Discovery: newDependentsDiscovery(false)}
			if withMetadata {
				cfg.Metadata = newMetadataFake(dependent("v1", "ConfigMap", "default", "dep-1", ownerUID, true))
			}
			h := newHarness[*api.DeleteDesire](api.KindDeleteDesire, NewDelete(cfg))
			d := deleteDesire("d", target)
			d.Spec.PropagationPolicy = api.PropagationForeground
			v, st := h.sync(t, d)
			succ := condition(st, api.ConditionSuccessful)
			// Dependents named are listed again soon: they go without an event of the owner.
			if look, after := controller.Again(v); withMetadata && (look != controller.LookSoon || after != dependentsEvery) {
				t.Fatalf("looks again %v after %v, want soon after %v", look, after, dependentsEvery)
			}
			const words = "waiting for the garbage collector to delete its dependents that block its deletion (foreground deletion, finalizer foregroundDeletion)"
			want := words
			if withMetadata {
				want += ": dependents left: ConfigMap dep-1"
			}
			if succ.Reason != api.ReasonWaitingForDeletion || !strings.Contains(succ.Message, want) ||
				!withMetadata && strings.Contains(succ.Message, "dependents left") {
				t.Fatalf("Successful %s %q, want WaitingForDeletion with %q", succ.Reason, succ.Message, want)
			}
		})
	}
}

// TestDependentsOutOfTime: a listing whose reconcile has no time left lists nothing and says
// its dependents could not be listed (never "none left").
func TestDependentsOutOfTime(t *testing.T) {
	md := newMetadataFake(dependent("v1", "ConfigMap", "ns", "dep-1", ownerUID, true))
	f := newDependents(newDependentsDiscovery(false), md)
	owner := configMapObject("owner", "foregroundDeletion")
	owner.SetNamespace("ns")
	owner.SetUID(ownerUID)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got := f.note(ctx, "d", owner)
	if !strings.Contains(got, "could not be listed") || strings.Contains(got, "no blocking dependents") || len(listActions(md)) != 0 {
		t.Fatalf("note %q after LISTs %q", got, listActions(md))
	}
}
