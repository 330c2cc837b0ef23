// Command backend-go is docs/backend.md's "Write desires from a backend" in Go: it writes one
// ApplyDesire (a ConfigMap), waits until the applier's status answers it, then removes the
// object with a DeleteDesire, and removes both specs. It links only the api module and the
// AWS SDK (no client-go).
//
// Configuration: the AWS SDK's default chain (AWS_REGION, credentials, and
// AWS_ENDPOINT_URL_DYNAMODB for DynamoDB Local), plus MANAGEMENT_CLUSTER (default mc01),
// TABLE_PREFIX (default ""), NAMESPACE (default "default") and TASK_KEY (default "hc-demo").
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kube-applier-aws/kubeapplier/api"
)

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return err
	}
	ns, taskKey := env("NAMESPACE", "default"), env("TASK_KEY", "hc-demo")
	client := api.NewClient(dynamodb.NewFromConfig(cfg), env("TABLE_PREFIX", ""), env("MANAGEMENT_CLUSTER", "mc01"))

	// 1. Apply a ConfigMap. Its ID is derived from the task key and the object (api.DesireID).
	target := api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: ns, Name: "backend-go"}
	content, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": target.Name, "namespace": ns}, "data": map[string]string{"from": "go"}})
	spec, err := client.ApplyDesires().Create(ctx, &api.ApplyDesire{
		DynamoDBMetadata: api.DynamoDBMetadata{DocumentID: api.DesireID(taskKey, target)},
		Spec:             api.ApplyDesireSpec{CommonSpec: api.CommonSpec{ClusterID: taskKey}, KubeContent: content}})
	if err != nil {
		return err
	}
	// 2. Wait until a status answers this spec as it is now (version, updateTime, createTime).
	st, err := client.ApplyDesires().WaitForStatus(ctx, spec)
	if err != nil {
		return err
	}
	ok := st.Status.Condition(api.ConditionSuccessful)
	fmt.Printf("ApplyDesire %s version %d: Successful=%s %s (%s)\n", spec.DocumentID, spec.Version, ok.Status, ok.Reason, ok.Message)
	if ok.Status != api.ConditionTrue {
		return fmt.Errorf("apply failed: %s", ok.Message)
	}

	// 3. Delete the object: drop the ApplyDesire (else it would keep the object), then a
	// DeleteDesire, reported Successful once the object is really gone. Its ID is the same
	// DesireID(taskKey, target), in the DeleteDesire tables (one rule for every kind, as
	// desirectl's).
	// DeleteIf: only the version this program wrote; a spec another writer replaced
	// meanwhile stays (api.ErrPreconditionFailed).
	if err := client.ApplyDesires().DeleteIf(ctx, spec.DocumentID, spec.Version); err != nil {
		return err
	}
	del, err := client.DeleteDesires().Create(ctx, &api.DeleteDesire{
		DynamoDBMetadata: api.DynamoDBMetadata{DocumentID: api.DesireID(taskKey, target)},
		Spec:             api.DeleteDesireSpec{CommonSpec: api.CommonSpec{ClusterID: taskKey}, TargetItem: target}})
	if err != nil {
		return err
	}
	dst, err := client.DeleteDesires().WaitForStatus(ctx, del)
	if err != nil {
		return err
	}
	ok = dst.Status.Condition(api.ConditionSuccessful)
	fmt.Printf("DeleteDesire %s version %d: Successful=%s %s (%s)\n", del.DocumentID, del.Version, ok.Status, ok.Reason, ok.Message)
	if ok.Status != api.ConditionTrue {
		return fmt.Errorf("delete not done: %s", ok.Message)
	}
	return client.DeleteDesires().DeleteIf(ctx, del.DocumentID, del.Version)
}
