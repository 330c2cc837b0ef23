// Package api is the desire contract of kube-applier-aws, for backends that write desires and
// read statuses: the item layout of the specs and status tables in Amazon DynamoDB, the types
// and their codec, deterministic desire IDs, table names (TableName; TableLayout for other
// name formats and tables given by name or ARN) and their creation (EnsureTables,
// EnsureLayoutTables, with the status tables' indexes; the folded layout of upstream's forks,
// TableLayout.FoldedDeletes, whose deletions are ApplyDesires of type ApplyTypeDelete), the
// reserved-ID rule, the heartbeat, the placeholder of a
// redacted Secret value (RedactedValue), and a small typed client (Client) that creates,
// replaces, deletes and lists specs, reads statuses, waits until a status answers the spec as
// it is now, and polls the status index.
//
// It depends on the AWS SDK's DynamoDB packages and github.com/google/uuid only: no client-go,
// no apimachinery. The applier (github.com/kube-applier-aws/kubeapplier) uses these very
// types, constants, names and codec through aliases: one definition of the contract, which
// the golden items in testdata/ pin down.
package api
