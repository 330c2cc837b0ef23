package kubeapplier

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestSeqAfter(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		{"000000000000000000002", "000000000000000000001", true},
		{"000000000000000000001", "000000000000000000001", false},
		{"000000000000000000001", "000000000000000000002", false},
		{"100000000000000000000", "99999999999999999999", true}, // longer: larger, not lexically smaller
		{"99999999999999999999", "100000000000000000000", false},
		{"1000000000000000000000000000000000000000", "999999999999999999999", true},
		{"000000000000000000010", "9", true}, // leading zeros do not count
		{"5", "", true},
		{"", "5", false},
		{"", "", false},
		{"x", "y", false}, // not a number: no panic
	}
	for _, tc := range cases {
		if got := seqAfter(tc.a, tc.b); got != tc.want {
			t.Errorf("seqAfter(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestDesireStampFate: rule 1 (a delivered record: stream order decides) and rule 2 (the List's
// copy only: the version within its incarnation, a consistent read for another incarnation).
func TestDesireStampFate(t *testing.T) {
	c1, c2 := stTime, stTime.Add(time.Hour)
	meta := func(v int64, created time.Time) *DynamoDBMetadata {
		return &DynamoDBMetadata{DocumentID: "a", Version: v, CreateTime: created}
	}
	listed := desireStamp{created: c1, version: 3}
	delivered := desireStamp{created: c1, version: 3, seq: "000000000000000000050"}
	gone := desireStamp{created: c1, version: 3, seq: "000000000000000000050", deleted: true}
	cases := []struct {
		name  string
		stamp desireStamp
		seq   string
		m     *DynamoDBMetadata
		inc   bool
		want  recordFate
	}{
		{"delivered: later record of an older-looking incarnation", delivered, "000000000000000000051", meta(1, c1.Add(-time.Hour)), true, deliverRecord},
		{"delivered: later record, same state (put back unchanged)", gone, "000000000000000000051", meta(3, c1), true, deliverRecord},
		{"delivered: the same record again", delivered, "000000000000000000050", meta(3, c1), true, dropRecord},
		{"delivered: an earlier record", delivered, "000000000000000000049", meta(4, c2), true, dropRecord},
		{"listed: lower version", listed, "000000000000000000010", meta(2, c1), true, dropRecord},
		{"listed: same version (may be a real delete)", listed, "000000000000000000010", meta(3, c1), true, deliverRecord},
		{"listed: higher version", listed, "000000000000000000010", meta(4, c1), true, deliverRecord},
		{"listed: another incarnation", listed, "000000000000000000010", meta(1, c2), true, settleRecord},
		{"listed: no incarnation in the record", listed, "000000000000000000010", meta(0, time.Time{}), false, deliverRecord},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.stamp.fate(tc.seq, tc.m, tc.inc); got != tc.want {
				t.Fatalf("fate = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSettleIncarnation: an ambiguous record is delivered when the spec item holds its
// incarnation now (a REMOVE: when the item is gone), dropped otherwise; a failed read is an
// error (the record is read again), never a guess.
func TestSettleIncarnation(t *testing.T) {
	ctx := context.Background()
	c1, c2 := stTime, stTime.Add(time.Hour)
	cases := []struct {
		name    string
		stored  map[string]types.AttributeValue // nil: no item
		created time.Time
		removed bool
		want    bool
	}{
		{"current incarnation", stItemAt(t, "a", 2, c2), c2, false, true},
		{"older incarnation", stItemAt(t, "a", 1, c2), c1, false, false},
		{"item gone", nil, c1, false, false},
		{"REMOVE, item gone", nil, c1, true, true},
		{"REMOVE, item there", stItemAt(t, "a", 1, c2), c1, true, false},
		{"REMOVE, same incarnation put back", stItemAt(t, "a", 1, c1), c1, true, false},
		{"item without createTime", map[string]types.AttributeValue{"documentID": &types.AttributeValueMemberS{Value: "a"}}, c1, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newMemDB()
			if tc.stored != nil {
				f.PutRaw(stTable, tc.stored)
			}
			lw := &streamListWatch[*ApplyDesire]{table: stTable, db: f}
			got, err := lw.settle(ctx, &DynamoDBMetadata{DocumentID: "a", Version: 1, CreateTime: tc.created}, tc.removed)
			if err != nil || got != tc.want {
				t.Fatalf("settle = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	f := newMemDB()
	boom := errors.New("boom")
	f.FailNext("GetItem", boom)
	lw := &streamListWatch[*ApplyDesire]{table: stTable, db: f}
	if _, err := lw.settle(ctx, &DynamoDBMetadata{DocumentID: "a"}, false); !errors.Is(err, boom) {
		t.Fatalf("settle with a failing read: %v, want it wrapped", err)
	}
}
