package api

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func newTestClient(db *fakeDB) *Client {
	c := NewClient(db, "p-", "mc01")
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	n := 0
	c.Now = func() time.Time { n++; return t0.Add(time.Duration(n) * 1500 * time.Millisecond) }
	c.PollMin, c.PollMax = time.Millisecond, 4*time.Millisecond
	return c
}

func sampleSpec(id string) *ApplyDesire {
	return &ApplyDesire{DynamoDBMetadata: DynamoDBMetadata{DocumentID: id},
		Spec: ApplyDesireSpec{CommonSpec: CommonSpec{ClusterID: "hc-1"},
			KubeContent: json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"default"}}`)}}
}

// writeStatus writes what the applier would write answering spec (its strings echoed), at
// the given condition generation.
func writeStatus(t *testing.T, db *fakeDB, c *Client, spec *ApplyDesire, generation int64, createTime string) {
	t.Helper()
	created, updated := spec.StoredTimes()
	if createTime != "" {
		created = createTime
	}
	st := &ApplyDesire{DynamoDBMetadata: DynamoDBMetadata{DocumentID: spec.DocumentID, Version: 1, CreateTime: spec.UpdateTime, UpdateTime: spec.UpdateTime.Add(time.Second)},
		Spec: ApplyDesireSpec{CommonSpec: spec.Spec.CommonSpec}}
	st.Status.Conditions = []Condition{{Type: ConditionSuccessful, Status: ConditionTrue, Reason: ReasonNoErrors, ObservedGeneration: generation}}
	st.Status.ObservedDesireUpdateTime, st.Status.ObservedDesireCreateTime = updated, created
	item, err := EncodeItem(st)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := StatusShard(spec.DocumentID); ok {
		item[AttrShard] = &types.AttributeValueMemberS{Value: strconv.Itoa(s)}
	}
	db.mu.Lock()
	db.table(c.ApplyDesires().StatusTable())[spec.DocumentID] = item
	db.mu.Unlock()
}

func TestCreateReplaceDelete(t *testing.T) {
	ctx := context.Background()
	db := newFakeDB()
	c := newTestClient(db)
	specs := c.ApplyDesires()
	if specs.SpecsTable() != "p-mc-mc01-specs-applydesires" || specs.StatusTable() != "p-mc-mc01-status-applydesires" {
		t.Fatalf("tables %s %s", specs.SpecsTable(), specs.StatusTable())
	}
	in := sampleSpec("7b1fdb4e-decf-5d4c-a307-6718bada47d7")
	in.Status.AppliedUID = "not a backend's to write"
	created, err := specs.Create(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if in.Version != 0 || created.Version != 1 || !created.CreateTime.Equal(created.UpdateTime) ||
		created.Spec.ManagementCluster != "mc01" || created.Status.AppliedUID != "" {
		t.Fatalf("created %+v (input now %+v)", created, in)
	}
	if _, err := specs.Create(ctx, in); !errors.Is(err, ErrAlreadyExists) {
		t.Fatalf("second Create = %v, want ErrAlreadyExists", err)
	}
	got, err := specs.Get(ctx, in.DocumentID)
	if err != nil || string(got.Spec.KubeContent) != string(in.Spec.KubeContent) {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	replaced, err := specs.Replace(ctx, got)
	if err != nil {
		t.Fatal(err)
	}
	if replaced.Version != 2 || !replaced.UpdateTime.After(got.UpdateTime) || !replaced.CreateTime.Equal(got.CreateTime) {
		t.Fatalf("replaced %+v from %+v", replaced.DynamoDBMetadata, got.DynamoDBMetadata)
	}
	if _, err := specs.Replace(ctx, got); !errors.Is(err, ErrPreconditionFailed) {
		t.Fatalf("stale Replace = %v, want ErrPreconditionFailed", err)
	}
	if err := specs.Delete(ctx, in.DocumentID); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"Delete again":    specs.Delete(ctx, in.DocumentID),
		"Replace deleted": func() error { _, err := specs.Replace(ctx, replaced); return errNotFoundOr(err) }(),
		"Get deleted":     func() error { _, err := specs.Get(ctx, in.DocumentID); return err }(),
		"Status of none":  func() error { _, err := specs.Status(ctx, in.DocumentID); return err }(),
	} {
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s = %v, want ErrNotFound", name, err)
		}
	}
	big := sampleSpec("x")
	big.Spec.KubeContent = json.RawMessage(`"` + string(make([]byte, MaxItemSize)) + `"`)
	for i := range big.Spec.KubeContent[1 : len(big.Spec.KubeContent)-1] {
		big.Spec.KubeContent[i+1] = 'a'
	}
	var tooLarge *ItemTooLargeError
	if _, err := specs.Create(ctx, big); !errors.Is(err, ErrItemTooLarge) || !errors.As(err, &tooLarge) || tooLarge.Size <= MaxItemSize {
		t.Fatalf("Create of a large item = %v, want ErrItemTooLarge", err)
	}
}

// errNotFoundOr maps ErrPreconditionFailed (Replace of a deleted spec) to ErrNotFound for the
// table above; any other error stays.
func errNotFoundOr(err error) error {
	if errors.Is(err, ErrPreconditionFailed) {
		return ErrNotFound
	}
	return err
}

func TestAnswers(t *testing.T) {
	spec := sampleSpec("a")
	spec.Version, spec.CreateTime, spec.UpdateTime = 2, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 1, 1, 0, 0, 1, 500000000, time.UTC)
	created, updated := spec.StoredTimes()
	answer := func(change func(s *ApplyDesire)) *ApplyDesire {
		s := &ApplyDesire{DynamoDBMetadata: DynamoDBMetadata{DocumentID: "a"}}
		s.Status.Conditions = []Condition{{Type: ConditionSuccessful, Status: ConditionFalse, ObservedGeneration: 2}}
		s.Status.ObservedDesireUpdateTime, s.Status.ObservedDesireCreateTime = updated, created
		change(s)
		return s
	}
	tests := []struct {
		name   string
		status *ApplyDesire
		want   bool
	}{
		{"answers (whatever the verdict)", answer(func(*ApplyDesire) {}), true},
		{"older version", answer(func(s *ApplyDesire) { s.Status.Conditions[0].ObservedGeneration = 1 }), false},
		{"no conditions", answer(func(s *ApplyDesire) { s.Status.Conditions = nil }), false},
		{"other updateTime", answer(func(s *ApplyDesire) { s.Status.ObservedDesireUpdateTime = "2026-01-01T00:00:01Z" }), false},
		{"same instant, other spelling", answer(func(s *ApplyDesire) { s.Status.ObservedDesireUpdateTime = "2026-01-01T00:00:01.500Z" }), false},
		{"other incarnation", answer(func(s *ApplyDesire) { s.Status.ObservedDesireCreateTime = "2025-01-01T00:00:00Z" }), false},
		{"other document", answer(func(s *ApplyDesire) { s.DocumentID = "b" }), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Answers(spec, tt.status); got != tt.want {
				t.Fatalf("Answers = %v, want %v", got, tt.want)
			}
		})
	}
}

// A spec decoded from an item with its own time spellings is answered by a status echoing
// them, not by the codec's spelling.
func TestAnswersKeptSpelling(t *testing.T) {
	item, err := ItemFromJSON([]byte(`{"documentID":{"S":"a"},"version":{"N":"1"},"createTime":{"S":"2026-12-01T10:00:00.100000+00:00"},"updateTime":{"S":"2026-12-01T10:00:00.100000+00:00"}}`))
	if err != nil {
		t.Fatal(err)
	}
	var spec ApplyDesire
	if err := DecodeItem(item, &spec); err != nil {
		t.Fatal(err)
	}
	created, updated := spec.StoredTimes()
	if created != "2026-12-01T10:00:00.100000+00:00" || updated != created {
		t.Fatalf("StoredTimes = %q, %q", created, updated)
	}
	st := &ApplyDesire{DynamoDBMetadata: DynamoDBMetadata{DocumentID: "a"}}
	st.Status.Conditions = []Condition{{Type: ConditionSuccessful, ObservedGeneration: 1}}
	st.Status.ObservedDesireUpdateTime, st.Status.ObservedDesireCreateTime = "2026-12-01T10:00:00.1Z", "2026-12-01T10:00:00.1Z"
	if Answers(&spec, st) {
		t.Fatal("a status in the codec's spelling answered a spec spelled otherwise")
	}
	st.Status.ObservedDesireUpdateTime, st.Status.ObservedDesireCreateTime = created, updated
	if !Answers(&spec, st) {
		t.Fatal("an echoing status did not answer")
	}
}

func TestWaitForStatus(t *testing.T) {
	tests := []struct {
		name string
		// write runs before the n-th status read (n from 1).
		write   func(t *testing.T, db *fakeDB, c *Client, spec *ApplyDesire, n int)
		timeout time.Duration
		wantErr error
	}{
		{"answered after an older answer", func(t *testing.T, db *fakeDB, c *Client, spec *ApplyDesire, n int) {
			switch n {
			case 2:
				writeStatus(t, db, c, spec, spec.Version-1, "")
			case 4:
				writeStatus(t, db, c, spec, spec.Version, "")
			}
		}, time.Second, nil},
		{"a former incarnation's status is waited out", func(t *testing.T, db *fakeDB, c *Client, spec *ApplyDesire, n int) {
			if n == 1 {
				writeStatus(t, db, c, spec, spec.Version, "2020-01-01T00:00:00Z")
			}
		}, 50 * time.Millisecond, context.DeadlineExceeded},
		{"never answered", func(*testing.T, *fakeDB, *Client, *ApplyDesire, int) {}, 30 * time.Millisecond, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := newFakeDB()
			c := newTestClient(db)
			spec, err := c.ApplyDesires().Create(context.Background(), sampleSpec("7b1fdb4e-decf-5d4c-a307-6718bada47d7"))
			if err != nil {
				t.Fatal(err)
			}
			spec, err = c.ApplyDesires().Replace(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			db.getHook = func(n int) { tt.write(t, db, c, spec, n) }
			ctx, cancel := context.WithTimeout(context.Background(), tt.timeout)
			defer cancel()
			st, err := c.ApplyDesires().WaitForStatus(ctx, spec)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("WaitForStatus = %v, want %v", err, tt.wantErr)
			}
			if err == nil && (!Answers(spec, st) || db.gets < 4) {
				t.Fatalf("returned %+v after %d reads", st.Status, db.gets)
			}
		})
	}
}

func TestStatusesSince(t *testing.T) {
	db := newFakeDB()
	c := newTestClient(db)
	ctx := context.Background()
	ids := []string{"7b1fdb4e-decf-5d4c-a307-6718bada47d7", "00000001-0000-5000-8000-000000000000",
		"00000005-0000-5000-8000-000000000000", "00000003-0000-5000-8000-000000000000"}
	var specs []*ApplyDesire
	for _, id := range ids {
		s, err := c.ApplyDesires().Create(ctx, sampleSpec(id))
		if err != nil {
			t.Fatal(err)
		}
		writeStatus(t, db, c, s, 1, "")
		specs = append(specs, s)
	}
	// The heartbeat and a status without shard are never listed.
	db.table(c.ApplyDesires().StatusTable())[HeartbeatID] = Item{AttrDocumentID: &types.AttributeValueMemberS{Value: HeartbeatID},
		AttrShard: &types.AttributeValueMemberS{Value: "0"}, AttrUpdateTime: &types.AttributeValueMemberS{Value: "2030-01-01T00:00:00Z"}}
	tests := []struct {
		name  string
		since time.Time
		want  int
	}{
		{"all", time.Time{}, 4},
		// Statuses are stamped spec.UpdateTime + 1 s; the specs 1.5 s apart.
		{"inside a second: the early second is dropped by time", specs[1].UpdateTime.Add(time.Second), 2},
		{"after the last", specs[3].UpdateTime.Add(2 * time.Second), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := c.ApplyDesires().StatusesSince(ctx, tt.since)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.want {
				t.Fatalf("%d statuses, want %d", len(got), tt.want)
			}
			for _, st := range got {
				if !st.UpdateTime.After(tt.since) || IsReservedID(st.DocumentID) {
					t.Fatalf("listed %s at %s", st.DocumentID, st.UpdateTime)
				}
			}
		})
	}
}

func TestHeartbeat(t *testing.T) {
	db := newFakeDB()
	c := newTestClient(db)
	if _, err := c.Heartbeat(context.Background()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Heartbeat of none = %v, want ErrNotFound", err)
	}
	table := TableName("p-", "mc01", StatusTable, KindApplyDesire)
	db.table(table)[HeartbeatID] = Item{AttrDocumentID: &types.AttributeValueMemberS{Value: HeartbeatID},
		"applierTerm": &types.AttributeValueMemberN{Value: "7"}, "keepaliveSeconds": &types.AttributeValueMemberN{Value: "300"},
		"updateTime": &types.AttributeValueMemberS{Value: "2026-12-01T10:00:00Z"}}
	hb, err := c.Heartbeat(context.Background())
	if err != nil || hb.ApplierTerm != 7 {
		t.Fatalf("Heartbeat = %+v, %v", hb, err)
	}
	for _, tt := range []struct {
		age  time.Duration
		want bool
	}{{5 * time.Minute, false}, {7 * time.Minute, false}, {7*time.Minute + time.Second, true}} {
		if got := hb.Overdue(hb.UpdateTime.Add(tt.age), 2*time.Minute); got != tt.want {
			t.Errorf("Overdue after %s = %v", tt.age, got)
		}
	}
	db.table(table)[HeartbeatID]["applierTerm"] = &types.AttributeValueMemberS{Value: "seven"}
	if _, err := c.Heartbeat(context.Background()); !errors.Is(err, ErrInvalidItem) {
		t.Fatalf("bad heartbeat = %v, want ErrInvalidItem", err)
	}
}

// The store checks a backend meets before any call (the store conformance suite of
// openshift-hyperfleet/hyperfleet-applier): no item with an empty or reserved documentID, no
// ApplyDesire without kubeContent. Nothing reaches DynamoDB.
func TestCreateReplaceRefuseInvalid(t *testing.T) {
	const id = "7b1fdb4e-decf-5d4c-a307-6718bada47d7"
	tests := []struct {
		name   string
		change func(d *ApplyDesire)
	}{
		{"empty documentID", func(d *ApplyDesire) { d.DocumentID = "" }},
		{"reserved documentID", func(d *ApplyDesire) { d.DocumentID = HeartbeatID }},
		{"reserved documentID of another name", func(d *ApplyDesire) { d.DocumentID = "_mine" }},
		{"no kubeContent", func(d *ApplyDesire) { d.Spec.KubeContent = nil }},
		{"empty kubeContent", func(d *ApplyDesire) { d.Spec.KubeContent = json.RawMessage{} }},
		{"blank kubeContent", func(d *ApplyDesire) { d.Spec.KubeContent = json.RawMessage(" \n") }},
		{"null kubeContent", func(d *ApplyDesire) { d.Spec.KubeContent = json.RawMessage("null") }},
		// Decoded from a newer backend's item (DecodeItem records them): writing would drop them.
		{"spec attributes this module does not know", func(d *ApplyDesire) { d.Spec.unknown = "applyPolicy" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			db := newFakeDB()
			specs := newTestClient(db).ApplyDesires()
			stored, err := specs.Create(ctx, sampleSpec(id))
			if err != nil {
				t.Fatal(err)
			}
			bad := sampleSpec(id)
			tt.change(bad)
			if _, err := specs.Create(ctx, bad); !errors.Is(err, ErrInvalidItem) {
				t.Errorf("Create = %v, want ErrInvalidItem", err)
			}
			bad.DynamoDBMetadata = stored.DynamoDBMetadata
			tt.change(bad)
			if _, err := specs.Replace(ctx, bad); !errors.Is(err, ErrInvalidItem) {
				t.Errorf("Replace = %v, want ErrInvalidItem", err)
			}
			if n := len(db.table(specs.SpecsTable())); n != 1 || db.puts != 1 {
				t.Fatalf("%d items after %d puts, want the first one only", n, db.puts)
			}
		})
	}
	// The other kinds carry no kubeContent: only their documentID is checked.
	db := newFakeDB()
	c := newTestClient(db)
	del := &DeleteDesire{DynamoDBMetadata: DynamoDBMetadata{DocumentID: id}}
	if _, err := c.DeleteDesires().Create(context.Background(), del); err != nil {
		t.Fatalf("Create of a DeleteDesire = %v", err)
	}
	del.DocumentID = ""
	if _, err := c.DeleteDesires().Create(context.Background(), del); !errors.Is(err, ErrInvalidItem) {
		t.Fatalf("Create of a DeleteDesire without documentID = %v, want ErrInvalidItem", err)
	}
	if _, err := c.ReadDesires().Create(context.Background(), &ReadDesire{DynamoDBMetadata: DynamoDBMetadata{DocumentID: id}}); err != nil {
		t.Fatalf("Create of a ReadDesire = %v", err)
	}
}

// DeleteIf removes a spec only at the version the backend saw.
func TestDeleteIf(t *testing.T) {
	const id = "7b1fdb4e-decf-5d4c-a307-6718bada47d7"
	tests := []struct {
		name    string
		stored  int64 // the stored version; 0: no spec
		version int64 // DeleteIf's
		id      string
		wantErr error
	}{
		{"the version seen", 2, 2, id, nil},
		{"an older version", 2, 1, id, ErrPreconditionFailed},
		{"a newer version", 1, 2, id, ErrPreconditionFailed},
		{"no spec", 0, 1, id, ErrNotFound},
		{"empty documentID", 1, 1, "", ErrInvalidItem},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			db := newFakeDB()
			specs := newTestClient(db).ApplyDesires()
			if tt.stored > 0 {
				d, err := specs.Create(ctx, sampleSpec(id))
				if err != nil {
					t.Fatal(err)
				}
				for d.Version < tt.stored {
					if d, err = specs.Replace(ctx, d); err != nil {
						t.Fatal(err)
					}
				}
			}
			err := specs.DeleteIf(ctx, tt.id, tt.version)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("DeleteIf = %v, want %v", err, tt.wantErr)
			}
			_, getErr := specs.Get(ctx, id)
			if gone := errors.Is(getErr, ErrNotFound); gone != (tt.wantErr == nil || tt.stored == 0) {
				t.Fatalf("after DeleteIf the spec is gone=%v (%v)", gone, getErr)
			}
		})
	}
}
