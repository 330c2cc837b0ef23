package kubeapplier

import (
	"context"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/heartbeat"
)

// HeartbeatID is the documentID of the heartbeat (api.HeartbeatID): one document per
// management cluster in its ApplyDesire status table. Reserved (IsReservedID), it is no
// status: listings of status tables skip it, and it has no `shard`, so it is in no index.
const HeartbeatID = api.HeartbeatID

// Heartbeat is the document the leader writes at HeartbeatID (docs/operating.md "The heartbeat"), for
// backends that cannot scrape the management cluster's Prometheus (api.Heartbeat).
type Heartbeat = api.Heartbeat

// HeartbeatKind is what the heartbeat says about one desire kind (api.HeartbeatKind).
type HeartbeatKind = api.HeartbeatKind

// ReadHeartbeat returns the heartbeat of managementCluster (a consistent GetItem of
// HeartbeatID in its ApplyDesire status table); ErrNotFound when no leader wrote one yet,
// ErrInvalidItem when it does not decode (api.ReadHeartbeat).
func ReadHeartbeat(ctx context.Context, db DynamoDBAPI, prefix, managementCluster string) (*Heartbeat, error) {
	return api.ReadHeartbeat(ctx, db, prefix, managementCluster)
}

// heartbeatKind is c's part of the heartbeat (stream observations are added by heartbeat).
func heartbeatKind[T Desire](c *controller.Controller[T]) HeartbeatKind {
	t := c.Tally()
	hk := HeartbeatKind{Desires: t.Desires, Unanswered: t.Unanswered, Watermark: t.Watermark, QueueDepth: c.Queue().Len()}
	for k, n := range t.Counts {
		if hk.Successful == nil {
			hk.Successful = map[string]int{}
		}
		hk.Successful[k.Successful+"/"+k.Reason] += n
		if k.Degraded == "True" {
			if hk.Degraded == nil {
				hk.Degraded = map[string]int{}
			}
			hk.Degraded[k.Reason] += n
		}
	}
	return hk
}

// heartbeatKinds is the per-kind content of the Applier's heartbeat.
func (a *Applier) heartbeatKinds() map[string]HeartbeatKind {
	return map[string]HeartbeatKind{
		string(KindApplyDesire):  heartbeatKind(a.apply),
		string(KindDeleteDesire): heartbeatKind(a.delete),
		string(KindReadDesire):   heartbeatKind(a.read),
	}
}

// newHeartbeat returns the heartbeat writer of a.
func (a *Applier) newHeartbeat(mon *monitoring) *heartbeat.Writer {
	return heartbeat.New(heartbeat.Config{DB: a.opts.DynamoDB,
		Table:   TableName(a.opts.TablePrefix, a.opts.ManagementCluster, StatusTable, KindApplyDesire),
		Cluster: a.opts.ManagementCluster, Identity: a.opts.Identity, Version: heartbeat.Version(),
		Interval: a.wiring.heartbeatInterval, MaxAge: a.wiring.heartbeatMaxAge, Visibility: a.wiring.recordVisibility,
		Now: a.wiring.clock, Log: a.opts.Log.WithName("heartbeat"), Kinds: a.heartbeatKinds, Written: mon.written()})
}
