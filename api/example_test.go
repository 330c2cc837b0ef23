package api_test

import (
	"errors"
	"fmt"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// The ID of the desire that task "task-1" keeps about ConfigMap default/settings, and the
// index shard its status is in: the README's vector.
func ExampleDesireID() {
	target := api.TargetItem{Version: "v1", Resource: "configmaps", Namespace: "default", Name: "settings"}
	id := api.DesireID("task-1", target)
	shard, _ := api.StatusShard(id)
	fmt.Println(api.DesireIDName("task-1", target))
	fmt.Println(id, shard)
	// Output:
	// task-1//v1/configmaps/default/settings
	// 7b1fdb4e-decf-5d4c-a307-6718bada47d7 2
}

// An index-poll backend finds a status document in shard StatusShard(documentID) of the
// status tables' updateTime-index; the heartbeat's reserved ID is in none.
func ExampleStatusShard() {
	for _, id := range []string{"7b1fdb4e-decf-5d4c-a307-6718bada47d7", "EF461CCD-F3C9-5C36-95FC-3187F1CC60BA", api.HeartbeatID} {
		shard, ok := api.StatusShard(id)
		fmt.Println(id, shard, ok, api.IsReservedID(id))
	}
	// Output:
	// 7b1fdb4e-decf-5d4c-a307-6718bada47d7 2 true false
	// EF461CCD-F3C9-5C36-95FC-3187F1CC60BA 1 true false
	// _heartbeat 0 false true
}

// A backend that only watches a Deployment another tool keeps: applyPolicy ReadOnly (never
// written; its existence, readiness and feedback reported) and statusFeedback (its ready
// replicas in status.feedback). CheckOptions refuses, before any write, a value the applier
// would refuse (Create and Replace call it too).
func ExampleCheckOptions() {
	d := &api.ApplyDesire{
		DynamoDBMetadata: api.DynamoDBMetadata{DocumentID: api.DesireID("task-1",
			api.TargetItem{Group: "apps", Version: "v1", Resource: "deployments", Namespace: "shop", Name: "web"})},
		Spec: api.ApplyDesireSpec{
			CommonSpec:  api.CommonSpec{ManagementCluster: "mc01", ClusterID: "task-1", Owner: "team-shop"},
			KubeContent: []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop"}}`),
			ApplyPolicy: api.ApplyPolicyReadOnly,
			StatusFeedback: &api.StatusFeedback{JSONPaths: []api.FeedbackRule{
				{Name: "readyReplicas", Path: ".status.readyReplicas"}}},
		},
	}
	fmt.Println(api.CheckOptions(d))
	item, _ := api.EncodeItem(d)
	spec, _ := api.ItemToJSON(api.Item{api.AttrSpec: item[api.AttrSpec]})
	fmt.Println(string(spec))

	d.Spec.ApplyPolicy = "Readonly"
	err := api.CheckOptions(d)
	fmt.Println(errors.Is(err, api.ErrInvalidOption))
	fmt.Println(err)

	// The status's feedback, as the applier reports it.
	status := api.ApplyDesireStatus{Feedback: []api.FeedbackValue{{Name: "readyReplicas", Type: api.FeedbackInteger, Value: "3"}}}
	for _, f := range status.Feedback {
		fmt.Printf("%s = %s (%s)\n", f.Name, f.Value, f.Type)
	}
	// Output:
	// <nil>
	// {"spec":{"M":{"applyPolicy":{"S":"ReadOnly"},"clusterID":{"S":"task-1"},"managementCluster":{"S":"mc01"},"owner":{"S":"team-shop"},"statusFeedback":{"M":{"jsonPaths":{"L":[{"M":{"name":{"S":"readyReplicas"},"path":{"S":".status.readyReplicas"}}}]}}}}}}
	// true
	// invalid desire option: spec.applyPolicy is "Readonly", a value this applier does not know (it knows ServerSideApply, CreateOnly, ReadOnly): a newer applier may understand it; refusing rather than acting with a default
	// readyReplicas = 3 (Integer)
}
