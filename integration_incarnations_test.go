package kubeapplier

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/controller"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
	"github.com/kube-applier-aws/kubeapplier/internal/testenv"
)

// Issue 21 items 4 and 6 on DynamoDB Local: incarnations told apart by stream order, and a
// spec's time strings echoed byte for byte into its status.

// startIncarnationInformers runs the informers of mc01 on env until the test ends.
func startIncarnationInformers(t *testing.T, env testenv.Dynamo) *Informers {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	infs := NewInformers(env.Client, AWSStreams{DB: env.Client, Streams: env.Streams}, env.Prefix, "mc01", StreamOptions{})
	if err := infs.CheckStreams(ctx); err != nil {
		t.Fatal(err)
	}
	infs.Start(ctx)
	if err := infs.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	return infs
}

// cachedStates returns the ApplyDesire informer's desires as documentID -> version, incarnation.
func cachedStates(infs *Informers) map[string]stState {
	out := map[string]stState{}
	for _, d := range infs.ApplyDesires.Lister.List() {
		out[d.DocumentID] = stState{d.Version, d.CreateTime.UTC()}
	}
	return out
}

// TestIntegrationIncarnations: on DynamoDB Local's stream, specs deleted and put back unchanged
// (same createTime) and specs replaced in place by one PutItem as new incarnations (a new
// createTime, version 1, a MODIFY record) reach the informer's cache, both for specs the watch
// delivered before and for specs only its List knew, 20 of them rewritten right after start.
func TestIntegrationIncarnations(t *testing.T) {
	env, specs := specsOnDynamoLocal(t)
	ctx := t.Context()
	put := func(item map[string]types.AttributeValue) {
		t.Helper()
		if _, err := env.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(specs.Name()), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	remove := func(id string) {
		t.Helper()
		if _, err := env.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(specs.Name()),
			Key: map[string]types.AttributeValue{api.AttrDocumentID: &types.AttributeValueMemberS{Value: id}}}); err != nil {
			t.Fatal(err)
		}
	}
	later, earlier := stTime.Add(time.Hour), stTime.Add(-time.Hour)
	want := map[string]stState{}
	for i := range 21 {
		id := fmt.Sprintf("listed-%02d", i)
		put(stItem(t, id, 3))
		want[id] = stState{3, stTime}
	}
	infs := startIncarnationInformers(t, env)
	// Right after start: 20 listed specs replaced in place, one with a clock behind.
	for i := range 20 {
		id, created := fmt.Sprintf("listed-%02d", i), later
		if i == 0 {
			created = earlier
		}
		put(stItemAt(t, id, 1, created))
		want[id] = stState{1, created}
	}
	// A listed spec deleted and put back unchanged.
	remove("listed-20")
	put(stItem(t, "listed-20", 3))
	// Specs the watch delivered: deleted and put back unchanged, replaced in place.
	put(stItem(t, "streamed-a", 2))
	put(stItem(t, "streamed-b", 2))
	waitFor(t, 20*time.Second, "the streamed specs", func() bool {
		s := cachedStates(infs)
		return s["streamed-a"].Version == 2 && s["streamed-b"].Version == 2
	})
	remove("streamed-a")
	put(stItem(t, "streamed-a", 2))
	put(stItemAt(t, "streamed-b", 1, later))
	want["streamed-a"], want["streamed-b"] = stState{2, stTime}, stState{1, later}
	put(stItem(t, "zz-last", 1))
	want["zz-last"] = stState{1, stTime}
	waitFor(t, 30*time.Second, "every incarnation in the cache", func() bool { return fmt.Sprint(cachedStates(infs)) == fmt.Sprint(want) },
		func() string { return fmt.Sprintf("cache %v\nwant  %v", cachedStates(infs), want) })
}

// TestIntegrationStatusEchoesTimeSpellings: a spec whose times are spelled otherwise than the
// SDK writes them (fractional zeros, +00:00, no fraction) is read through the stream, and its
// status holds the spec's strings byte for byte; writing the same verdict again changes
// nothing.
func TestIntegrationStatusEchoesTimeSpellings(t *testing.T) {
	env, specs := specsOnDynamoLocal(t)
	ctx := t.Context()
	infs := startIncarnationInformers(t, env)
	status := tables.NewClient(env.Client, env.Prefix, "mc01").ApplyDesireStatus()
	w := controller.NewStatusWriter[*ApplyDesire](status, time.Now, unelected, specs).WithCache()
	cases := []struct{ id, created, updated string }{
		{"fractional-zeros", "2026-01-01T00:00:00.100000Z", "2026-01-01T00:00:01.500000000Z"},
		{"offset", "2026-01-01T00:00:00+00:00", "2026-01-01T00:00:01.25+00:00"},
		{"no-fraction", "2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z"},
	}
	for _, tc := range cases {
		item := stItem(t, tc.id, 1)
		item[api.AttrCreateTime] = &types.AttributeValueMemberS{Value: tc.created}
		item[api.AttrUpdateTime] = &types.AttributeValueMemberS{Value: tc.updated}
		if _, err := env.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(specs.Name()), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range cases {
		var spec *ApplyDesire
		waitFor(t, 20*time.Second, tc.id+" in the cache", func() bool {
			d, err := infs.ApplyDesires.Lister.Get(tc.id)
			spec = d
			return err == nil
		})
		for i, want := range []controller.WriteResult{controller.StatusCreated, controller.StatusUnchanged} {
			if res, _, err := w.Write(ctx, spec.DeepCopy(), Applied(1, "ok"), i == 0); err != nil || res != want {
				t.Fatalf("%s: write %d = %v, %v; want %v", tc.id, i, res, err, want)
			}
		}
		out, err := env.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(api.TableName(env.Prefix, "mc01", api.StatusTable, KindApplyDesire)),
			Key: map[string]types.AttributeValue{api.AttrDocumentID: &types.AttributeValueMemberS{Value: tc.id}}, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		st, ok := out.Item[api.AttrStatus].(*types.AttributeValueMemberM)
		if !ok {
			t.Fatalf("%s: status item %v has no status map", tc.id, out.Item)
		}
		for attr, want := range map[string]string{api.AttrObservedDesireCreateTime: tc.created, api.AttrObservedDesireUpdateTime: tc.updated} {
			if got, _ := st.Value[attr].(*types.AttributeValueMemberS); got == nil || got.Value != want {
				t.Errorf("%s: status.%s = %v, want the spec's %q byte for byte", tc.id, attr, got, want)
			}
		}
	}
}

// TestIntegrationApplierFollowsIncarnations: the whole applier on DynamoDB Local and
// kube-apiserver. A spec replaced in place by a new incarnation (its createTime an hour
// earlier: the backend's clock is behind) gets its content applied and a status answering it;
// deleted and put back unchanged, it gets its status back. Every status echoes the spec's time
// strings byte for byte.
func TestIntegrationApplierFollowsIncarnations(t *testing.T) {
	e := startE2E(t, nil)
	ctx := t.Context()
	statusTable := e.specs.ApplyDesireStatus()
	specItem := func(created, updated, value string) map[string]types.AttributeValue {
		d := applyDesire("inc", e.configMap("inc", map[string]string{"v": value}))
		d.Version = 1
		item, err := api.EncodeItem(d)
		if err != nil {
			t.Fatal(err)
		}
		item[api.AttrCreateTime] = &types.AttributeValueMemberS{Value: created}
		item[api.AttrUpdateTime] = &types.AttributeValueMemberS{Value: updated}
		return item
	}
	put := func(item map[string]types.AttributeValue) {
		t.Helper()
		if _, err := e.app.opts.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(e.applyS.Name()), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	// waitAnswered waits for a Successful status whose observed times are the given strings.
	waitAnswered := func(created, updated string) {
		t.Helper()
		var last map[string]types.AttributeValue
		waitFor(t, 30*time.Second, "a status answering createTime "+created, func() bool {
			out, err := e.app.opts.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(api.TableName(e.app.opts.TablePrefix, "mc01", api.StatusTable, KindApplyDesire)),
				Key: map[string]types.AttributeValue{api.AttrDocumentID: &types.AttributeValueMemberS{Value: "inc"}}, ConsistentRead: aws.Bool(true)})
			if err != nil || len(out.Item) == 0 {
				return false
			}
			last = out.Item
			st, _ := out.Item[api.AttrStatus].(*types.AttributeValueMemberM)
			if st == nil {
				return false
			}
			c, _ := st.Value[api.AttrObservedDesireCreateTime].(*types.AttributeValueMemberS)
			u, _ := st.Value[api.AttrObservedDesireUpdateTime].(*types.AttributeValueMemberS)
			d, err := statusTable.Get(ctx, "inc")
			return c != nil && u != nil && c.Value == created && u.Value == updated && err == nil &&
				condition(d, ConditionSuccessful).Status == "True"
		}, func() string { return fmt.Sprint("last status item: ", last) })
	}
	waitData := func(value string) {
		t.Helper()
		waitFor(t, 30*time.Second, "ConfigMap data v="+value, func() bool {
			cm, err := e.getConfigMap("inc")
			if err != nil {
				return false
			}
			got, _, _ := unstructured.NestedString(cm.Object, "data", "v")
			return got == value
		})
	}

	first := specItem("2026-01-01T10:00:00.100000Z", "2026-01-01T10:00:00.100000+00:00", "1")
	put(first)
	waitData("1")
	waitAnswered("2026-01-01T10:00:00.100000Z", "2026-01-01T10:00:00.100000+00:00")

	// Replaced in place: a new incarnation, created an hour "earlier" by a clock behind.
	put(specItem("2026-01-01T09:00:00.500Z", "2026-01-01T09:00:00.500Z", "2"))
	waitData("2")
	waitAnswered("2026-01-01T09:00:00.500Z", "2026-01-01T09:00:00.500Z")

	// Deleted (the applier removes its status) and put back unchanged.
	if _, err := e.app.opts.DynamoDB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(e.applyS.Name()),
		Key: map[string]types.AttributeValue{api.AttrDocumentID: &types.AttributeValueMemberS{Value: "inc"}}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the status removed with its spec", func() bool {
		_, err := statusTable.Get(ctx, "inc")
		return IsNotFoundError(err)
	})
	put(specItem("2026-01-01T09:00:00.500Z", "2026-01-01T09:00:00.500Z", "2"))
	waitAnswered("2026-01-01T09:00:00.500Z", "2026-01-01T09:00:00.500Z")
	waitData("2")
}
