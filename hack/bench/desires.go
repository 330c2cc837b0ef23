package main

// The desires and ConfigMaps the harness writes, and reading their conditions.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	kubeapplier "github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
)

// Names and documents.

func (b *bench) cmName(i int) string { return fmt.Sprintf("cm-%05d", i) }

func (b *bench) target(name string) kubeapplier.TargetItem {
	return kubeapplier.TargetItem{Version: "v1", Resource: "configmaps", Namespace: b.ns, Name: name}
}

// configMap returns a ConfigMap of about cfg.cmSize bytes as JSON; rev changes its content.
func (b *bench) configMap(name string, rev int) []byte {
	sum := sha256.Sum256([]byte(name))
	seed := hex.EncodeToString(sum[:])
	obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": b.ns, "labels": map[string]any{"app": benchName}},
		"data":     map[string]any{"rev": strconv.Itoa(rev), "payload": ""}}
	raw, _ := json.Marshal(obj)
	n := max(b.cfg.cmSize-len(raw), 0)
	payload := strings.Repeat(seed, n/len(seed)+1)[:n]
	obj["data"].(map[string]any)["payload"] = payload
	raw, _ = json.Marshal(obj)
	return raw
}

func (b *bench) applyDesire(id, name string, rev int, version int64, update time.Time) *kubeapplier.ApplyDesire {
	d := &kubeapplier.ApplyDesire{}
	d.DocumentID, d.Version, d.CreateTime, d.UpdateTime = id, version, b.createTime, update
	d.Spec.ManagementCluster, d.Spec.ClusterID = cluster, benchName
	d.Spec.KubeContent = rawExt(b.configMap(name, rev))
	return d
}

func (b *bench) readDesire(i int) *kubeapplier.ReadDesire {
	t := b.target(b.cmName(i))
	d := &kubeapplier.ReadDesire{}
	d.DocumentID = kubeapplier.DesireID(taskKey+"-read", t)
	d.Version, d.CreateTime, d.UpdateTime = 1, b.createTime, b.createTime
	d.Spec.ManagementCluster, d.Spec.ClusterID, d.Spec.TargetItem = cluster, benchName, t
	return d
}

func rawExt(raw []byte) json.RawMessage { return json.RawMessage(raw) }

// successful is s's Successful condition (nil: none).
func successful(s *api.CommonStatus) *api.Condition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == kubeapplier.ConditionSuccessful {
			return &s.Conditions[i]
		}
	}
	return nil
}

// specItem encodes spec d as the api client writes it: with the `shard` attribute
// (api.StatusShard's rule), so the spec is in the specs tables' index api.SpecIndexName and an
// applier on the index poll (-change-source index-poll, the sources scenario) finds its changes.
func specItem(d api.Desire) (api.Item, error) {
	item, err := api.EncodeItem(d)
	if err != nil {
		return nil, err
	}
	shard, _ := api.StatusShard(d.Meta().DocumentID)
	item[api.AttrShard] = &ddbtypes.AttributeValueMemberS{Value: strconv.Itoa(shard)}
	return item, nil
}
