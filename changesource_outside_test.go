package kubeapplier_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	kubeapplier "github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/dynamofake"
)

// The SDK's client has what IndexPollSource needs.
var _ kubeapplier.IndexQueryAPI = (*dynamodb.Client)(nil)

// TestIndexPollSourceFromOutside: an embedder picks the index poll by Options.ChangeSource;
// specs tables without the index fail the start-up check with ErrIndexNotConfigured (their
// streams are not asked for).
func TestIndexPollSourceFromOutside(t *testing.T) {
	db := dynamofake.New()
	for _, k := range kubeapplier.DesireKinds {
		db.AddTable(api.TableName("", "mc01", api.SpecsTable, k), ddbtypes.StreamViewTypeNewAndOldImages, "shard-0")
		db.AddTable(api.TableName("", "mc01", api.StatusTable, k), "", "")
	}
	var src kubeapplier.ChangeSource = kubeapplier.IndexPollSource{PollPeriod: kubeapplier.DefaultIndexPollPeriod,
		RelistPeriod: kubeapplier.DefaultIndexRelistPeriod}
	dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	a, err := kubeapplier.New(kubeapplier.Options{ManagementCluster: "mc01", DynamoDB: db, Streams: db,
		DynamicClient: dyn, RESTMapper: meta.NewDefaultRESTMapper(nil), Kube: kubeapplier.DynamicKube{Client: dyn},
		ChangeSource: src, StartupFailure: kubeapplier.StartupFailFast})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := a.Run(ctx); !errors.Is(err, kubeapplier.ErrIndexNotConfigured) {
		t.Fatalf("Run = %v, want ErrIndexNotConfigured", err)
	}
	var _ kubeapplier.ChangeSource = kubeapplier.StreamsSource{}
}
