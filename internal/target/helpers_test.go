package target

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-applier-aws/kubeapplier/internal/ssafake"
)

var cmGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

func unstructuredObj(apiVersion, kind, ns, name string, fields map[string]any) *unstructured.Unstructured {
	return ssafake.NewObject(apiVersion, kind, ns, name, fields)
}
