package api

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// streamEnv is one WaitForStatus on a streamed fake.
type streamEnv struct {
	db    *streamedDB
	c     *Client
	spec  *ApplyDesire
	table string
}

func newStreamClient(db *streamedDB, withAPI bool, linger time.Duration) *Client {
	var opts []ClientOption
	if withAPI {
		opts = append(opts, WithStatusStreamsAPI(db.fs), WithStatusStreamTiming(time.Millisecond, linger))
	}
	c := NewClient(db, "p-", "mc01", opts...)
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	n := 0
	c.Now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		n++
		return t0.Add(time.Duration(n) * 1500 * time.Millisecond)
	}
	c.PollMin, c.PollMax = time.Millisecond, 4*time.Millisecond
	return c
}

// putStatus writes, through PutItem (so the stream has it), what the applier would write
// answering spec at the given condition generation.
func putStatus(t *testing.T, db *streamedDB, c *Client, spec *ApplyDesire, generation int64) {
	t.Helper()
	created, updated := spec.StoredTimes()
	st := &ApplyDesire{DynamoDBMetadata: DynamoDBMetadata{DocumentID: spec.DocumentID, Version: 1, CreateTime: spec.UpdateTime, UpdateTime: spec.UpdateTime.Add(time.Second)},
		Spec: ApplyDesireSpec{CommonSpec: spec.Spec.CommonSpec}}
	st.Status.Conditions = []Condition{{Type: ConditionSuccessful, Status: ConditionTrue, Reason: ReasonNoErrors, ObservedGeneration: generation}}
	st.Status.ObservedDesireUpdateTime, st.Status.ObservedDesireCreateTime = updated, created
	item, err := EncodeItem(st)
	if err != nil {
		t.Error(err)
		return
	}
	if s, ok := StatusShard(spec.DocumentID); ok {
		item[AttrShard] = &types.AttributeValueMemberS{Value: strconv.Itoa(s)}
	}
	table := c.ApplyDesires().StatusTable()
	if _, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: &table, Item: item}); err != nil {
		t.Error(err)
	}
}

// joined reports whether n waiters are registered on the reader of table.
func joined(c *Client, table string, n int) bool {
	if c.streams == nil {
		return false
	}
	c.streams.mu.Lock()
	defer c.streams.mu.Unlock()
	r := c.streams.readers[table]
	if r == nil || r.n < n {
		return false
	}
	select {
	case <-r.ready:
		return true
	default:
		return false
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (e *streamEnv) gets() int {
	e.db.mu.Lock()
	defer e.db.mu.Unlock()
	return e.db.gets
}

func TestWaitForStatusStream(t *testing.T) {
	const id = "7b1fdb4e-decf-5d4c-a307-6718bada47d7"
	table := "p-mc-mc01-status-applydesires"
	tests := []struct {
		name     string
		streamed bool                 // the status table has a stream
		view     types.StreamViewType // its view type
		noAPI    bool                 // the Client has no StreamsAPI
		before   func(t *testing.T, e *streamEnv)
		// during runs once the wait follows the stream (or, polling, has read twice).
		during  func(t *testing.T, e *streamEnv)
		timeout time.Duration
		wantErr error
		check   func(t *testing.T, e *streamEnv)
	}{
		{name: "answered by a record", streamed: true,
			during: func(t *testing.T, e *streamEnv) {
				putStatus(t, e.db, e.c, e.spec, e.spec.Version-1) // an older answer is waited out
				putStatus(t, e.db, e.c, e.spec, e.spec.Version)
			},
			check: func(t *testing.T, e *streamEnv) {
				if e.gets() != 1 || e.db.fs.count("GetRecords") == 0 {
					t.Errorf("GetItem %d, GetRecords %d; want 1 GetItem (no polling) and records read", e.gets(), e.db.fs.count("GetRecords"))
				}
			}},
		{name: "answered before the wait (the initial GetItem)", streamed: true,
			before: func(t *testing.T, e *streamEnv) { putStatus(t, e.db, e.c, e.spec, e.spec.Version) },
			check: func(t *testing.T, e *streamEnv) {
				if e.gets() != 1 {
					t.Errorf("GetItem %d, want 1", e.gets())
				}
			}},
		{name: "a shard rollover: the child shard is read from its start", streamed: true,
			during: func(t *testing.T, e *streamEnv) {
				e.db.fs.rollover(table)
				putStatus(t, e.db, e.c, e.spec, e.spec.Version)
			},
			check: func(t *testing.T, e *streamEnv) {
				f := e.db.fs
				f.mu.Lock()
				defer f.mu.Unlock()
				if f.calls["DescribeStream"] < 2 || f.iterTypes[stypes.ShardIteratorTypeTrimHorizon] != 1 || e.db.gets != 1 {
					t.Errorf("DescribeStream %d, TRIM_HORIZON iterators %d, GetItem %d; want >= 2, 1, 1",
						f.calls["DescribeStream"], f.iterTypes[stypes.ShardIteratorTypeTrimHorizon], e.db.gets)
				}
			}},
		{name: "a rollover whose child is listed late, another shard open: the child is looked for again", streamed: true,
			before: func(t *testing.T, e *streamEnv) { e.db.fs.addOpenShard(table, "shardId-other") },
			during: func(t *testing.T, e *streamEnv) {
				e.db.fs.mu.Lock()
				e.db.fs.hideChildren = 1
				e.db.fs.mu.Unlock()
				e.db.fs.rollover(table)
				putStatus(t, e.db, e.c, e.spec, e.spec.Version)
			},
			check: func(t *testing.T, e *streamEnv) {
				f := e.db.fs
				f.mu.Lock()
				defer f.mu.Unlock()
				if f.iterTypes[stypes.ShardIteratorTypeTrimHorizon] != 1 || e.db.gets != 1 {
					t.Errorf("TRIM_HORIZON iterators %d, GetItem %d; want 1, 1 (the child read, no polling)",
						f.iterTypes[stypes.ShardIteratorTypeTrimHorizon], e.db.gets)
				}
			}},
		{name: "a reader that cannot position (GetShardIterator throttled): the status there is read by polling", streamed: true,
			before: func(t *testing.T, e *streamEnv) {
				e.db.fs.mu.Lock()
				e.db.fs.iterThrottle = 1 << 30
				e.db.fs.mu.Unlock()
				putStatus(t, e.db, e.c, e.spec, e.spec.Version)
			},
			check: func(t *testing.T, e *streamEnv) {
				if e.gets() < 1 {
					t.Errorf("GetItem %d, want >= 1", e.gets())
				}
			}},
		{name: "an expired iterator is renewed", streamed: true,
			during: func(t *testing.T, e *streamEnv) {
				putStatus(t, e.db, e.c, e.spec, e.spec.Version-1)
				// A GetRecords that started after the write has read it.
				n := e.db.fs.count("GetRecords")
				eventually(t, "the older status read", func() bool { return e.db.fs.count("GetRecords") >= n+2 })
				e.db.fs.mu.Lock()
				e.db.fs.expire = 1
				e.db.fs.mu.Unlock()
				eventually(t, "the iterator renewed", func() bool { return e.db.fs.count("GetShardIterator") > 1 })
				putStatus(t, e.db, e.c, e.spec, e.spec.Version)
			},
			check: func(t *testing.T, e *streamEnv) {
				f := e.db.fs
				f.mu.Lock()
				defer f.mu.Unlock()
				if f.iterTypes[stypes.ShardIteratorTypeAfterSequenceNumber] != 1 || e.db.gets != 1 {
					t.Errorf("AFTER_SEQUENCE_NUMBER iterators %d, GetItem %d; want 1, 1", f.iterTypes[stypes.ShardIteratorTypeAfterSequenceNumber], e.db.gets)
				}
			}},
		{name: "throttled reads back off and go on", streamed: true,
			during: func(t *testing.T, e *streamEnv) {
				e.db.fs.mu.Lock()
				e.db.fs.throttle = 3
				e.db.fs.mu.Unlock()
				putStatus(t, e.db, e.c, e.spec, e.spec.Version)
			},
			check: func(t *testing.T, e *streamEnv) {
				if e.gets() != 1 || e.db.fs.count("GetRecords") < 4 {
					t.Errorf("GetItem %d, GetRecords %d; want 1, >= 4", e.gets(), e.db.fs.count("GetRecords"))
				}
			}},
		{name: "the stream disabled (shards closed, none follows): polls", streamed: true,
			during: func(t *testing.T, e *streamEnv) {
				e.db.fs.disable(table, false)
				eventually(t, "the reader ended", func() bool { return !joined(e.c, table, 1) })
				putStatus(t, e.db, e.c, e.spec, e.spec.Version)
			},
			check: func(t *testing.T, e *streamEnv) {
				if e.gets() < 2 {
					t.Errorf("GetItem %d, want >= 2 (polling)", e.gets())
				}
			}},
		{name: "the stream gone (ResourceNotFound): polls", streamed: true,
			during: func(t *testing.T, e *streamEnv) {
				e.db.fs.disable(table, true)
				eventually(t, "the reader ended", func() bool { return !joined(e.c, table, 1) })
				putStatus(t, e.db, e.c, e.spec, e.spec.Version)
			},
			check: func(t *testing.T, e *streamEnv) {
				if e.gets() < 2 {
					t.Errorf("GetItem %d, want >= 2 (polling)", e.gets())
				}
			}},
		{name: "no stream: polls",
			during: func(t *testing.T, e *streamEnv) { putStatus(t, e.db, e.c, e.spec, e.spec.Version) },
			check: func(t *testing.T, e *streamEnv) {
				if e.gets() < 2 || e.db.describe != 1 || len(e.db.fs.calls) != 0 {
					t.Errorf("GetItem %d, DescribeTable %d, stream calls %v; want >= 2, 1, none", e.gets(), e.db.describe, e.db.fs.calls)
				}
			}},
		{name: "a stream without new images: polls", streamed: true, view: types.StreamViewTypeKeysOnly,
			during: func(t *testing.T, e *streamEnv) { putStatus(t, e.db, e.c, e.spec, e.spec.Version) },
			check: func(t *testing.T, e *streamEnv) {
				if e.gets() < 2 || len(e.db.fs.calls) != 0 {
					t.Errorf("GetItem %d, stream calls %v; want >= 2, none", e.gets(), e.db.fs.calls)
				}
			}},
		{name: "no StreamsAPI given: polls", streamed: true, noAPI: true,
			during: func(t *testing.T, e *streamEnv) { putStatus(t, e.db, e.c, e.spec, e.spec.Version) },
			check: func(t *testing.T, e *streamEnv) {
				if e.gets() < 2 || e.db.describe != 0 || len(e.db.fs.calls) != 0 {
					t.Errorf("GetItem %d, DescribeTable %d, stream calls %v; want >= 2, 0, none", e.gets(), e.db.describe, e.db.fs.calls)
				}
			}},
		{name: "ctx deadline", streamed: true, timeout: 50 * time.Millisecond, wantErr: context.DeadlineExceeded,
			during: func(t *testing.T, e *streamEnv) { putStatus(t, e.db, e.c, e.spec, e.spec.Version-1) },
			check: func(t *testing.T, e *streamEnv) {
				if e.gets() != 1 {
					t.Errorf("GetItem %d, want 1", e.gets())
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			view := tt.view
			if view == "" {
				view = types.StreamViewTypeNewAndOldImages
			}
			var streamed []string
			if tt.streamed {
				streamed = append(streamed, table)
			}
			db := newStreamedDB(view, streamed...)
			c := newStreamClient(db, !tt.noAPI, 0)
			defer c.Close()
			d := c.ApplyDesires()
			if d.StatusTable() != table {
				t.Fatalf("status table %s, want %s", d.StatusTable(), table)
			}
			spec, err := d.Create(context.Background(), sampleSpec(id))
			if err != nil {
				t.Fatal(err)
			}
			if spec, err = d.Replace(context.Background(), spec); err != nil {
				t.Fatal(err)
			}
			e := &streamEnv{db: db, c: c, spec: spec, table: table}
			if tt.before != nil {
				tt.before(t, e)
			}
			timeout := tt.timeout
			if timeout == 0 {
				timeout = 5 * time.Second
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			var wg sync.WaitGroup
			if tt.during != nil {
				wg.Go(func() {
					// The stream followed: joined and the initial GetItem made.
					for !(joined(c, table, 1) && e.gets() >= 1) && e.gets() < 2 && ctx.Err() == nil {
						time.Sleep(time.Millisecond)
					}
					time.Sleep(2 * time.Millisecond) // the GetItem counted has also read
					tt.during(t, e)
				})
			}
			st, err := d.WaitForStatus(ctx, spec)
			wg.Wait()
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("WaitForStatus = %v, want %v", err, tt.wantErr)
			}
			if err == nil && !Answers(spec, st) {
				t.Fatalf("returned a status that does not answer: %+v", st.Status)
			}
			if tt.check != nil {
				tt.check(t, e)
			}
		})
	}
}

// Many concurrent waits on one status table share one reader (DynamoDB Streams allows two
// readers per shard): one DescribeTable, one DescribeStream, one LATEST iterator; the reader
// stops when the last waiter leaves, and the next wait starts another (the stream still cached).
func TestWaitForStatusStreamSharedReader(t *testing.T) {
	table := "p-mc-mc01-status-applydesires"
	db := newStreamedDB(types.StreamViewTypeNewAndOldImages, table)
	c := newStreamClient(db, true, 0)
	defer c.Close()
	d := c.ApplyDesires()
	const n = 20
	specs := make([]*ApplyDesire, n)
	for i := range specs {
		s, err := d.Create(context.Background(), sampleSpec(fmt.Sprintf("doc-%02d", i)))
		if err != nil {
			t.Fatal(err)
		}
		specs[i] = s
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	errs := make(chan error, n)
	for _, s := range specs {
		go func() {
			st, err := d.WaitForStatus(ctx, s)
			if err == nil && !Answers(s, st) {
				err = fmt.Errorf("%s: a status that does not answer", s.DocumentID)
			}
			errs <- err
		}()
	}
	eventually(t, "all waiters joined", func() bool { return joined(c, table, n) })
	for _, s := range specs {
		putStatus(t, db, c, s, s.Version)
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	f := db.fs
	f.mu.Lock()
	if db.describe != 1 || f.calls["DescribeStream"] != 1 || f.iterTypes[stypes.ShardIteratorTypeLatest] != 1 || db.gets != n {
		t.Errorf("DescribeTable %d, DescribeStream %d, LATEST iterators %d, GetItem %d; want 1, 1, 1, %d",
			db.describe, f.calls["DescribeStream"], f.iterTypes[stypes.ShardIteratorTypeLatest], db.gets, n)
	}
	f.mu.Unlock()
	eventually(t, "the reader stopped", func() bool {
		c.streams.mu.Lock()
		defer c.streams.mu.Unlock()
		return len(c.streams.readers) == 0
	})
	// A later wait: a new reader, the stream from the cache.
	s, err := d.Replace(context.Background(), specs[0])
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		eventually(t, "the next waiter joined", func() bool { return joined(c, table, 1) })
		putStatus(t, db, c, s, s.Version)
	}()
	if _, err := d.WaitForStatus(ctx, s); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if db.describe != 1 || f.iterTypes[stypes.ShardIteratorTypeLatest] != 2 {
		t.Errorf("DescribeTable %d, LATEST iterators %d; want 1, 2", db.describe, f.iterTypes[stypes.ShardIteratorTypeLatest])
	}
}

// A reader lingers after its last waiter (the next wait reuses it) until Client.Close stops it.
func TestClientCloseStopsLingeringReader(t *testing.T) {
	table := "p-mc-mc01-status-applydesires"
	db := newStreamedDB(types.StreamViewTypeNewAndOldImages, table)
	c := newStreamClient(db, true, time.Hour)
	d := c.ApplyDesires()
	spec, err := d.Create(context.Background(), sampleSpec("doc-1"))
	if err != nil {
		t.Fatal(err)
	}
	putStatus(t, db, c, spec, spec.Version)
	if _, err := d.WaitForStatus(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	c.streams.mu.Lock()
	r := c.streams.readers[table]
	c.streams.mu.Unlock()
	if r == nil {
		t.Fatal("no lingering reader after the wait")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.done:
	default:
		t.Fatal("the reader runs after Close")
	}
	// After Close: polling.
	before := db.fs.count("GetShardIterator")
	if _, err := d.WaitForStatus(context.Background(), spec); err != nil || db.fs.count("GetShardIterator") != before {
		t.Fatalf("WaitForStatus after Close = %v, iterators %d -> %d; want an answer by polling", err, before, db.fs.count("GetShardIterator"))
	}
}

// streamValue and toStream are inverses over every attribute type.
func TestStreamItemRoundTrip(t *testing.T) {
	item := Item{
		"s": &types.AttributeValueMemberS{Value: "x"}, "n": &types.AttributeValueMemberN{Value: "1"},
		"b": &types.AttributeValueMemberB{Value: []byte{1}}, "bool": &types.AttributeValueMemberBOOL{Value: true},
		"null": &types.AttributeValueMemberNULL{Value: true}, "ss": &types.AttributeValueMemberSS{Value: []string{"a"}},
		"ns": &types.AttributeValueMemberNS{Value: []string{"2"}}, "bs": &types.AttributeValueMemberBS{Value: [][]byte{{2}}},
		"m": &types.AttributeValueMemberM{Value: Item{"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "y"}}}}},
	}
	got := streamItem(toStream(item))
	if !reflect.DeepEqual(got, item) {
		t.Fatalf("round trip changed the item: %v", got)
	}
}

// Close while a wait follows the stream: the wait goes on by polling and is answered.
func TestClientCloseDuringWait(t *testing.T) {
	table := "p-mc-mc01-status-applydesires"
	db := newStreamedDB(types.StreamViewTypeNewAndOldImages, table)
	c := newStreamClient(db, true, 0)
	d := c.ApplyDesires()
	spec, err := d.Create(context.Background(), sampleSpec("doc-1"))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		eventually(t, "the waiter joined", func() bool { return joined(c, table, 1) })
		_ = c.Close()
		putStatus(t, db, c, spec, spec.Version)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := d.WaitForStatus(ctx, spec); err != nil {
		t.Fatalf("WaitForStatus after Close = %v, want an answer by polling", err)
	}
}
