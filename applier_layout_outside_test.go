package kubeapplier_test

import (
	"context"
	"testing"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	kubeapplier "github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/dynamofake"
)

// TestLayoutInformersFromOutside: NewLayoutInformers reads the specs tables of a layout, one
// given by ARN, whose stream CheckStreams finds by DescribeTable of that ARN.
func TestLayoutInformersFromOutside(t *testing.T) {
	const arn = "arn:aws:dynamodb:us-east-1:123456789012:table/mc01-specs-readdesires"
	layout := api.TableLayout{Format: "{cluster}-{table}-{kind}", Tables: map[string]string{"specs-readdesires": arn}}
	db := dynamofake.New()
	for _, k := range kubeapplier.DesireKinds {
		db.AddTable(layout.Name("mc01", api.SpecsTable, k), ddbtypes.StreamViewTypeNewAndOldImages, "shard-0")
	}
	infs := kubeapplier.NewLayoutInformers(db, db, layout, "mc01", kubeapplier.StreamOptions{})
	if err := infs.CheckStreams(context.Background()); err != nil {
		t.Fatal(err)
	}
	for got, want := range map[string]string{infs.ApplyDesires.Table(): "mc01-specs-applydesires",
		infs.DeleteDesires.Table(): "mc01-specs-deletedesires", infs.ReadDesires.Table(): arn} {
		if got != want {
			t.Errorf("informer table %s, want %s", got, want)
		}
	}
}
