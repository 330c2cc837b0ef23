package kubeapplier

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/kube-applier-aws/kubeapplier/api"
)

func TestDesireIDVectors(t *testing.T) {
	raw, err := os.ReadFile("api/testdata/desireid_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Namespace string `json:"namespace"`
		Vectors   []struct {
			TaskKey string     `json:"taskKey"`
			Target  TargetItem `json:"target"`
			ID      string     `json:"id"`
		} `json:"vectors"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	if file.Namespace != api.DesireIDNamespace.String() || len(file.Vectors) < 5 {
		t.Fatalf("vectors file: namespace %s, %d vectors", file.Namespace, len(file.Vectors))
	}
	for _, v := range file.Vectors {
		t.Run(v.TaskKey+"/"+v.Target.Name, func(t *testing.T) {
			if got := DesireID(v.TaskKey, v.Target); got != v.ID {
				t.Fatalf("DesireID = %s, want %s (python uuid5)", got, v.ID)
			}
		})
	}
}
