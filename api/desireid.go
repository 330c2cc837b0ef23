package api

import "github.com/google/uuid"

// DesireIDNamespace is the UUID namespace shared by the applier and every backend for
// deterministic desire IDs. Never change it: IDs already stored would no longer match.
var DesireIDNamespace = uuid.MustParse("6f1f3c63-5a0d-4c1e-9a55-2f1a8b8d0c3e")

// DesireID returns the deterministic document ID of the desire that taskKey keeps about one
// Kubernetes object: the RFC 4122 version-5 (SHA-1) UUID in DesireIDNamespace of the UTF-8
// string "{taskKey}/{group}/{version}/{resource}/{namespace}/{name}". taskKey is the
// backend's own name for the job the desire belongs to (any UTF-8 string it can compute
// again, e.g. the hosted cluster's ID or a task's ID); two tasks that keep the same object
// get two desires. The core group and the namespace of a cluster-scoped object are empty
// segments, e.g. "task-1//v1/namespaces//kube-system".
func DesireID(taskKey string, target TargetItem) string {
	return uuid.NewSHA1(DesireIDNamespace, []byte(DesireIDName(taskKey, target))).String()
}

// DesireIDName returns the UUID name DesireID hashes:
// "{taskKey}/{group}/{version}/{resource}/{namespace}/{name}".
func DesireIDName(taskKey string, t TargetItem) string {
	return taskKey + "/" + t.Group + "/" + t.Version + "/" + t.Resource + "/" + t.Namespace + "/" + t.Name
}
