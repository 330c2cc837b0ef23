package kubeapplier_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	gotypes "go/types"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/tools/go/packages"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/dynamofake"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
)

// The verdict constructors read like the reasons table: what a reconciler (or a wrapper of
// one) returns, and the Successful/Degraded conditions the controller writes for it.
func ExampleVerdict() {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, v := range []kubeapplier.Verdict{
		kubeapplier.Applied(3, "applied ConfigMap demo/settings"),
		kubeapplier.Gone("configmaps/v1 demo/old is gone"),
		kubeapplier.Mirrored([]byte(`{"kind":"ConfigMap"}`), "mirrored at resourceVersion 42"),
		kubeapplier.Absent("configmaps/v1 demo/missing does not exist"),
		kubeapplier.WaitingForDeletion("waiting for finalizers: example.com/hold"),
		kubeapplier.Refused(kubeapplier.ReasonTargetConflict, "ApplyDesire 7b1f… keeps the object"),
		kubeapplier.Refused(kubeapplier.ReasonDriftConflict, "fields re-taken by kubectl-edit within 10s of each repair"),
		kubeapplier.NotYet(kubeapplier.ReasonKindNotServed, "kind example.com/v1, Kind=Widget is not known to the cluster"),
		kubeapplier.NotYet(kubeapplier.ReasonStaleFieldOwners, "managedFields entries of old-operator (Apply) at example.org/v1alpha1, which the cluster no longer serves, …"),
		kubeapplier.Refused(kubeapplier.ReasonTargetAbsent, "ConfigMap demo/settings does not exist; applyPolicy ReadOnly never creates it"),
		kubeapplier.Refused(kubeapplier.ReasonApplyConflict, `server-side apply of ConfigMap demo/settings conflicts with field managers "other-team" over .data.owner`),
		kubeapplier.Transient(kubeapplier.ReasonKubeAPIError, errors.New("etcdserver: request timed out")),
	} {
		c := v.Conditions(1, now)
		if v.Successful() != (c[0].Status == "True") || v.Degraded() != (c[1].Status == "True") {
			fmt.Println("accessors disagree with the conditions:", v)
		}
		fmt.Printf("%-18s Successful=%s Degraded=%s\n", c[0].Reason, c[0].Status, c[1].Status)
	}
	fmt.Println(kubeapplier.Applied(3, "applied ConfigMap demo/settings").Message())
	p := kubeapplier.Pending(200 * time.Millisecond)
	fmt.Println(p.IsPending(), p.Conditions(1, now) == nil, p.After(time.Second).IsPending())
	// Output:
	// NoErrors           Successful=True Degraded=False
	// NoErrors           Successful=True Degraded=False
	// NoErrors           Successful=True Degraded=False
	// NotFound           Successful=True Degraded=False
	// WaitingForDeletion Successful=False Degraded=False
	// TargetConflict     Successful=False Degraded=False
	// DriftConflict      Successful=False Degraded=False
	// KindNotServed      Successful=False Degraded=False
	// StaleFieldOwners   Successful=False Degraded=False
	// TargetAbsent       Successful=False Degraded=False
	// ApplyConflict      Successful=False Degraded=False
	// KubeAPIError       Successful=False Degraded=True
	// applied ConfigMap demo/settings
	// true true true
}

// An embedder computes the documentID of a desire for one object as the applier and every
// backend do (api.DesireID, in api.DesireIDNamespace), and checks an item's size against
// DynamoDB's limit (api.ItemSize).
func ExampleDesireID() {
	t := kubeapplier.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "settings"}
	fmt.Println(api.DesireIDNamespace)
	fmt.Println(kubeapplier.DesireID("task-1", t))
	d := &kubeapplier.ApplyDesire{}
	d.DocumentID, d.Spec.ManagementCluster = kubeapplier.DesireID("task-1", t), "mc01"
	item, _ := api.EncodeItem(d)
	fmt.Println(api.ItemSize(item) <= api.MaxItemSize)
	// Output:
	// 6f1f3c63-5a0d-4c1e-9a55-2f1a8b8d0c3e
	// 7b1fdb4e-decf-5d4c-a307-6718bada47d7
	// true
}

// TestInformersFromOutside: the specs-table informers on their own (NewInformers), their
// lister's ErrNotFound, and the start-up checks' sentinel errors.
func TestInformersFromOutside(t *testing.T) {
	db := dynamofake.New()
	for _, k := range kubeapplier.DesireKinds {
		db.AddTable(api.TableName("", "mc01", api.SpecsTable, k), ddbtypes.StreamViewTypeNewAndOldImages, "shard-0")
	}
	opts := kubeapplier.StreamOptions{PollInterval: 5 * time.Millisecond}
	var infs *kubeapplier.Informers = kubeapplier.NewInformers(db, db, "", "mc01", opts)
	if err := infs.CheckStreams(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	infs.Start(ctx)
	if err := infs.WaitForSync(ctx); err != nil || !infs.HasSynced() {
		t.Fatalf("WaitForSync: %v", err)
	}
	var apply *kubeapplier.DesireInformer[*kubeapplier.ApplyDesire] = infs.ApplyDesires
	d := &kubeapplier.ApplyDesire{DynamoDBMetadata: kubeapplier.DynamoDBMetadata{DocumentID: "x"}}
	specs := tables.New[*kubeapplier.ApplyDesire](db, apply.Table())
	if specs.Name() != apply.Table() {
		t.Fatalf("Name = %q, want %q", specs.Name(), apply.Table())
	}
	if _, err := specs.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	var lister kubeapplier.DesireLister[*kubeapplier.ApplyDesire] = apply.Lister
	deadline := time.Now().Add(5 * time.Second)
	for {
		if got, err := lister.Get("x"); err == nil && got.Version == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the informer did not deliver the new spec")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A desire the cache does not hold is ErrNotFound, as the api module's tables say it.
	if _, err := lister.Get("missing"); !errors.Is(err, kubeapplier.ErrNotFound) {
		t.Fatalf("Get of a desire not in the cache: %v, want ErrNotFound", err)
	}
	if n := len(infs.All()); n != 3 {
		t.Fatalf("Informers() = %d, want 3", n)
	}

	missing := kubeapplier.NewInformers(dynamofake.New(), dynamofake.New(), "none-", "mc01", opts)
	if err := missing.CheckStreams(context.Background()); !errors.Is(err, kubeapplier.ErrTableNotFound) {
		t.Fatalf("CheckStreams without tables: %v", err)
	}
	noStream := dynamofake.New()
	for _, k := range kubeapplier.DesireKinds {
		noStream.AddTable(api.TableName("", "mc01", api.SpecsTable, k), ddbtypes.StreamViewTypeKeysOnly, "shard-0")
	}
	if err := kubeapplier.NewInformers(noStream, noStream, "", "mc01", opts).CheckStreams(context.Background()); !errors.Is(err, kubeapplier.ErrStreamNotConfigured) {
		t.Fatalf("CheckStreams with a KEYS_ONLY stream: %v", err)
	}
}

// recordingKube is a KubeClient of the caller's own: Options.Kube takes it.
type recordingKube struct {
	kubeapplier.KubeClient
	deletes  []string
	managers []string // the field manager of each apply
}

func (k *recordingKube) Apply(_ context.Context, _ schema.GroupVersionResource, obj *unstructured.Unstructured, fieldManager string) (*unstructured.Unstructured, error) {
	k.managers = append(k.managers, fieldManager)
	out := obj.DeepCopy()
	out.SetGeneration(1)
	return out, nil
}

func (k *recordingKube) Delete(ctx context.Context, gvr schema.GroupVersionResource, ns, name string, uid types.UID, rv string) error {
	k.deletes = append(k.deletes, ns+"/"+name)
	return k.KubeClient.Delete(ctx, gvr, ns, name, uid, rv)
}

// TestOptionsFromOutside: New refuses bad Options with ErrInvalidOptions and takes the
// caller's own KubeClient, StreamOptions and SecretRedaction; a DeleteDesire wrapper can
// delegate to NewDeleteReconciler over any KubeClient.
func TestOptionsFromOutside(t *testing.T) {
	if _, err := kubeapplier.New(kubeapplier.Options{}); !errors.Is(err, kubeapplier.ErrInvalidOptions) {
		t.Fatalf("New(Options{}) = %v, want ErrInvalidOptions", err)
	}
	db := dynamofake.New()
	dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	kube := &recordingKube{KubeClient: kubeapplier.DynamicKube{Client: dyn}}
	wrapped := false
	a, err := kubeapplier.New(kubeapplier.Options{ManagementCluster: "mc01", DynamoDB: db, Streams: db,
		DynamicClient: dyn, RESTMapper: mapper, Kube: kube,
		Stream:          kubeapplier.StreamOptions{PollInterval: 100 * time.Millisecond},
		SecretRedaction: kubeapplier.SecretRedaction{AllowKeys: []string{"ca.crt"}},
		Reconcilers: kubeapplier.ReconcilerWrappers{Delete: func(def kubeapplier.Reconciler[*kubeapplier.DeleteDesire]) kubeapplier.Reconciler[*kubeapplier.DeleteDesire] {
			wrapped = true
			return def
		}}})
	if err != nil || !wrapped {
		t.Fatalf("New with the caller's clients: %v (wrapper called %v)", err, wrapped)
	}
	// Before Run, the informers are empty and not synced (Applier.Informers).
	if inf := a.Informers(); inf == nil || inf.HasSynced() || len(inf.ApplyDesires.Lister.List()) != 0 {
		t.Fatal("Informers before Run: want empty, not synced")
	}
	// The default ApplyDesire reconciler over the caller's KubeClient, as the applier's own
	// field manager.
	ad := &kubeapplier.ApplyDesire{}
	ad.Spec.KubeContent = json.RawMessage([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"new","namespace":"default"}}`))
	applied := kubeapplier.NewApplyReconciler(kube, restMapper{mapper}, kubeapplier.DefaultFieldManager).Reconcile(context.Background(), ad)
	if !applied.Successful() || len(kube.managers) != 1 || kube.managers[0] != kubeapplier.DefaultFieldManager {
		t.Fatalf("apply = %v (%q), field managers %v, want one apply as %q", applied, applied.Message(), kube.managers, kubeapplier.DefaultFieldManager)
	}
	// The default DeleteDesire reconciler over the caller's KubeClient.
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("v1")
	obj.SetKind("ConfigMap")
	obj.SetName("old")
	obj.SetNamespace("default")
	cm := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	if _, err := dyn.Resource(cm).Namespace("default").Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := kubeapplier.NewDeleteReconciler(kube, restMapper{mapper}, nil)
	d := &kubeapplier.DeleteDesire{}
	d.Spec.TargetItem = kubeapplier.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "old"}
	if kubeapplier.GVROf(d.Spec.TargetItem) != cm {
		t.Fatalf("GVR = %v, want %v", kubeapplier.GVROf(d.Spec.TargetItem), cm)
	}
	if v := r.Reconcile(context.Background(), d); !v.Successful() || v.Reason() != kubeapplier.ReasonNoErrors || len(kube.deletes) != 1 {
		t.Fatalf("delete = %v, deletes %v", v, kube.deletes)
	}
	if got := api.RedactedValue; got != base64.StdEncoding.EncodeToString([]byte("REDACTED")) {
		t.Fatalf("RedactedValue = %q", got)
	}
}

// restMapper makes a plain RESTMapper resettable (a cache the caller owns).
type restMapper struct{ meta.RESTMapper }

func (restMapper) Reset() {}

// TestParseKubeContentFromOutside: ParseKubeContent's refusals are *PreCheckError.
func TestParseKubeContentFromOutside(t *testing.T) {
	_, err := kubeapplier.ParseKubeContent(json.RawMessage([]byte(`{"kind":"ConfigMap"}`)))
	var pc *kubeapplier.PreCheckError
	if !errors.As(err, &pc) || !strings.Contains(pc.Message, "missing apiVersion") {
		t.Fatalf("ParseKubeContent = %v, want a *PreCheckError", err)
	}
}

// interfaceMethods are exported methods that exist to satisfy an interface a caller hands
// the value to (runtime.Object, metav1.ObjectMetaAccessor, error, fmt.Stringer,
// controller-runtime's manager.Runnable, LeaderElectionRunnable and WarmupRunnable): their
// outside use is the interface's.
var interfaceMethods = map[string]bool{"DeepCopyObject": true, "GetObjectKind": true, "GetObjectMeta": true,
	"Error": true, "Is": true, "String": true, "Start": true, "NeedLeaderElection": true, "Warmup": true}

// TestEveryExportHasAnOutsideUse: every exported identifier of the package is used from
// outside it, by its full selector: by cmd/ or examples/ of this module, or by a test of
// package kubeapplier_test (hack/ and the package's own tests do not count). The outside
// packages are type-checked (golang.org/x/tools/go/packages), so kubeapplier.X must resolve to
// this package's X, and a method T.M counts only where a selector resolves to T's M. A method
// by which T implements one of the package's exported interfaces (for a generic T: a method
// named as one of theirs), or one of interfaceMethods, is used as that interface is. An export without such a use should be unexported (or shown in
// use by an example).
func TestEveryExportHasAnOutsideUse(t *testing.T) {
	const self = "github.com/kube-applier-aws/kubeapplier"
	pkgs, err := packages.Load(&packages.Config{Tests: true,
		Mode: packages.NeedName | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedSyntax | packages.NeedImports},
		".", "./cmd/...", "./examples/...")
	if err != nil {
		t.Fatal(err)
	}
	var lib *gotypes.Package
	used := map[string]bool{}
	for _, p := range pkgs {
		if len(p.Errors) > 0 {
			t.Fatalf("%s: %v", p.ID, p.Errors)
		}
		switch {
		case p.PkgPath == self && !strings.Contains(p.ID, ".test"):
			lib = p.Types
			continue
		case p.PkgPath == self || strings.HasSuffix(p.PkgPath, ".test"):
			continue // the package's own tests, and test mains
		}
		for _, obj := range p.TypesInfo.Uses {
			if obj.Pkg() == nil || obj.Pkg().Path() != self {
				continue
			}
			if name := exportKey(obj); name != "" {
				used[name] = true
			}
		}
	}
	if lib == nil {
		t.Fatal("the package itself was not loaded")
	}
	exports, viaInterface := exportsOf(lib)
	var unused []string
	for _, name := range exports {
		_, method, isMethod := strings.Cut(name, ".")
		if used[name] || viaInterface[name] || isMethod && interfaceMethods[method] {
			continue
		}
		unused = append(unused, name)
	}
	if len(unused) > 0 {
		t.Fatalf("exported without an outside use (cmd/, examples/, package kubeapplier_test):\n%s", strings.Join(unused, "\n"))
	}
	t.Logf("%d exported identifiers, each used from outside the package", len(exports))
}

// exportKey names obj as exportsOf does: "Name" for a package-level object, "Type.Method" for
// a method of a named type; "" for anything else (a field, a local).
func exportKey(obj gotypes.Object) string {
	if fn, ok := obj.(*gotypes.Func); ok {
		fn = fn.Origin()
		if recv := fn.Signature().Recv(); recv != nil {
			if named := namedOf(recv.Type()); named != nil {
				return named.Origin().Obj().Name() + "." + fn.Name()
			}
			return "" // an interface's method: counted with its interface
		}
	}
	if obj.Parent() != nil && obj.Parent() == obj.Pkg().Scope() {
		return obj.Name()
	}
	return ""
}

// namedOf is t's named type, through a pointer; nil for an interface or unnamed type.
func namedOf(t gotypes.Type) *gotypes.Named {
	if p, ok := t.(*gotypes.Pointer); ok {
		t = p.Elem()
	}
	n, ok := t.(*gotypes.Named)
	if !ok || gotypes.IsInterface(n) {
		return nil
	}
	return n
}

// exportsOf lists pkg's exported names ("Name", and "Type.Method" for the methods its own
// named types declare) and, of those methods, the ones that implement a method of an exported
// interface of pkg ("Type.Method": used as that interface is). For a generic type, whose
// implementation types.Implements cannot tell, a method named as an interface's counts.
func exportsOf(pkg *gotypes.Package) (names []string, viaInterface map[string]bool) {
	scope := pkg.Scope()
	var ifaces []*gotypes.Interface
	ifaceMethods := map[string]bool{}
	for _, name := range scope.Names() {
		if tn, ok := scope.Lookup(name).(*gotypes.TypeName); ok && tn.Exported() && !tn.IsAlias() {
			if it, ok := tn.Type().Underlying().(*gotypes.Interface); ok {
				ifaces = append(ifaces, it)
				for m := range it.Methods() {
					ifaceMethods[m.Name()] = true
				}
			}
		}
	}
	viaInterface = map[string]bool{}
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		names = append(names, name)
		tn, ok := obj.(*gotypes.TypeName)
		if !ok || tn.IsAlias() || gotypes.IsInterface(tn.Type()) {
			continue // an alias's methods are the aliased package's
		}
		named, ok := tn.Type().(*gotypes.Named)
		if !ok {
			continue
		}
		generic := named.TypeParams().Len() > 0
		for m := range named.Methods() {
			if !m.Exported() {
				continue
			}
			key := name + "." + m.Name()
			names = append(names, key)
			if generic {
				viaInterface[key] = ifaceMethods[m.Name()]
				continue
			}
			for _, it := range ifaces {
				implements := gotypes.Implements(named, it) || gotypes.Implements(gotypes.NewPointer(named), it)
				if implements && it.NumMethods() > 0 && hasMethod(it, m.Name()) {
					viaInterface[key] = true
				}
			}
		}
	}
	sort.Strings(names)
	return names, viaInterface
}

// hasMethod reports whether it has a method called name.
func hasMethod(it *gotypes.Interface, name string) bool {
	for m := range it.Methods() {
		if m.Name() == name {
			return true
		}
	}
	return false
}

// TestReplaceManagedFieldsFromOutside: DynamicKube.ReplaceManagedFields replaces an object's
// managedFields only while its resourceVersion is the one given (a JSON patch with a test).
func TestReplaceManagedFieldsFromOutside(t *testing.T) {
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c", "namespace": "n", "resourceVersion": "5"}}}
	cm.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "old", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1alpha1"},
		{Manager: "kaa", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1"}})
	client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), cm)
	kube := kubeapplier.DynamicKube{Client: client}
	keep := []metav1.ManagedFieldsEntry{{Manager: "kaa", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1"}}
	if err := kube.ReplaceManagedFields(context.Background(), gvr, "n", "c", "4", keep); err == nil {
		t.Fatal("replaced under a stale resourceVersion")
	}
	if err := kube.ReplaceManagedFields(context.Background(), gvr, "n", "c", "5", keep); err != nil {
		t.Fatal(err)
	}
	live, err := kube.Get(context.Background(), gvr, "n", "c")
	if err != nil {
		t.Fatal(err)
	}
	if mf := live.GetManagedFields(); len(mf) != 1 || mf[0].Manager != "kaa" {
		t.Fatalf("managedFields = %+v, want only kaa's", mf)
	}
}

// TestOptionVerbsFromOutside: DynamicKube's methods for desire options carry the option to
// the apiserver: an apply without force, a create with the field manager, a delete with the
// propagation policy and the uid precondition. An embedder's KubeClient wrapper forwards them
// (a KubeClient without them cannot serve those options).
func TestOptionVerbsFromOutside(t *testing.T) {
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	var actions []clienttesting.Action
	client.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		actions = append(actions, a)
		return false, nil, nil
	})
	kube := kubeapplier.DynamicKube{Client: client}
	ctx := context.Background()
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c", "namespace": "n"}}}
	created, err := kube.Create(ctx, gvr, cm, "kaa")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kube.Create(ctx, gvr, cm, "kaa"); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second Create: %v, want AlreadyExists", err)
	}
	_, _ = kube.ApplyUnforced(ctx, gvr, cm, "kaa") // the fake's apply support does not matter: the call does
	_, _ = kube.Apply(ctx, gvr, cm, "kaa")
	if err := kube.DeleteWithPropagation(ctx, gvr, "n", "c", created.GetUID(), "", metav1.DeletePropagationOrphan); err != nil {
		t.Fatal(err)
	}
	var forces []bool
	for _, a := range actions {
		switch a := a.(type) {
		case clienttesting.CreateActionImpl:
			if a.CreateOptions.FieldManager != "kaa" {
				t.Errorf("create with field manager %q, want kaa", a.CreateOptions.FieldManager)
			}
		case clienttesting.PatchActionImpl:
			forces = append(forces, a.PatchOptions.Force != nil && *a.PatchOptions.Force)
		case clienttesting.DeleteActionImpl:
			o := a.DeleteOptions
			if o.PropagationPolicy == nil || *o.PropagationPolicy != metav1.DeletePropagationOrphan || o.Preconditions == nil || o.Preconditions.UID == nil {
				t.Errorf("delete options %+v, want Orphan with a uid precondition", o)
			}
		}
	}
	if len(forces) != 2 || forces[0] || !forces[1] {
		t.Fatalf("applies forced %v, want [false true] (ApplyUnforced, then Apply)", forces)
	}
}

// TestInformerHandlersGetDesires: a handler an embedder adds to an informer gets each
// desire with DesireOf, on a delete too (the informers hold the api module's desires in
// envelopes).
func TestInformerHandlersGetDesires(t *testing.T) {
	f := dynamofake.New()
	table := api.TableName("", "mc01", api.SpecsTable, kubeapplier.KindApplyDesire)
	f.AddTable(table, ddbtypes.StreamViewTypeNewAndOldImages, "shard-0")
	inf := kubeapplier.NewInformers(f, f, "", "mc01", kubeapplier.StreamOptions{PollInterval: 10 * time.Millisecond})
	var (
		mu     sync.Mutex
		events []string
	)
	record := func(what string, obj any) {
		d, ok := kubeapplier.DesireOf(obj)
		mu.Lock()
		defer mu.Unlock()
		if a, isApply := d.(*kubeapplier.ApplyDesire); ok && isApply {
			events = append(events, what+" "+a.DocumentID)
		} else {
			events = append(events, what+" without a desire")
		}
	}
	if _, err := inf.ApplyDesires.Informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { record("add", obj) },
		DeleteFunc: func(obj any) { record("delete", obj) },
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go inf.ApplyDesires.Informer.RunWithContext(ctx)
	for !inf.ApplyDesires.Informer.HasSynced() {
		time.Sleep(10 * time.Millisecond)
	}
	now := time.Now().UTC()
	d := &kubeapplier.ApplyDesire{DynamoDBMetadata: kubeapplier.DynamoDBMetadata{DocumentID: "a", Version: 1, CreateTime: now, UpdateTime: now}}
	d.Spec.ManagementCluster = "mc01"
	item, err := api.EncodeItem(d)
	if err != nil {
		t.Fatal(err)
	}
	f.Put(table, "shard-0", item)
	f.Remove(table, "shard-0", "a")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		n := len(events)
		mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 2 || events[0] != "add a" || events[1] != "delete a" {
		t.Fatalf("handler saw %v, want [add a delete a]", events)
	}
}
