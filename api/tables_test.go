package api

import (
	"encoding/json"
	"os"
	"testing"
)

func TestDesireIDVectors(t *testing.T) {
	raw, err := os.ReadFile("testdata/desireid_vectors.json")
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
	if file.Namespace != DesireIDNamespace.String() || len(file.Vectors) < 5 {
		t.Fatalf("vectors file: namespace %s, %d vectors", file.Namespace, len(file.Vectors))
	}
	for _, v := range file.Vectors {
		t.Run(v.TaskKey+"/"+v.Target.Name, func(t *testing.T) {
			if got := DesireID(v.TaskKey, v.Target); got != v.ID {
				t.Fatalf("DesireID = %s, want %s (python uuid5 of %q)", got, v.ID, DesireIDName(v.TaskKey, v.Target))
			}
		})
	}
}

func TestStatusShard(t *testing.T) {
	tests := []struct {
		id    string
		shard int
		ok    bool
	}{
		{"7b1fdb4e-decf-5d4c-a307-6718bada47d7", 2, true},
		{"EF461CCD-0000-5000-8000-000000000000", 1, true},
		{"ffffffff-ffff", 3, true},
		{"task-1", 0, false},
		{HeartbeatID, 0, false},
		{"1234567", 0, false},
	}
	for _, tt := range tests {
		if got, ok := StatusShard(tt.id); got != tt.shard || ok != tt.ok {
			t.Errorf("StatusShard(%q) = %d, %v; want %d, %v", tt.id, got, ok, tt.shard, tt.ok)
		}
	}
}

func TestTableNameAndReservedIDs(t *testing.T) {
	if got := TableName("t-", "mc01", StatusTable, KindDeleteDesire); got != "t-mc-mc01-status-deletedesires" {
		t.Errorf("TableName = %q", got)
	}
	for id, want := range map[string]bool{HeartbeatID: true, "_x": true, "a_b": false, "": false} {
		if IsReservedID(id) != want {
			t.Errorf("IsReservedID(%q) != %v", id, want)
		}
	}
}
