package kubeapplier

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/go-logr/logr/testr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/testenv"
)

// TestIntegrationFoldedLayout: on DynamoDB Local and a kube-apiserver, a management cluster
// with the folded layout (upstream's forks: no DeleteDesire tables) has only its two specs and
// two status tables; the Applier starts on them and serves an ApplyDesire, a ReadDesire and
// folded Deletes: one of an object made by someone else (gone: Successful=True), and one that
// an ApplyDesire becomes at its next version, of an object with a finalizer
// (WaitingForDeletion until the finalizer is removed, then Successful=True), each status in
// the ApplyDesire status table without any applied field or Ready; an ApplyDesire of the
// object of a folded Delete is refused (TargetConflict) until the Delete is deleted.
func TestIntegrationFoldedLayout(t *testing.T) { testFoldedLayout(t, nil) }

// TestIntegrationFoldedLayoutIndexPoll is TestIntegrationFoldedLayout under the index poll
// (IndexPollSource, as upstream's forks read their specs tables): the four tables with the
// spec index, and the same verdicts.
func TestIntegrationFoldedLayoutIndexPoll(t *testing.T) {
	testFoldedLayout(t, IndexPollSource{PollPeriod: time.Second, RelistPeriod: 3 * time.Second}, api.WithSpecIndex())
}

// testFoldedLayout runs the folded layout's test under the change source (nil: the streams),
// its tables made with opts.
func testFoldedLayout(t *testing.T, source ChangeSource, opts ...api.TableOption) {
	env := testenv.DynamoDB(t)
	cfg := testenv.Kube(t)
	ns := testenv.Namespace(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	layout := api.TableLayout{Prefix: env.Prefix, Format: "{cluster}-{table}-{kind}", FoldedDeletes: true}
	made, err := api.EnsureLayoutTables(ctx, env.Client, layout, "mc01", opts...)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{env.Prefix + "mc01-specs-applydesires", env.Prefix + "mc01-specs-readdesires",
		env.Prefix + "mc01-status-applydesires", env.Prefix + "mc01-status-readdesires"}
	if !slices.Equal(made, want) {
		t.Fatalf("EnsureLayoutTables made %v, want %v", made, want)
	}
	listed, err := env.Client.ListTables(ctx, &dynamodb.ListTablesInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range listed.TableNames {
		if strings.HasPrefix(name, env.Prefix) && !slices.Contains(want, name) {
			t.Fatalf("table %s outside the folded layout", name)
		}
	}

	app := startApplier(t, ctx, cancel, Options{ManagementCluster: "mc01", Tables: layout, DynamoDB: env.Client,
		Streams: AWSStreams{DB: env.Client, Streams: env.Streams}, RESTConfig: cfg, Log: testr.New(t), ChangeSource: source})
	if app.Informers().DeleteDesires != nil {
		t.Fatal("a DeleteDesire informer in the folded layout")
	}

	backend := api.NewClient(env.Client, "", "mc01", api.WithLayout(layout))
	applies, reads := backend.ApplyDesires(), backend.ReadDesires()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wait := func(spec *api.ApplyDesire, reason string) *api.ApplyDesire {
		t.Helper()
		var st *api.ApplyDesire
		waitFor(t, 30*time.Second, fmt.Sprintf("%s version %d: %s", spec.DocumentID, spec.Version, reason), func() bool {
			wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
			defer wcancel()
			st, err = applies.WaitForStatus(wctx, spec)
			return err == nil && condition(st, ConditionSuccessful).Reason == reason
		}, func() string { return fmt.Sprintf("%+v (%v)", st, err) })
		return st
	}

	// An ApplyDesire of an object with a finalizer, and a ReadDesire of it.
	held := &api.ApplyDesire{DynamoDBMetadata: api.DynamoDBMetadata{DocumentID: "folded-held"}}
	held.Spec.KubeContent = json.RawMessage(fmt.Sprintf(
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"held","namespace":%q,"finalizers":["example.com/hold"]},"data":{"a":"1"}}`, ns))
	spec, err := applies.Create(ctx, held)
	if err != nil {
		t.Fatal(err)
	}
	if st := wait(spec, ReasonNoErrors); st.Status.AppliedUID == "" {
		t.Fatalf("applied without appliedUID: %+v", st.Status)
	}
	target := api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: ns, Name: "held"}
	rd, err := reads.Create(ctx, &api.ReadDesire{DynamoDBMetadata: api.DynamoDBMetadata{DocumentID: "folded-read"},
		Spec: api.ReadDesireSpec{TargetItem: target}})
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if rst, err := reads.WaitForStatus(wctx, rd); err != nil || !strings.Contains(string(rst.Status.KubeContent), `"held"`) {
		t.Fatalf("ReadDesire: %+v, %v", rst, err)
	}

	// The ApplyDesire becomes a Delete: it waits for the finalizer, in its own status table.
	spec.Spec.KubeContent, spec.Spec.Type, spec.Spec.TargetItem = nil, api.ApplyTypeDelete, &target
	spec, err = applies.Replace(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	st := wait(spec, ReasonWaitingForDeletion)
	if c := condition(st, ConditionSuccessful); !strings.Contains(c.Message, "waiting for finalizers: example.com/hold") {
		t.Fatalf("Successful = %+v", c)
	}
	assertFoldedStatus(t, st)
	if _, err := dyn.Resource(cmGVR).Namespace(ns).Patch(ctx, "held", k8stypes.MergePatchType,
		[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	st = wait(spec, ReasonNoErrors)
	if c := condition(st, ConditionSuccessful); c.Status != ConditionTrue || !strings.Contains(c.Message, "is gone") {
		t.Fatalf("Successful = %+v", c)
	}
	assertFoldedStatus(t, st)
	if _, err := dyn.Resource(cmGVR).Namespace(ns).Get(ctx, "held", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the object after Successful=True: %v", err)
	}

	// A folded Delete created as such, of an object someone else made.
	other := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "other", "namespace": ns}}}
	if _, err := dyn.Resource(cmGVR).Namespace(ns).Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	del := &api.ApplyDesire{DynamoDBMetadata: api.DynamoDBMetadata{DocumentID: "folded-other"},
		Spec: api.ApplyDesireSpec{Type: api.ApplyTypeDelete, TargetItem: &api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: ns, Name: "other"}}}
	if spec, err = applies.Create(ctx, del); err != nil {
		t.Fatal(err)
	}
	assertFoldedStatus(t, wait(spec, ReasonNoErrors))
	if _, err := dyn.Resource(cmGVR).Namespace(ns).Get(ctx, "other", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the object after Successful=True: %v", err)
	}

	// The folded Delete is a rival as a DeleteDesire is: an ApplyDesire of its object is
	// refused while it exists, and applied once it is deleted.
	rival := &api.ApplyDesire{DynamoDBMetadata: api.DynamoDBMetadata{DocumentID: "folded-rival"}}
	rival.Spec.KubeContent = json.RawMessage(fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other","namespace":%q}}`, ns))
	rspec, err := applies.Create(ctx, rival)
	if err != nil {
		t.Fatal(err)
	}
	rst := wait(rspec, ReasonTargetConflict)
	if c := condition(rst, ConditionSuccessful); !strings.Contains(c.Message, "is the target of ApplyDesire folded-other of type Delete, which wins while it exists") {
		t.Fatalf("Successful = %+v", c)
	}
	if _, err := dyn.Resource(cmGVR).Namespace(ns).Get(ctx, "other", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the refused ApplyDesire's object: %v", err)
	}
	if err := applies.DeleteIf(ctx, spec.DocumentID, spec.Version); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the ApplyDesire applied once the folded Delete is gone", func() bool {
		st, err := applies.Status(ctx, rspec.DocumentID)
		return err == nil && condition(st, ConditionSuccessful).Status == ConditionTrue
	})
	if _, err := dyn.Resource(cmGVR).Namespace(ns).Get(ctx, "other", metav1.GetOptions{}); err != nil {
		t.Fatalf("the ApplyDesire's object: %v", err)
	}
}

// assertFoldedStatus fails when a folded Delete's status claims anything applied or ready.
func assertFoldedStatus(t *testing.T, st *api.ApplyDesire) {
	t.Helper()
	s := st.Status
	if s.AppliedResourceGeneration != 0 || s.AppliedUID != "" || s.AppliedResourceVersion != "" || s.AppliedFieldsDigest != "" {
		t.Fatalf("a folded Delete's status claims content applied: %+v", s)
	}
	if c := s.Condition(ConditionReady); c != nil {
		t.Fatalf("a folded Delete's status has Ready: %+v", *c)
	}
}
