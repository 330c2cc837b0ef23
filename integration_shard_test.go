package kubeapplier

import (
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/tables"
	"github.com/kube-applier-aws/kubeapplier/internal/testenv"
)

// An index-poll backend finds our status through the GSI exactly as it queries it: `shard = :s`
// with :s a string (S) "0"-"3", and `updateTime > :since` with :since RFC 3339 seconds.
func TestIntegrationStatusIndex(t *testing.T) {
	env := testenv.DynamoDB(t)
	ctx := t.Context()
	if _, err := api.EnsureTables(ctx, env.Client, env.Prefix, "mc01"); err != nil {
		t.Fatal(err)
	}
	st := tables.NewClient(env.Client, env.Prefix, "mc01").ApplyDesireStatus()
	before := time.Now().UTC().Add(-time.Second)
	id := "7b1fdb4e-decf-5d4c-a307-6718bada47d7" // shard 2
	if _, err := st.Create(ctx, sampleApply(id)); err != nil {
		t.Fatal(err)
	}
	// The index is added to the existing table, and DynamoDB backfills the status.
	if _, err := api.EnsureTables(ctx, env.Client, env.Prefix, "mc01", api.WithStatusIndex()); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(ctx, sampleApply("task-1")); err != nil { // no UUID: shard 0
		t.Fatal(err)
	}
	for shard := range 4 {
		var found []string
		deadline := time.Now().Add(10 * time.Second)
		for {
			out, err := env.Client.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(api.TableName(env.Prefix, "mc01", api.StatusTable, KindApplyDesire)),
				IndexName:                aws.String(api.StatusIndexName),
				KeyConditionExpression:   aws.String("#s = :s AND #u > :t"),
				ExpressionAttributeNames: map[string]string{"#s": "shard", "#u": "updateTime"},
				ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: strconv.Itoa(shard)},
					":t": &types.AttributeValueMemberS{Value: before.Truncate(time.Second).Format(time.RFC3339)}}})
			if err != nil {
				t.Fatal(err)
			}
			found = found[:0]
			for _, item := range out.Items {
				found = append(found, api.IDOf(item))
			}
			if (shard != 2 && shard != 0) || len(found) > 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond) // the backfill is asynchronous on real DynamoDB
		}
		want := map[int]string{2: id, 0: "task-1"}[shard]
		if (want == "" && len(found) != 0) || (want != "" && (len(found) != 1 || found[0] != want)) {
			t.Fatalf("shard %d holds %v, want %q (%s in shard 2, task-1 in shard 0)", shard, found, want, id)
		}
	}
	// The api module's backend client reads the index the same way.
	got, err := api.NewClient(env.Client, env.Prefix, "mc01").ApplyDesires().StatusesSince(ctx, before)
	shards := map[string]string{}
	for _, d := range got {
		shards[d.DocumentID] = d.Shard
	}
	if err != nil || len(got) != 2 || shards[id] != "2" || shards["task-1"] != "0" {
		t.Fatalf("StatusesSince = %v, %v; want %s in shard \"2\" and task-1 in shard \"0\"", shards, err, id)
	}
}
