package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// The fixtures of this package's tests (the root's helpers_test.go has the same for the
// tests that run the reconcilers under a controller).

// resettingMapper counts Resets; kinds added to pending appear after the next Reset.
type resettingMapper struct {
	*meta.DefaultRESTMapper
	resets  int
	pending []schema.GroupVersionKind
}

func (m *resettingMapper) Reset() {
	m.resets++
	for _, gvk := range m.pending {
		m.Add(gvk, meta.RESTScopeNamespace)
	}
	m.pending = nil
}

func newMapper() *resettingMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	m.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, meta.RESTScopeRoot)
	m.Add(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, meta.RESTScopeRoot)
	return &resettingMapper{DefaultRESTMapper: m}
}

var testTime = time.Date(2026, 11, 29, 8, 30, 15, 123456789, time.UTC)

func applyDesire(id, content string) *api.ApplyDesire {
	d := &api.ApplyDesire{}
	d.DocumentID, d.Version, d.UpdateTime = id, 3, testTime
	d.Spec.ManagementCluster = "mc01"
	if content != "" {
		d.Spec.KubeContent = json.RawMessage([]byte(content))
	}
	return d
}

func cmJSON(name string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"default"},"data":{"status":"s","name":"n","data":"d"}}`, name)
}

// getErrKube is a Kube whose every Get fails with err.
type getErrKube struct{ err error }

func (k getErrKube) Apply(context.Context, schema.GroupVersionResource, *unstructured.Unstructured, string) (*unstructured.Unstructured, error) {
	return nil, k.err
}

func (k getErrKube) Get(context.Context, schema.GroupVersionResource, string, string) (*unstructured.Unstructured, error) {
	return nil, k.err
}

func (k getErrKube) Delete(context.Context, schema.GroupVersionResource, string, string, types.UID, string) error {
	return k.err
}
