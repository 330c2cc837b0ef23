package api_test

import (
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
