package kubeapplier

import (
	"github.com/kube-applier-aws/kubeapplier/api"
)

// Attribute names of the time attributes whose spelling is kept.
const (
	attrCreateTime               = api.AttrCreateTime
	attrObservedDesireUpdateTime = api.AttrObservedDesireUpdateTime
	attrObservedDesireCreateTime = api.AttrObservedDesireCreateTime
)

// A backend may compare a status's observedDesireUpdateTime and observedDesireCreateTime with
// its spec's updateTime and createTime as strings. The SDK's codec decodes a time and writes it
// back in its own spelling (RFC 3339 with nanoseconds, trailing zeros dropped, "Z" for UTC):
// "2026-01-01T00:00:00.100000Z" came back as "2026-01-01T00:00:00.1Z" and "+00:00" as "Z", so
// such a backend waited for ever. The api codec therefore keeps the string a spec's time was
// stored as (DynamoDBMetadata.StoredTimes) and the status answers with those very strings
// (CommonStatus.Observe).
