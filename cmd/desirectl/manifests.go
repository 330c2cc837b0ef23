package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// manifest is one object read from -f input.
type manifest struct {
	source string // "file.yaml#2" (1-based document index)
	obj    *unstructured.Unstructured
}

// readManifests reads the objects of path: "-" for stdin, a file, or a directory whose
// *.yaml, *.yml and *.json files are read in name order (not recursively). Files hold one or
// more YAML documents or JSON objects; List kinds are expanded into their items. Errors are
// usage errors.
func readManifests(path string, stdin io.Reader) ([]manifest, error) {
	if path == "" {
		return nil, usageErrorf("-f is required")
	}
	if path == "-" {
		return decodeManifests("<stdin>", stdin)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	files := []string{path}
	if fi.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, usageErrorf("%v", err)
		}
		files = files[:0]
		for _, e := range entries {
			switch strings.ToLower(filepath.Ext(e.Name())) {
			case ".yaml", ".yml", ".json":
				if !e.IsDir() {
					files = append(files, filepath.Join(path, e.Name()))
				}
			}
		}
		slices.Sort(files)
	}
	var out []manifest
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, usageErrorf("%v", err)
		}
		ms, err := decodeManifests(f, bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	if len(out) == 0 {
		return nil, usageErrorf("no objects found in %s", path)
	}
	return out, nil
}

func decodeManifests(name string, r io.Reader) ([]manifest, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var out []manifest
	for doc := 1; ; doc++ {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		src := fmt.Sprintf("%s#%d", name, doc)
		if err != nil {
			return nil, usageErrorf("%s: %s", src, oneLine(err.Error()))
		}
		if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
			continue // empty document
		}
		var m map[string]any
		if err := utiljson.Unmarshal(raw, &m); err != nil {
			return nil, usageErrorf("%s: not an object: %s", src, oneLine(err.Error()))
		}
		obj := &unstructured.Unstructured{Object: m}
		if obj.IsList() && strings.HasSuffix(obj.GetKind(), "List") {
			items, _, _ := unstructured.NestedSlice(m, "items")
			for i, it := range items {
				im, ok := it.(map[string]any)
				isrc := fmt.Sprintf("%s items[%d]", src, i)
				if !ok {
					return nil, usageErrorf("%s: not an object", isrc)
				}
				o := &unstructured.Unstructured{Object: im}
				if err := validateObject(o); err != nil {
					return nil, usageErrorf("%s: %v", isrc, err)
				}
				out = append(out, manifest{source: isrc, obj: o})
			}
			continue
		}
		if err := validateObject(obj); err != nil {
			return nil, usageErrorf("%s: %v", src, err)
		}
		out = append(out, manifest{source: src, obj: obj})
	}
}

// validateObject checks what a desire needs: apiVersion, kind and a fixed metadata.name.
func validateObject(o *unstructured.Unstructured) error {
	var missing []string
	if o.GetAPIVersion() == "" {
		missing = append(missing, "apiVersion")
	}
	if o.GetKind() == "" {
		missing = append(missing, "kind")
	}
	if o.GetName() == "" {
		if o.GetGenerateName() != "" {
			return fmt.Errorf("metadata.generateName %q without metadata.name: a desire needs a fixed name", o.GetGenerateName())
		}
		missing = append(missing, "metadata.name")
	}
	if len(missing) > 0 {
		return fmt.Errorf("object is missing %s", strings.Join(missing, ", "))
	}
	if gv := o.GroupVersionKind().GroupVersion(); gv.Version == "" {
		return fmt.Errorf("apiVersion %q is invalid", o.GetAPIVersion())
	}
	return nil
}
