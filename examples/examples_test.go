package examples_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
)

const (
	deployDir = "deploy"
	// Files for other systems than Kubernetes live beside the kustomization, not in its folder.
	iamPolicyFile = "deploy/aws/iam-policy.json"
	manifestsDir  = "manifests"
	cluster       = "mc01"
	namespace     = "kube-applier-aws"
)

// binaryFlags are the flags of cmd/kube-applier-aws; deployment.yaml may use only these.
var binaryFlags = []string{
	"management-cluster", "kubeconfig", "aws-region", "aws-endpoint-url",
	"leader-elect", "leader-election-namespace", "leader-election-id",
	"metrics-bind-address", "health-probe-bind-address", "kube-api-qps", "kube-api-burst", "v",
	"table-name-format", "table",
}

// readObjects decodes every YAML document of file into unstructured objects (empty
// documents, e.g. a trailing "---", are skipped).
func readObjects(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []*unstructured.Unstructured
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("%s: document %d: %v", file, i, err)
		}
		// Strict: duplicate keys are an error. utiljson decodes numbers as int64 like the API.
		j, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			t.Fatalf("%s: document %d: %v", file, i, err)
		}
		var m map[string]any
		if err := utiljson.Unmarshal(j, &m); err != nil {
			t.Fatalf("%s: document %d: %v", file, i, err)
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
}

func yamlFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"*.yaml", "*.yml"} {
		m, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	sort.Strings(files)
	if len(files) == 0 {
		t.Fatalf("no YAML files in %s", dir)
	}
	return files
}

func ref(o *unstructured.Unstructured) string {
	s := o.GetKind() + " "
	if o.GetNamespace() != "" {
		s += o.GetNamespace() + "/"
	}
	return s + o.GetName()
}

// find returns the single object of kind in file.
func find(t *testing.T, file, kind string) *unstructured.Unstructured {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, o := range readObjects(t, filepath.Join(deployDir, file)) {
		if o.GetKind() == kind {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s: want 1 %s, found %d", file, kind, len(found))
	}
	return found[0]
}

func TestEveryObjectIsWellFormed(t *testing.T) {
	want := map[string][]string{
		"deploy/namespace.yaml":      {"Namespace kube-applier-aws"},
		"deploy/serviceaccount.yaml": {"ServiceAccount kube-applier-aws/kube-applier-aws"},
		"deploy/rbac.yaml": {
			"ClusterRole kube-applier-aws", "ClusterRoleBinding kube-applier-aws",
			"Role kube-applier-aws/kube-applier-aws-leader-election",
			"RoleBinding kube-applier-aws/kube-applier-aws-leader-election",
		},
		"deploy/deployment.yaml":              {"Deployment kube-applier-aws/kube-applier-aws"},
		"deploy/pdb.yaml":                     {"PodDisruptionBudget kube-applier-aws/kube-applier-aws"},
		"deploy/kustomization.yaml":           {"Kustomization "},
		"deploy/prometheusrule.yaml":          {"PrometheusRule kube-applier-aws/kube-applier-aws"},
		"manifests/configmap.yaml":            {"ConfigMap demo/demo-settings"},
		"manifests/namespace-deployment.yaml": {"Namespace demo", "Deployment demo/web"},
		"manifests/crd.yaml":                  {"CustomResourceDefinition widgets.demo.example.com"},
		"manifests/widget.yaml":               {"Widget demo/w1"},
	}
	files := append(yamlFiles(t, deployDir), yamlFiles(t, manifestsDir)...)
	for _, file := range files {
		t.Run(file, func(t *testing.T) {
			objs := readObjects(t, file)
			if len(objs) == 0 {
				t.Fatal("no objects")
			}
			var got []string
			for _, o := range objs {
				if o.GetAPIVersion() == "" || o.GetKind() == "" {
					t.Errorf("document without apiVersion/kind: %v", o.Object)
				}
				// A Kustomization is a kustomize config, not an API object: no metadata.name.
				if o.GetName() == "" && o.GetKind() != "Kustomization" {
					t.Errorf("%s has no metadata.name", o.GetKind())
				}
				got = append(got, ref(o))
			}
			w, ok := want[filepath.ToSlash(file)]
			if !ok {
				t.Fatalf("unexpected file %s (objects %q): add it to this test", file, got)
			}
			if !slices.Equal(got, w) {
				t.Errorf("objects = %q, want %q", got, w)
			}
		})
	}
}

func TestDemoManifests(t *testing.T) {
	deploy := readObjects(t, filepath.Join(manifestsDir, "namespace-deployment.yaml"))[1]
	crd := readObjects(t, filepath.Join(manifestsDir, "crd.yaml"))[0]
	widget := readObjects(t, filepath.Join(manifestsDir, "widget.yaml"))[0]
	version := func(o *unstructured.Unstructured) map[string]any {
		vs, _, _ := unstructured.NestedSlice(o.Object, "spec", "versions")
		if len(vs) != 1 {
			t.Fatalf("CRD versions = %v, want one", vs)
		}
		return vs[0].(map[string]any)
	}
	v := version(crd)
	for _, tc := range []struct {
		name string
		got  any
		want any
	}{
		{"web replicas", nested(deploy, "spec", "replicas"), int64(1)},
		{"web image", nested(deploy, "spec", "template", "spec", "containers", 0, "image"), "registry.k8s.io/pause:3.10"},
		{"crd group", nested(crd, "spec", "group"), "demo.example.com"},
		{"crd scope", nested(crd, "spec", "scope"), "Namespaced"},
		{"crd kind", nested(crd, "spec", "names", "kind"), "Widget"},
		{"crd plural", nested(crd, "spec", "names", "plural"), "widgets"},
		{"crd name is plural.group", crd.GetName(), "widgets.demo.example.com"},
		{"crd v1 name", v["name"], "v1"},
		{"crd v1 served", v["served"], true},
		{"crd v1 storage", v["storage"], true},
		{"crd spec preserves unknown fields", nestedMap(v, "schema", "openAPIV3Schema", "properties", "spec", "x-kubernetes-preserve-unknown-fields"), true},
		{"widget apiVersion", widget.GetAPIVersion(), "demo.example.com/v1"},
		{"widget size", nested(widget, "spec", "size"), int64(3)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %#v, want %#v", tc.got, tc.want)
			}
		})
	}
}

func TestDeployment(t *testing.T) {
	d := find(t, "deployment.yaml", "Deployment")
	c := nested(d, "spec", "template", "spec", "containers", 0).(map[string]any)
	var args []string
	for _, a := range c["args"].([]any) {
		args = append(args, a.(string))
	}
	labels := d.Object["spec"].(map[string]any)["selector"].(map[string]any)["matchLabels"]
	for _, tc := range []struct {
		name string
		got  any
		want any
	}{
		{"replicas", nested(d, "spec", "replicas"), int64(2)},
		{"service account", nested(d, "spec", "template", "spec", "serviceAccountName"), "kube-applier-aws"},
		{"pod runAsNonRoot", nested(d, "spec", "template", "spec", "securityContext", "runAsNonRoot"), true},
		{"pod seccomp", nested(d, "spec", "template", "spec", "securityContext", "seccompProfile", "type"), "RuntimeDefault"},
		{"readOnlyRootFilesystem", nestedMap(c, "securityContext", "readOnlyRootFilesystem"), true},
		{"allowPrivilegeEscalation", nestedMap(c, "securityContext", "allowPrivilegeEscalation"), false},
		{"drop ALL capabilities", nestedMap(c, "securityContext", "capabilities", "drop", 0), "ALL"},
		{"cpu request", nestedMap(c, "resources", "requests", "cpu"), "100m"},
		{"memory request", nestedMap(c, "resources", "requests", "memory"), "128Mi"},
		{"memory limit", nestedMap(c, "resources", "limits", "memory"), "512Mi"},
		{"liveness path", nestedMap(c, "livenessProbe", "httpGet", "path"), "/healthz"},
		{"readiness path", nestedMap(c, "readinessProbe", "httpGet", "path"), "/readyz"},
		{"probe port", portNumber(c, nestedMap(c, "readinessProbe", "httpGet", "port")), int64(8081)},
		{"liveness port", portNumber(c, nestedMap(c, "livenessProbe", "httpGet", "port")), int64(8081)},
		{"leader election on", slices.Contains(args, "--leader-elect=true") || !hasFlag(args, "leader-elect"), true},
		{"leader election namespace", slices.Contains(args, "--leader-election-namespace="+namespace), true},
		{"management cluster", slices.Contains(args, "--management-cluster="+cluster), true},
		{"aws region", slices.Contains(args, "--aws-region=us-east-1"), true},
		{"metrics address", slices.Contains(args, "--metrics-bind-address=:8080"), true},
		{"health address", slices.Contains(args, "--health-probe-bind-address=:8081"), true},
		{"spread over nodes", nestedMap(d.Object, "spec", "template", "spec", "topologySpreadConstraints", 0, "topologyKey"), "kubernetes.io/hostname"},
		{"anti-affinity over nodes", nestedMap(d.Object, "spec", "template", "spec", "affinity", "podAntiAffinity",
			"preferredDuringSchedulingIgnoredDuringExecution", 0, "podAffinityTerm", "topologyKey"), "kubernetes.io/hostname"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %#v, want %#v (args %q)", tc.got, tc.want, args)
			}
		})
	}
	t.Run("template labels match selector", func(t *testing.T) {
		tl := nested(d, "spec", "template", "metadata", "labels").(map[string]any)
		for k, v := range labels.(map[string]any) {
			if tl[k] != v {
				t.Errorf("template label %s = %v, want %v", k, tl[k], v)
			}
		}
	})
	t.Run("only flags of the binary", func(t *testing.T) {
		for _, a := range args {
			name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if !strings.HasPrefix(a, "-") || !slices.Contains(binaryFlags, name) {
				t.Errorf("arg %q is not a flag of cmd/kube-applier-aws", a)
			}
		}
	})
}

func hasFlag(args []string, name string) bool {
	return slices.ContainsFunc(args, func(a string) bool {
		n, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		return n == name
	})
}

// portNumber resolves a probe port, by number or by container port name.
func portNumber(c map[string]any, port any) any {
	if name, ok := port.(string); ok {
		for _, p := range c["ports"].([]any) {
			if p.(map[string]any)["name"] == name {
				return p.(map[string]any)["containerPort"]
			}
		}
	}
	return port
}

func TestPodDisruptionBudget(t *testing.T) {
	pdb := find(t, "pdb.yaml", "PodDisruptionBudget")
	d := find(t, "deployment.yaml", "Deployment")
	if got := nested(pdb, "spec", "minAvailable"); got != int64(1) {
		t.Errorf("minAvailable = %#v, want 1", got)
	}
	sel, want := nested(pdb, "spec", "selector", "matchLabels"), nested(d, "spec", "selector", "matchLabels")
	if !jsonEqual(sel, want) {
		t.Errorf("PDB selector %v, Deployment selector %v", sel, want)
	}
}

// verbs collects the verbs that obj's rules grant on resource in group (any resourceNames).
func verbs(obj *unstructured.Unstructured, group, resource string) []string {
	var out []string
	rules, _, _ := unstructured.NestedSlice(obj.Object, "rules")
	for _, r := range rules {
		rule := r.(map[string]any)
		if contains(rule["apiGroups"], group) && contains(rule["resources"], resource) {
			for _, v := range rule["verbs"].([]any) {
				out = append(out, v.(string))
			}
		}
	}
	return out
}

func contains(list any, s string) bool {
	l, _ := list.([]any)
	return slices.Contains(l, any(s))
}

func TestRBAC(t *testing.T) {
	objs := readObjects(t, filepath.Join(deployDir, "rbac.yaml"))
	byKind := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		byKind[o.GetKind()] = o
	}
	role, clusterRole := byKind["Role"], byKind["ClusterRole"]
	for _, tc := range []struct {
		name     string
		obj      *unstructured.Unstructured
		group    string
		resource string
		want     []string
	}{
		{"leases", role, "coordination.k8s.io", "leases", []string{"get", "create", "update", "watch"}},
		{"events", role, "", "events", []string{"create"}},
		{"configmaps", clusterRole, "", "configmaps", []string{"get", "list", "watch", "create", "patch", "delete"}},
		{"secrets", clusterRole, "", "secrets", []string{"get", "list", "watch", "create", "patch", "delete"}},
		{"namespaces", clusterRole, "", "namespaces", []string{"get", "list", "watch", "create", "patch", "delete"}},
		{"deployments", clusterRole, "apps", "deployments", []string{"get", "list", "watch", "create", "patch", "delete"}},
		{"roles", clusterRole, "rbac.authorization.k8s.io", "roles", []string{"get", "list", "watch", "create", "patch", "delete"}},
		{"crds", clusterRole, "apiextensions.k8s.io", "customresourcedefinitions", []string{"get", "list", "watch", "create", "patch", "delete"}},
		{"demo widgets", clusterRole, "demo.example.com", "widgets", []string{"get", "list", "watch", "create", "patch", "delete"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.obj == nil {
				t.Fatal("role missing")
			}
			got := verbs(tc.obj, tc.group, tc.resource)
			for _, v := range tc.want {
				if !slices.Contains(got, v) {
					t.Errorf("%s %s/%s: verbs %q lack %q", tc.obj.GetKind(), tc.group, tc.resource, got, v)
				}
			}
		})
	}
	t.Run("role in applier namespace", func(t *testing.T) {
		if role.GetNamespace() != namespace {
			t.Errorf("Role namespace %q, want %q", role.GetNamespace(), namespace)
		}
	})
	t.Run("no wildcards or escalation", func(t *testing.T) {
		for _, o := range []*unstructured.Unstructured{role, clusterRole} {
			rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
			for _, r := range rules {
				rule := r.(map[string]any)
				for _, field := range []string{"apiGroups", "resources", "verbs"} {
					if contains(rule[field], "*") {
						t.Errorf("%s: wildcard in %s: %v", o.GetKind(), field, rule)
					}
				}
				for _, v := range []string{"escalate", "bind", "impersonate"} {
					if contains(rule["verbs"], v) {
						t.Errorf("%s grants %q: %v", o.GetKind(), v, rule)
					}
				}
				for _, res := range []string{"clusterroles", "clusterrolebindings"} {
					if contains(rule["resources"], res) {
						t.Errorf("%s grants on %s: %v", o.GetKind(), res, rule)
					}
				}
			}
		}
	})
	t.Run("bindings name the service account", func(t *testing.T) {
		for kind, roleKind := range map[string]string{"RoleBinding": "Role", "ClusterRoleBinding": "ClusterRole"} {
			b := byKind[kind]
			if b == nil {
				t.Fatalf("%s missing", kind)
			}
			if got := nested(b, "roleRef", "name"); got != byKind[roleKind].GetName() {
				t.Errorf("%s roleRef %v, want %s", kind, got, byKind[roleKind].GetName())
			}
			subj := nested(b, "subjects", 0).(map[string]any)
			if subj["kind"] != "ServiceAccount" || subj["name"] != "kube-applier-aws" || subj["namespace"] != namespace {
				t.Errorf("%s subject %v", kind, subj)
			}
		}
	})
}

func TestServiceAccountIRSA(t *testing.T) {
	sa := find(t, "serviceaccount.yaml", "ServiceAccount")
	arn := sa.GetAnnotations()["eks.amazonaws.com/role-arn"]
	if !regexp.MustCompile(`^arn:aws:iam::\d{12}:role/.+$`).MatchString(arn) {
		t.Errorf("eks.amazonaws.com/role-arn = %q, want an IAM role ARN", arn)
	}
}

func TestKustomizationListsEveryFile(t *testing.T) {
	k := find(t, "kustomization.yaml", "Kustomization")
	var listed []string
	for _, r := range k.Object["resources"].([]any) {
		listed = append(listed, r.(string))
	}
	for _, f := range yamlFiles(t, deployDir) {
		base := filepath.Base(f)
		// The PrometheusRule needs prometheus-operator's CRDs: applied on its own.
		if base == "kustomization.yaml" || base == "prometheusrule.yaml" {
			continue
		}
		if !slices.Contains(listed, base) {
			t.Errorf("kustomization.yaml does not list %s", base)
		}
	}
	for _, r := range listed {
		if _, err := os.Stat(filepath.Join(deployDir, r)); err != nil {
			t.Errorf("kustomization.yaml lists %s: %v", r, err)
		}
	}
}

// TestDeployFolderHoldsOnlyKubernetesObjects: the folder of the kustomization (and of the
// PrometheusRule applied on its own) holds Kubernetes YAML only; the IAM policy and the Grafana
// dashboard are for other systems and live in subfolders of their own.
func TestDeployFolderHoldsOnlyKubernetesObjects(t *testing.T) {
	entries, err := os.ReadDir(deployDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() && filepath.Ext(e.Name()) != ".yaml" {
			t.Errorf("%s: not a Kubernetes manifest; move it out of %s (e.g. %s/aws, %s/grafana)", e.Name(), deployDir, deployDir, deployDir)
		}
	}
	for _, f := range []string{iamPolicyFile, "deploy/grafana/dashboard.json"} {
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
	}
}

// iamStatement is one statement of an IAM policy; Action and Resource may be a string or a list.
type iamStatement struct {
	Sid         string
	Effect      string
	Action      stringOrList
	NotAction   stringOrList
	Resource    stringOrList
	NotResource stringOrList
}

type stringOrList []string

func (s *stringOrList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = []string{one}
		return nil
	}
	return json.Unmarshal(b, (*[]string)(s))
}

// iamMatch reports whether IAM pattern (with * and ? wildcards, case-insensitive for actions
// when fold) matches s.
func iamMatch(pattern, s string, fold bool) bool {
	re := "^" + strings.NewReplacer(`\*`, ".*", `\?`, ".").Replace(regexp.QuoteMeta(pattern)) + "$"
	if fold {
		re = "(?i)" + re
	}
	return regexp.MustCompile(re).MatchString(s)
}

// allows reports whether the policy's Allow statements grant action on resource.
func allows(stmts []iamStatement, action, resource string) bool {
	for _, st := range stmts {
		if st.Effect != "Allow" {
			continue
		}
		if slices.ContainsFunc(st.Action, func(p string) bool { return iamMatch(p, action, true) }) &&
			slices.ContainsFunc(st.Resource, func(p string) bool { return iamMatch(p, resource, false) }) {
			return true
		}
	}
	return false
}

func TestIAMPolicy(t *testing.T) {
	data, err := os.ReadFile(iamPolicyFile)
	if err != nil {
		t.Fatal(err)
	}
	var policy struct {
		Version   string
		Statement []iamStatement
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&policy); err != nil {
		t.Fatalf("%s: %v", iamPolicyFile, err)
	}
	if policy.Version != "2012-10-17" || len(policy.Statement) == 0 {
		t.Fatalf("Version %q, %d statements", policy.Version, len(policy.Statement))
	}
	for _, st := range policy.Statement {
		// NotAction/NotResource grant everything else: too easy to over-grant, and not checked below.
		if len(st.NotAction) > 0 || len(st.NotResource) > 0 || (st.Effect != "Allow" && st.Effect != "Deny") {
			t.Errorf("statement %q: use Effect Allow with Action and Resource only", st.Sid)
		}
		// The applier never calls ListStreams (a table's stream ARN comes from DescribeTable),
		// and IAM cannot scope it to tables: granting it would only widen the role.
		for _, a := range st.Action {
			if iamMatch(a, "dynamodb:ListStreams", true) {
				t.Errorf("statement %q grants dynamodb:ListStreams (%s), which the applier never calls", st.Sid, a)
			}
		}
	}

	const arnPrefix = "arn:aws:dynamodb:us-east-1:123456789012:table/"
	type check struct {
		action, resource string
		want             bool
	}
	var checks []check
	for _, kind := range kubeapplier.DesireKinds {
		specs := arnPrefix + api.TableName("", cluster, api.SpecsTable, kind)
		status := arnPrefix + api.TableName("", cluster, api.StatusTable, kind)
		stream := specs + "/stream/2026-01-01T00:00:00.000"
		for _, a := range []string{"GetItem", "Scan", "DescribeTable"} {
			checks = append(checks, check{"dynamodb:" + a, specs, true})
		}
		for _, a := range []string{"DescribeStream", "GetShardIterator", "GetRecords"} {
			checks = append(checks, check{"dynamodb:" + a, stream, true})
		}
		for _, a := range []string{"GetItem", "Scan", "PutItem", "DeleteItem", "DescribeTable"} {
			checks = append(checks, check{"dynamodb:" + a, status, true})
		}
		// The applier never writes a spec; nor may it touch another cluster's tables.
		for _, a := range []string{"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "DeleteTable",
			"UpdateTable", "CreateTable", "PartiQLInsert", "PartiQLUpdate", "PartiQLDelete", "TransactWriteItems"} {
			checks = append(checks, check{"dynamodb:" + a, specs, false}, check{"dynamodb:" + a, stream, false})
		}
		checks = append(checks,
			check{"dynamodb:UpdateItem", status, false},
			check{"dynamodb:GetItem", arnPrefix + api.TableName("", "mc02", api.SpecsTable, kind), false},
			check{"dynamodb:PutItem", arnPrefix + api.TableName("", "mc02", api.StatusTable, kind), false},
		)
	}
	for _, c := range checks {
		name := c.action + " on " + strings.TrimPrefix(c.resource, arnPrefix)
		t.Run(name, func(t *testing.T) {
			if got := allows(policy.Statement, c.action, c.resource); got != c.want {
				t.Errorf("allowed = %v, want %v", got, c.want)
			}
		})
	}
}

func TestIAMMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		fold, want bool
	}{
		{"dynamodb:*", "dynamodb:PutItem", true, true},
		{"dynamodb:put*", "dynamodb:PutItem", true, true},
		{"dynamodb:PutItem", "dynamodb:BatchWriteItem", true, false},
		{"*", "arn:aws:dynamodb:us-east-1:1:table/mc-mc01-specs-applydesires", false, true},
		{"arn:aws:dynamodb:*:*:table/mc-mc01-status-*", "arn:aws:dynamodb:us-east-1:1:table/mc-mc01-specs-applydesires", false, false},
		{"arn:aws:dynamodb:*:*:table/mc-mc01-?pecs-*", "arn:aws:dynamodb:us-east-1:1:table/mc-mc01-specs-applydesires", false, true},
	} {
		if got := iamMatch(tc.pattern, tc.s, tc.fold); got != tc.want {
			t.Errorf("iamMatch(%q, %q) = %v, want %v", tc.pattern, tc.s, got, tc.want)
		}
	}
}

// nested walks obj.Object by map keys (string) and list indexes (int); nil when absent.
func nested(obj *unstructured.Unstructured, path ...any) any { return nestedMap(obj.Object, path...) }

func nestedMap(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func jsonEqual(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}
