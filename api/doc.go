// Package api is the desire contract of kube-applier-aws, for backends that write desires and
// read statuses: the item layout of the specs and status tables in Amazon DynamoDB, the types
// and their codec, deterministic desire IDs, table names, the reserved-ID rule, the heartbeat,
// and a small typed client (Client) that creates, replaces and deletes specs, reads statuses,
// waits until a status answers the spec as it is now, and polls the status index.
//
// It depends on the AWS SDK's DynamoDB packages and github.com/google/uuid only: no client-go,
// no apimachinery. The applier (github.com/kube-applier-aws/kubeapplier) uses the same
// constants, names, metadata, conditions' layout and heartbeat types through aliases; its own
// desire structs carry Kubernetes types (metav1.Condition, runtime.RawExtension), and golden
// items in testdata/ hold both codecs to one layout.
package api
