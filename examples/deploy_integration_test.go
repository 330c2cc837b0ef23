package examples_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
	"github.com/kube-applier-aws/kubeapplier/internal/testenv"
)

// TestIntegrationDeployRBAC applies examples/deploy (every file of its kustomization) to the
// local apiserver, renamed into a namespace of its own (and its cluster-scoped RBAC renamed
// to match), then runs the binary as the Deployment does (its args) but with the
// ServiceAccount's own token, not the admin kubeconfig. With exactly the RBAC the example
// grants, it elects itself (the Lease Role), applies, reads and deletes a ConfigMap, and an
// ApplyDesire for a kind the ClusterRole does not grant (a ClusterRole) fails Forbidden: the
// RBAC is enough and bounds the backends.
func TestIntegrationDeployRBAC(t *testing.T) {
	env := testenv.DynamoDB(t)
	admin := testenv.Kube(t)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	target := testenv.Namespace(t, admin)        // where the desires' objects go
	ns := testenv.Name(t, "kaa-deploy")          // replaces kube-applier-aws
	clusterName := testenv.Name(t, "kaa-deploy") // of the ClusterRole and its binding

	// Apply the example, renamed.
	dyn := dynamic.NewForConfigOrDie(admin)
	mapper := newMapper(t, admin)
	var deployment *unstructured.Unstructured
	var clusterScoped []*unstructured.Unstructured
	for _, file := range kustomizationResources(t) {
		for _, o := range readObjects(t, filepath.Join(deployDir, file)) {
			rename(o, ns, clusterName)
			m, err := mapper.RESTMapping(o.GroupVersionKind().GroupKind(), o.GroupVersionKind().Version)
			if err != nil {
				t.Fatalf("%s: %v", ref(o), err)
			}
			var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
			if m.Scope.Name() == meta.RESTScopeNameNamespace {
				ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
			} else if o.GetKind() != "Namespace" {
				clusterScoped = append(clusterScoped, o)
			}
			data, err := json.Marshal(o.Object)
			if err != nil {
				t.Fatal(err)
			}
			force := true
			if _, err := ri.Patch(ctx, o.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "deploy-test", Force: &force}); err != nil {
				t.Fatalf("apply %s (%s): %v", ref(o), file, err)
			}
			if o.GetKind() == "Deployment" {
				deployment = o
			}
		}
	}
	t.Cleanup(func() { // cluster-scoped leftovers; the namespace stays Terminating (no controller-manager)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, o := range clusterScoped {
			m, err := mapper.RESTMapping(o.GroupVersionKind().GroupKind(), o.GroupVersionKind().Version)
			if err == nil {
				err = dyn.Resource(m.Resource).Delete(ctx, o.GetName(), metav1.DeleteOptions{})
			}
			if err != nil && !apierrors.IsNotFound(err) {
				t.Logf("cleanup %s: %v", ref(o), err)
			}
		}
		if err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			t.Logf("cleanup namespace %s: %v", ns, err)
		}
	})
	if deployment == nil {
		t.Fatal("the kustomization has no Deployment")
	}

	// The ServiceAccount's own credentials: a token from the TokenRequest API, in a kubeconfig
	// with the cluster's CA and nothing of the admin's.
	kc := kubernetes.NewForConfigOrDie(admin)
	sa := nestedString(t, deployment, "spec", "template", "spec", "serviceAccountName")
	expiry := int64(3600)
	tok, err := kc.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token of ServiceAccount %s/%s: %v", ns, sa, err)
	}
	saKubeconfig := writeKubeconfig(t, admin, tok.Status.Token)
	if whoami(t, saKubeconfig) != "system:serviceaccount:"+ns+":"+sa {
		t.Fatalf("the kubeconfig does not authenticate as the ServiceAccount")
	}

	// The binary with the Deployment's args, but local: endpoint, table prefix, ports, kubeconfig.
	bin := buildBinary(t)
	if _, err := api.EnsureTables(ctx, env.Client, env.Prefix, cluster); err != nil {
		t.Fatal(err)
	}
	args := []string{"--kubeconfig", saKubeconfig, "--aws-endpoint-url", env.Endpoint, "--table-prefix", env.Prefix,
		"--leader-election-lease-duration", "4s", "--leader-election-renew-deadline", "3s", "--leader-election-retry-period", "500ms"}
	for _, a := range containerArgs(t, deployment) {
		switch {
		case strings.HasPrefix(a, "--metrics-bind-address="), strings.HasPrefix(a, "--health-probe-bind-address="):
			name, _, _ := strings.Cut(a, "=")
			args = append(args, name+"="+freeAddr(t))
		default:
			args = append(args, a) // --management-cluster, --aws-region, --leader-elect, --leader-election-namespace (renamed)
		}
	}
	creds, err := env.Client.Options().Credentials.Retrieve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "AWS_ACCESS_KEY_ID=" + creds.AccessKeyID,
		"AWS_SECRET_ACCESS_KEY=" + creds.SecretAccessKey, "AWS_EC2_METADATA_DISABLED=true"}
	var log testenv.Output
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if t.Failed() {
			t.Logf("applier's log:\n%s", log.String())
		}
	})
	testenv.WaitUntil(t, 60*time.Second, "the applier leads", func() bool { return strings.Contains(log.String(), `"reconciling"`) })
	if lease, err := kc.CoordinationV1().Leases(ns).Get(ctx, "kube-applier-aws", metav1.GetOptions{}); err != nil || lease.Spec.HolderIdentity == nil {
		t.Fatalf("the Lease in %s: %v", ns, err)
	}

	// Apply, read and delete a ConfigMap; a ClusterRole (not granted) is refused Forbidden.
	cm := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"rbac-cm","namespace":%q},"data":{"k":"v"}}`, target)
	cmItem := kubeapplier.TargetItem{Version: "v1", Resource: "configmaps", Namespace: target, Name: "rbac-cm"}
	db := tables.NewClient(env.Client, env.Prefix, cluster)
	applySpecs := tables.New[*kubeapplier.ApplyDesire](env.Client, api.TableName(env.Prefix, cluster, api.SpecsTable, kubeapplier.KindApplyDesire))
	readSpecs := tables.New[*kubeapplier.ReadDesire](env.Client, api.TableName(env.Prefix, cluster, api.SpecsTable, kubeapplier.KindReadDesire))
	deleteSpecs := tables.New[*kubeapplier.DeleteDesire](env.Client, api.TableName(env.Prefix, cluster, api.SpecsTable, kubeapplier.KindDeleteDesire))

	ad := &kubeapplier.ApplyDesire{}
	ad.DocumentID, ad.Spec.ManagementCluster, ad.Spec.KubeContent = "apply-cm", cluster, json.RawMessage([]byte(cm))
	mustCreate(t, ctx, applySpecs.Create, ad)
	waitStatus(t, "ApplyDesire apply-cm", func() (kubeapplier.Desire, error) { return db.ApplyDesireStatus().Get(ctx, "apply-cm") }, kubeapplier.ConditionTrue, "")
	if _, err := kc.CoreV1().ConfigMaps(target).Get(ctx, "rbac-cm", metav1.GetOptions{}); err != nil {
		t.Fatalf("the applied ConfigMap: %v", err)
	}

	rd := &kubeapplier.ReadDesire{}
	rd.DocumentID, rd.Spec.ManagementCluster, rd.Spec.TargetItem = "read-cm", cluster, cmItem
	mustCreate(t, ctx, readSpecs.Create, rd)
	st := waitStatus(t, "ReadDesire read-cm", func() (kubeapplier.Desire, error) { return db.ReadDesireStatus().Get(ctx, "read-cm") }, kubeapplier.ConditionTrue, "")
	if c := st.(*kubeapplier.ReadDesire).Status.KubeContent; c == nil || !strings.Contains(string(c), `"k":"v"`) {
		t.Fatalf("ReadDesire read-cm mirrored %v", c)
	}

	clusterRole := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"` + clusterName + `-forbidden"},"rules":[]}`
	forbidden := &kubeapplier.ApplyDesire{}
	forbidden.DocumentID, forbidden.Spec.ManagementCluster, forbidden.Spec.KubeContent = "apply-forbidden", cluster, json.RawMessage([]byte(clusterRole))
	mustCreate(t, ctx, applySpecs.Create, forbidden)
	waitStatus(t, "ApplyDesire apply-forbidden", func() (kubeapplier.Desire, error) {
		return db.ApplyDesireStatus().Get(ctx, "apply-forbidden")
	}, kubeapplier.ConditionFalse, "forbidden")

	if err := applySpecs.Delete(ctx, "apply-cm"); err != nil { // the DeleteDesire's turn
		t.Fatal(err)
	}
	dd := &kubeapplier.DeleteDesire{}
	dd.DocumentID, dd.Spec.ManagementCluster, dd.Spec.TargetItem = "delete-cm", cluster, cmItem
	mustCreate(t, ctx, deleteSpecs.Create, dd)
	waitStatus(t, "DeleteDesire delete-cm", func() (kubeapplier.Desire, error) { return db.DeleteDesireStatus().Get(ctx, "delete-cm") }, kubeapplier.ConditionTrue, "")
	if _, err := kc.CoreV1().ConfigMaps(target).Get(ctx, "rbac-cm", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the deleted ConfigMap: %v, want NotFound", err)
	}

	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no exit within 30 s of SIGTERM")
	}
	// Nothing else was forbidden to the ServiceAccount (the Lease, events, discovery, watches).
	for _, line := range strings.Split(log.String(), "\n") {
		if strings.Contains(strings.ToLower(line), "forbidden") && !strings.Contains(line, clusterName+"-forbidden") {
			t.Errorf("forbidden to the ServiceAccount: %s", line)
		}
	}
}

// TestIntegrationDeployDryRun runs the check that examples/deploy/kustomization.yaml and
// docs/examples.md give, as printed but for the folder (this test runs in examples/): `kubectl
// kustomize examples/deploy` renders every object offline, and `kubectl apply --dry-run=client
// -k examples/deploy` maps each onto the cluster's API and writes nothing. (--dry-run=server
// refuses the namespaced objects on a cluster without the kube-applier-aws namespace: its
// creation is dry too.)
func TestIntegrationDeployDryRun(t *testing.T) {
	testenv.Kube(t) // skips, or fails in CI, without the local stack
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("the documented dry run needs kubectl on PATH: %v", err)
	}
	var objects int
	for _, file := range kustomizationResources(t) {
		objects += len(readObjects(t, filepath.Join(deployDir, file)))
	}
	env := append(os.Environ(), "KUBECONFIG="+os.Getenv(testenv.EnvKubeconfig))
	run := func(args ...string) string {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, kubectl, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	rendered := run("kustomize", deployDir)
	if n := strings.Count("\n"+rendered, "\nkind: "); n != objects {
		t.Errorf("kubectl kustomize rendered %d objects, the kustomization's files hold %d:\n%s", n, objects, rendered)
	}
	applied := run("apply", "--dry-run=client", "-k", deployDir)
	if n := strings.Count(applied, " (dry run)\n"); n != objects {
		t.Errorf("kubectl apply --dry-run=client printed %d objects, want %d:\n%s", n, objects, applied)
	}
}

// kustomizationResources lists the files of examples/deploy/kustomization.yaml.
func kustomizationResources(t *testing.T) []string {
	t.Helper()
	k := readObjects(t, filepath.Join(deployDir, "kustomization.yaml"))
	if len(k) != 1 {
		t.Fatal("kustomization.yaml: want one document")
	}
	res, _, _ := unstructured.NestedStringSlice(k[0].Object, "resources")
	if len(res) == 0 {
		t.Fatal("kustomization.yaml lists no resources")
	}
	return res
}

// rename moves an object of the example from namespace kube-applier-aws into ns, and gives
// the cluster-scoped RBAC (ClusterRole, ClusterRoleBinding) the name clusterName.
func rename(o *unstructured.Unstructured, ns, clusterName string) {
	switch o.GetKind() {
	case "Namespace":
		o.SetName(ns)
	case "ClusterRole":
		o.SetName(clusterName)
	case "ClusterRoleBinding":
		o.SetName(clusterName)
		_ = unstructured.SetNestedField(o.Object, clusterName, "roleRef", "name")
	}
	if o.GetNamespace() == namespace {
		o.SetNamespace(ns)
	}
	if subjects, ok, _ := unstructured.NestedSlice(o.Object, "subjects"); ok {
		for _, s := range subjects {
			if m, ok := s.(map[string]any); ok && m["namespace"] == namespace {
				m["namespace"] = ns
			}
		}
		_ = unstructured.SetNestedSlice(o.Object, subjects, "subjects")
	}
	if o.GetKind() == "Deployment" {
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			m := c.(map[string]any)
			args, _ := m["args"].([]any)
			for i, a := range args {
				if s, ok := a.(string); ok {
					args[i] = strings.Replace(s, "--leader-election-namespace="+namespace, "--leader-election-namespace="+ns, 1)
				}
			}
		}
		_ = unstructured.SetNestedSlice(o.Object, containers, "spec", "template", "spec", "containers")
	}
}

func containerArgs(t *testing.T, d *unstructured.Unstructured) []string {
	t.Helper()
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(containers) != 1 {
		t.Fatalf("the Deployment has %d containers, want 1", len(containers))
	}
	var out []string
	for _, a := range containers[0].(map[string]any)["args"].([]any) {
		out = append(out, a.(string))
	}
	return out
}

func nestedString(t *testing.T, o *unstructured.Unstructured, path ...string) string {
	t.Helper()
	s, ok, err := unstructured.NestedString(o.Object, path...)
	if !ok || err != nil {
		t.Fatalf("%s: no %s", ref(o), strings.Join(path, "."))
	}
	return s
}

// newMapper maps the example's kinds to resources through the apiserver's discovery.
func newMapper(t *testing.T, cfg *rest.Config) meta.RESTMapper {
	t.Helper()
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
}

// writeKubeconfig writes a kubeconfig for admin's server and CA with token as its only
// credential.
func writeKubeconfig(t *testing.T, admin *rest.Config, token string) string {
	t.Helper()
	c := clientcmdapi.NewConfig()
	c.Clusters["local"] = &clientcmdapi.Cluster{Server: admin.Host, CertificateAuthorityData: admin.CAData, CertificateAuthority: admin.CAFile}
	c.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: token}
	c.Contexts["sa"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "sa"}
	c.CurrentContext = "sa"
	path := filepath.Join(t.TempDir(), "sa.kubeconfig")
	if err := clientcmd.WriteToFile(*c, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// whoami asks the apiserver who the kubeconfig authenticates as.
func whoami(t *testing.T, kubeconfig string) string {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	r, err := kubernetes.NewForConfigOrDie(cfg).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SelfSubjectReview: %v", err)
	}
	return r.Status.UserInfo.Username
}

func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kube-applier-aws")
	build := exec.Command("go", "build", "-o", bin, "./cmd/kube-applier-aws")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func mustCreate[T kubeapplier.Desire](t *testing.T, ctx context.Context, create func(context.Context, T) (T, error), d T) {
	t.Helper()
	if _, err := create(ctx, d); err != nil {
		t.Fatalf("create %s: %v", d.Meta().DocumentID, err)
	}
}

// waitStatus waits until get returns a status whose Successful condition is want (and whose
// message contains msg), and returns it.
func waitStatus(t *testing.T, what string, get func() (kubeapplier.Desire, error), want string, msg string) kubeapplier.Desire {
	t.Helper()
	var last string
	var got kubeapplier.Desire
	testenv.WaitUntil(t, 60*time.Second, what+" Successful="+string(want), func() bool {
		d, err := get()
		if err != nil || d == nil {
			last = fmt.Sprint(err)
			return false
		}
		c := d.StatusCommon().Condition(kubeapplier.ConditionSuccessful)
		if c == nil {
			return false
		}
		last = fmt.Sprintf("%s/%s: %s", c.Status, c.Reason, c.Message)
		got = d
		return c.Status == want && strings.Contains(strings.ToLower(c.Message), msg)
	})
	t.Logf("%s: %s", what, last)
	return got
}
