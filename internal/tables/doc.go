// Package tables is the applier's DynamoDB table layer: typed reads and writes of the desires
// of one table in the api module's item layout (api.EncodeItem), the status tables' own rules
// (the `shard` attribute, reserved documentIDs skipped, writes fenced by the leadership term),
// and the narrow Scans of the status check. Table creation is the api module's
// (api.EnsureTables): backends create tables too.
package tables
