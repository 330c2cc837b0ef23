package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// configEnv overrides the config file location (the --config flag overrides it in turn).
const configEnv = "DESIRECTL_CONFIG"

// configFile is the YAML config file: named contexts and the current one.
type configFile struct {
	CurrentContext string          `json:"current-context,omitempty"`
	Contexts       []*contextEntry `json:"contexts,omitempty"`
}

// contextEntry says where desires go: which AWS account/region and endpoint, which management
// cluster's tables, and which hosted cluster and task the desires belong to.
type contextEntry struct {
	Name              string `json:"name"`
	AWSRegion         string `json:"aws-region,omitempty"`
	EndpointURL       string `json:"endpoint-url,omitempty"`
	ManagementCluster string `json:"management-cluster,omitempty"`
	ClusterID         string `json:"cluster-id,omitempty"`
	TaskKey           string `json:"task-key,omitempty"`
	TablePrefix       string `json:"table-prefix,omitempty"`
	// TableNameFormat and Tables name the tables as the applier's --table-name-format and
	// --table do (api.TableLayout): a format, and overrides by name or ARN.
	TableNameFormat string         `json:"table-name-format,omitempty"`
	Tables          tableOverrides `json:"tables,omitzero"`
	// FoldedDeletes (`folded-deletes: true`) is the folded layout (api.TableLayout.FoldedDeletes,
	// the applier's --folded-deletes): no DeleteDesire tables; delete writes an ApplyDesire of
	// spec.type Delete.
	FoldedDeletes bool `json:"folded-deletes,omitempty"`
}

// tableOverrides are a context's tables given by name or ARN, one field per api.TableKey: a
// struct rather than a map so that a contextEntry stays comparable and a misspelt key in the
// config file is refused (yaml.UnmarshalStrict).
type tableOverrides struct {
	SpecsApplyDesires   string `json:"specs-applydesires,omitempty"`
	SpecsDeleteDesires  string `json:"specs-deletedesires,omitempty"`
	SpecsReadDesires    string `json:"specs-readdesires,omitempty"`
	StatusApplyDesires  string `json:"status-applydesires,omitempty"`
	StatusDeleteDesires string `json:"status-deletedesires,omitempty"`
	StatusReadDesires   string `json:"status-readdesires,omitempty"`
}

// field returns the field of key (an api.TableKey), nil for another key.
func (t *tableOverrides) field(key string) *string {
	return map[string]*string{
		"specs-applydesires": &t.SpecsApplyDesires, "specs-deletedesires": &t.SpecsDeleteDesires,
		"specs-readdesires": &t.SpecsReadDesires, "status-applydesires": &t.StatusApplyDesires,
		"status-deletedesires": &t.StatusDeleteDesires, "status-readdesires": &t.StatusReadDesires,
	}[key]
}

// asMap returns the overrides set, as api.TableLayout.Tables takes them; nil for none.
func (t tableOverrides) asMap() map[string]string {
	var m map[string]string
	for _, k := range api.TableKeys() {
		if v := *t.field(k); v != "" {
			if m == nil {
				m = map[string]string{}
			}
			m[k] = v
		}
	}
	return m
}

// context returns the named context, or nil.
func (c *configFile) context(name string) *contextEntry {
	for _, e := range c.Contexts {
		if e.Name == name {
			return e
		}
	}
	return nil
}

// deleteContext removes the named context; false when there was none.
func (c *configFile) deleteContext(name string) bool {
	n := len(c.Contexts)
	c.Contexts = slices.DeleteFunc(c.Contexts, func(e *contextEntry) bool { return e.Name == name })
	return len(c.Contexts) != n
}

// configPath returns the config file to use: --config, then $DESIRECTL_CONFIG, then
// <user config dir>/desirectl/config.yaml.
func (a *app) configPath() (string, error) {
	if a.flags.configPath != "" {
		return a.flags.configPath, nil
	}
	if p := a.getenv(configEnv); p != "" {
		return p, nil
	}
	dir, err := a.userConfigDir()
	if err != nil {
		return "", usageErrorf("cannot locate the config file (set --config or %s): %v", configEnv, err)
	}
	return filepath.Join(dir, "desirectl", "config.yaml"), nil
}

// loadConfig reads the config file; a missing file is an empty config.
func (a *app) loadConfig() (*configFile, string, error) {
	path, err := a.configPath()
	if err != nil {
		return nil, "", err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &configFile{}, path, nil
	}
	if err != nil {
		return nil, path, usageErrorf("read config: %v", err)
	}
	cfg := &configFile{}
	if err := yaml.UnmarshalStrict(data, cfg); err != nil {
		return nil, path, usageErrorf("config file %s: %v", path, oneLine(err.Error()))
	}
	return cfg, path, nil
}

// saveConfig writes the config file (mode 0600), creating its directory.
func saveConfig(path string, cfg *configFile) error {
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return usageErrorf("write config: %v", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return usageErrorf("write config: %v", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return usageErrorf("write config: %v", err)
	}
	return nil
}

// oneLine folds a multi-line message onto one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func contextNotFound(name, path string) error {
	return usageErrorf("context %q not found in %s", name, path)
}
