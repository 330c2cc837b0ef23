package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// parseKubeContent reads the object an ApplyDesire's kubeContent names: one JSON object with
// apiVersion, kind and metadata.name (a list, a generateName without name, or anything else
// the applier's pre-checks would refuse by its head is an error). It is not the applier's
// whole pre-check (kubeapplier.ParseKubeContent): desirectl only needs to know which object
// a desire is about, and a desire the applier refuses is about none it made.
func parseKubeContent(raw json.RawMessage) (*unstructured.Unstructured, error) {
	if !bytes.HasPrefix(bytes.TrimLeft(raw, " \t\r\n"), []byte("{")) {
		return nil, fmt.Errorf("kubeContent is not a JSON object")
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("kubeContent is not a JSON object: %w", err)
	}
	u := &unstructured.Unstructured{Object: obj}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	if _, err := schema.ParseGroupVersion(apiVersion); err != nil || apiVersion == "" || kind == "" || name == "" {
		return nil, fmt.Errorf("kubeContent does not name one object (apiVersion %q, kind %q, name %q)", apiVersion, kind, name)
	}
	if items, ok := obj["items"]; kind == "List" || (strings.HasSuffix(kind, "List") && ok && items != nil) {
		return nil, fmt.Errorf("kubeContent is a %s, not one object", kind)
	}
	if _, isArray := obj["items"].([]any); isArray {
		return nil, fmt.Errorf("kubeContent is a list, not one object")
	}
	return u, nil
}
