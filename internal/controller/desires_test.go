package controller

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// The desires of this package's tests: of management cluster mc01, at a fixed time.

var testTime = time.Date(2026, 11, 29, 8, 30, 15, 123456789, time.UTC)

func applyDesire(id, content string) *api.ApplyDesire {
	d := &api.ApplyDesire{}
	d.DocumentID, d.Version, d.UpdateTime = id, 3, testTime
	d.Spec.ManagementCluster = "mc01"
	if content != "" {
		d.Spec.KubeContent = json.RawMessage(content)
	}
	return d
}

func readDesire(id string, t api.TargetItem) *api.ReadDesire {
	d := &api.ReadDesire{}
	d.DocumentID, d.Version = id, 1
	d.Spec.ManagementCluster, d.Spec.TargetItem = "mc01", t
	return d
}

func deleteDesire(id string, t api.TargetItem) *api.DeleteDesire {
	d := &api.DeleteDesire{}
	d.DocumentID, d.Version = id, 1
	d.Spec.ManagementCluster, d.Spec.TargetItem = "mc01", t
	return d
}

func cmJSON(name string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"default"}}`, name)
}

func sampleApply(id string) *api.ApplyDesire {
	d := applyDesire(id, cmJSON("c1"))
	d.Version, d.UpdateTime, d.Spec.ClusterID = 0, time.Time{}, "hc-1"
	return d
}

func rawJSON(s string) json.RawMessage { return json.RawMessage(s) }
