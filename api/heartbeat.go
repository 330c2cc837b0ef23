package api

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Heartbeat is the document the leader writes at HeartbeatID (docs/operating.md "The heartbeat"), for
// backends that cannot scrape the management cluster's Prometheus.
type Heartbeat struct {
	// ManagementCluster is the management cluster served.
	ManagementCluster string `dynamodbav:"managementCluster" json:"managementCluster"`
	// Leader is the identity of the Lease holder that leads: Options.Identity with the
	// applier's own election, the manager's identity with Options.FollowLease.
	Leader string `dynamodbav:"leader" json:"leader"`
	// Version is the leader's binary version (module version and VCS revision).
	Version string `dynamodbav:"binaryVersion" json:"binaryVersion"`
	// ApplierTerm is the leadership term, taken here at the start of every term (it only
	// grows: a write of an older term is refused by DynamoDB), and TermStart when it began.
	// Named as its attribute, applierTerm, which every status item carries too.
	ApplierTerm int64     `dynamodbav:"applierTerm" json:"applierTerm"`
	TermStart   time.Time `dynamodbav:"termStart" json:"termStart"`
	// UpdateTime is when the heartbeat was written; a reader judges staleness by it.
	UpdateTime time.Time `dynamodbav:"updateTime" json:"updateTime"`
	// Stopped is when the leader ended its term by a clean shutdown (its process asked to
	// stop, e.g. SIGTERM): its last write, once its in-flight status writes finished and
	// before it released the Lease. No leader writes until another replica takes a term,
	// whose first write has no Stopped. nil while the leader leads, and after a term that
	// ended otherwise (a crash, a lost Lease: only the heartbeat's age tells then).
	Stopped *time.Time `dynamodbav:"stopped,omitempty" json:"stopped,omitempty"`
	// KeepaliveSeconds is the longest the leader waits between two writes (300: an unchanged
	// heartbeat is rewritten every 5 minutes): one older than UpdateTime + KeepaliveSeconds is
	// overdue.
	KeepaliveSeconds int `dynamodbav:"keepaliveSeconds" json:"keepaliveSeconds"`
	// Kinds has one entry per desire kind ("ApplyDesire", "DeleteDesire", "ReadDesire").
	Kinds map[string]HeartbeatKind `dynamodbav:"kinds" json:"kinds"`
}

// Overdue reports whether the heartbeat is more than grace past its keepalive at now: older
// than UpdateTime + KeepaliveSeconds + grace (the staleness rule of docs/operating.md uses grace = 2 min).
func (h *Heartbeat) Overdue(now time.Time, grace time.Duration) bool {
	return now.Sub(h.UpdateTime) > time.Duration(h.KeepaliveSeconds)*time.Second+grace
}

// HeartbeatKind is what the heartbeat says about one desire kind, from the leader's caches
// (never a scan of DynamoDB).
type HeartbeatKind struct {
	// Desires is the number of specs in the informer's cache.
	Desires int `dynamodbav:"desires" json:"desires"`
	// Successful counts desires by the Successful condition of the last status this term
	// wrote, "True/NoErrors", "False/KubeAPIError"…; "Unknown/Pending": none written yet.
	Successful map[string]int `dynamodbav:"successful,omitempty" json:"successful,omitempty"`
	// Degraded counts desires whose last status says Degraded=True, by reason.
	Degraded map[string]int `dynamodbav:"degraded,omitempty" json:"degraded,omitempty"`
	// Unanswered is the number of cached specs whose current version has no status yet.
	Unanswered int `dynamodbav:"unanswered" json:"unanswered"`
	// Watermark: every spec that had landed in DynamoDB when the stream was last read to its
	// end, and whose updateTime <= Watermark, has a status answering its version (or a newer
	// one). nil with no spec, and before the stream was read to its end. A spec landing later
	// with an older updateTime (a write in flight, a backend clock behind) lowers it again.
	Watermark *time.Time `dynamodbav:"watermark,omitempty" json:"watermark,omitempty"`
	// QueueDepth is the workqueue's length when the heartbeat was written.
	QueueDepth int `dynamodbav:"queueDepth" json:"queueDepth"`
	// NewestRecord is the ApproximateCreationDateTime of the newest stream record read, and
	// StreamLagSeconds how old it was when read; nil and 0 before the first record.
	NewestRecord     *time.Time `dynamodbav:"newestRecord,omitempty" json:"newestRecord,omitempty"`
	StreamLagSeconds float64    `dynamodbav:"streamLagSeconds" json:"streamLagSeconds"`
}

// ItemGetter is the part of *dynamodb.Client that ReadHeartbeat uses.
type ItemGetter interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// ReadHeartbeat returns the heartbeat of managementCluster (a consistent GetItem of
// HeartbeatID in its ApplyDesire status table); ErrNotFound when no leader wrote one yet,
// ErrInvalidItem when it does not decode, the SDK's error otherwise (wrapped).
func ReadHeartbeat(ctx context.Context, db ItemGetter, prefix, managementCluster string) (*Heartbeat, error) {
	return ReadHeartbeatFrom(ctx, db, TableName(prefix, managementCluster, StatusTable, KindApplyDesire))
}

// ReadHeartbeatFrom is ReadHeartbeat from table, the ApplyDesire status table's name or ARN
// (TableLayout.Name(cluster, StatusTable, KindApplyDesire)).
func ReadHeartbeatFrom(ctx context.Context, db ItemGetter, table string) (*Heartbeat, error) {
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{AttrDocumentID: &types.AttributeValueMemberS{Value: HeartbeatID}}})
	if err != nil {
		return nil, fmt.Errorf("get %s from %s: %w", HeartbeatID, table, err)
	}
	if len(out.Item) == 0 {
		return nil, fmt.Errorf("get %s from %s: %w", HeartbeatID, table, ErrNotFound)
	}
	var hb Heartbeat
	if err := attributevalue.UnmarshalMap(out.Item, &hb); err != nil {
		return nil, fmt.Errorf("%w: %s in %s: %w", ErrInvalidItem, HeartbeatID, table, err)
	}
	return &hb, nil
}
