package kubeapplier

import "github.com/kube-applier-aws/kubeapplier/api"

// DesireIDNamespace (only the root's tests use it: drop for api.DesireIDNamespace, issue #39) is the UUID namespace shared by the applier and every backend for
// deterministic desire IDs (api.DesireIDNamespace). Never change it: IDs already stored would
// no longer match.
var DesireIDNamespace = api.DesireIDNamespace

// DesireID returns the deterministic document ID of the desire that taskKey keeps about one
// Kubernetes object: the RFC 4122 version-5 (SHA-1) UUID in DesireIDNamespace of the UTF-8
// string "{taskKey}/{group}/{version}/{resource}/{namespace}/{name}" (api.DesireID). The core
// group and the namespace of a cluster-scoped object are empty segments, e.g.
// "task-1//v1/namespaces//kube-system".
func DesireID(taskKey string, target TargetItem) string {
	return api.DesireID(taskKey, api.TargetItem(target))
}
