package stream

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/kube-applier-aws/kubeapplier/api"
)

// A stream watch must drop records it has already delivered or that are older than its List
// (positions are taken before the Scan, so records that landed during the Scan come again),
// yet deliver every new state of a spec, whatever its createTime says: a spec deleted and put
// back unchanged (an undo, a restore) keeps its createTime, and a spec replaced in place by
// one PutItem starts a new incarnation (a new createTime, version 1) with a MODIFY record and
// no REMOVE between. Wall clocks cannot order these: backend clocks skew. Stream order can:
// the records of one item come with increasing sequence numbers, and a record read again has
// the same sequence number. So a watch decides by sequence numbers once it delivered a record
// of a desire, and, while all it knows of a desire is the List's copy, by the version within
// the listed incarnation and by a consistent read of the spec item for another incarnation.

// knownDesire is what a watch knows of one desire: the incarnation (createTime) and version
// of the newest state it delivered or listed, and the sequence number of the last record it
// delivered ("" while all it knows comes from the List).
type knownDesire struct {
	created time.Time
	version int64
	seq     string
	deleted bool
	// updated is the state's updateTime: an index-poll watch (indexpoll.go) skips an index
	// entry of the same updateTime without reading the item.
	updated time.Time
}

// recordFate is what becomes of one stream record.
type recordFate int

const (
	deliverRecord recordFate = iota
	dropRecord
	settleRecord // ambiguous: a consistent read of the spec item decides (settle)
)

// fate decides on a record with sequence number seq of desire m. Once a record of the desire
// was delivered, only a later one is delivered (rule 1: stream order). While what it knows comes
// from the List (rule 2): a record without incarnation (a REMOVE with Keys only) is delivered;
// one of the listed incarnation at the listed version or above is delivered (a same-version
// REMOVE may be a real delete; a replayed one is harmless: the controller confirms a deletion
// with a consistent read); one at a lower version is ambiguous: an older state read again, or
// the table taken back to that version after the Scan (a restore, an undo: a saved item put
// back); so is a record of another incarnation: an older one read again, or a new one written
// after the Scan.
func (s knownDesire) fate(seq string, m *api.DynamoDBMetadata, hasIncarnation bool) recordFate {
	switch {
	case s.seq != "":
		if seqAfter(seq, s.seq) {
			return deliverRecord
		}
		return dropRecord
	case !hasIncarnation:
		return deliverRecord
	case s.created.Equal(m.CreateTime) && m.Version >= s.version:
		return deliverRecord
	}
	return settleRecord
}

// seqAfter reports whether stream sequence number a comes after b. Sequence numbers are
// decimal strings of up to 40 digits (21 in practice): compared as integers, by length once
// leading zeros are stripped, then digit by digit. Anything else compares as a string and
// never panics.
func seqAfter(a, b string) bool {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		return len(a) > len(b)
	}
	return a > b
}

// desireBook holds what a watch knows of each desire, one knownDesire per documentID it listed
// or delivered a record of. A desire whose REMOVE was delivered keeps a tombstone only until
// the end of the poll round (endRound): records read again after that are older than the shard
// positions and dropped there (see shardFloor), so the book holds the live desires and one
// round's deletions, not every incarnation the table ever had.
type desireBook struct {
	known map[string]knownDesire
	ended []string // documentIDs whose REMOVE was delivered this round
}

func newDesireBook() *desireBook { return &desireBook{known: map[string]knownDesire{}} }

// listed records a desire the List returned.
func (b *desireBook) listed(m *api.DynamoDBMetadata) {
	b.known[m.DocumentID] = knownDesire{created: m.CreateTime, version: m.Version, updated: m.UpdateTime}
}

// delivered records that the record seq of desire m was delivered.
func (b *desireBook) delivered(seq string, m *api.DynamoDBMetadata, removed bool) {
	b.known[m.DocumentID] = knownDesire{created: m.CreateTime, version: m.Version, seq: seq, deleted: removed, updated: m.UpdateTime}
	if removed {
		b.ended = append(b.ended, m.DocumentID)
	}
}

// endRound frees the tombstones of the round's deletions that no later record revived.
func (b *desireBook) endRound() {
	for _, id := range b.ended {
		if s, ok := b.known[id]; ok && s.deleted {
			delete(b.known, id)
		}
	}
	clear(b.ended)
	b.ended = b.ended[:0]
}

// len returns how many desires the book knows.
func (b *desireBook) len() int { return len(b.known) }

// settle decides an ambiguous record of desire m by a consistent read of its spec item: a
// record whose incarnation the table holds now is delivered (a new incarnation, e.g. the spec
// replaced in place), and a REMOVE when the item is gone now; with exact, only a record of the
// very version the table holds (a lower version of the listed incarnation: the table went back
// to it). Anything else is an older or an intermediate state, dropped: a later record brings
// the current one. An item stored without a readable createTime (or version, with exact)
// cannot be told apart and is delivered.
func (lw *ListWatch[T]) settle(ctx context.Context, m *api.DynamoDBMetadata, removed, exact bool) (bool, error) {
	out, err := lw.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &lw.table, ConsistentRead: aws.Bool(true),
		Key:                      map[string]ddbtypes.AttributeValue{api.AttrDocumentID: &ddbtypes.AttributeValueMemberS{Value: m.DocumentID}},
		ProjectionExpression:     aws.String("#i, #c, #v"),
		ExpressionAttributeNames: map[string]string{"#i": api.AttrDocumentID, "#c": api.AttrCreateTime, "#v": api.AttrVersion}})
	if err != nil {
		return false, fmt.Errorf("table %s: reading %s to tell its incarnation: %w", lw.table, m.DocumentID, err)
	}
	if out == nil || len(out.Item) == 0 {
		return removed, nil
	}
	if removed {
		return false, nil
	}
	s, ok := out.Item[api.AttrCreateTime].(*ddbtypes.AttributeValueMemberS)
	if !ok {
		return true, nil
	}
	created, err := time.Parse(time.RFC3339, s.Value)
	if err != nil || !created.Equal(m.CreateTime) {
		return err != nil, nil
	}
	if !exact {
		return true, nil
	}
	v, ok := out.Item[api.AttrVersion].(*ddbtypes.AttributeValueMemberN)
	if !ok {
		return true, nil
	}
	version, err := strconv.ParseInt(v.Value, 10, 64)
	return err != nil || version == m.Version, nil
}
