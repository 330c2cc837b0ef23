package kubeapplier

import "github.com/kube-applier-aws/kubeapplier/api"

// DesireID returns the deterministic document ID of the desire that taskKey keeps about one
// Kubernetes object: the RFC 4122 version-5 (SHA-1) UUID in api.DesireIDNamespace of the UTF-8
// string "{taskKey}/{group}/{version}/{resource}/{namespace}/{name}" (api.DesireID). The core
// group and the namespace of a cluster-scoped object are empty segments, e.g.
// "task-1//v1/namespaces//kube-system".
func DesireID(taskKey string, target TargetItem) string {
	return api.DesireID(taskKey, api.TargetItem(target))
}
