package kubeapplier

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// TestGoldenItemsApplierCodec holds the applier's status writes to the layout of the api
// module's golden items (api/testdata/golden, DynamoDB JSON): each status item decodes and,
// written as a status write writes it (EncodeItem, then applierTerm and shard), comes back
// byte for byte; each spec item decodes with every attribute kept. A renamed or retyped
// attribute, or a status write's own attribute, fails here or in api's TestGoldenItems.
func TestGoldenItemsApplierCodec(t *testing.T) {
	files, err := filepath.Glob("api/testdata/golden/*.json")
	if err != nil || len(files) < 6 {
		t.Fatalf("golden files %v, %v", files, err)
	}
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			item, err := api.ItemFromJSON(raw)
			if err != nil {
				t.Fatal(err)
			}
			var d Desire
			switch {
			case strings.Contains(name, "applydesire"):
				d = &ApplyDesire{}
			case strings.Contains(name, "deletedesire"):
				d = &DeleteDesire{}
			default:
				d = &ReadDesire{}
			}
			if err := DecodeItem(item, d); err != nil {
				t.Fatal(err)
			}
			// A status document is built without the stored applierTerm and shard; the
			// fenced write adds them below, as Table.put does.
			switch x := d.(type) {
			case *ApplyDesire:
				x.StatusFields = api.StatusFields{}
			case *DeleteDesire:
				x.StatusFields = api.StatusFields{}
			case *ReadDesire:
				x.StatusFields = api.StatusFields{}
			}
			got, err := EncodeItem(d)
			if err != nil {
				t.Fatal(err)
			}
			if term, ok := item[attrApplierTerm]; ok {
				got[attrApplierTerm] = term // the fenced status write adds it (see Table.put)
				withShard(got)
			}
			for k := range got {
				if _, ok := item[k]; !ok && strings.Contains(name, "-spec") {
					delete(got, k) // a spec written by another tool may lack defaults (status)
				}
			}
			if k, ok := item["status"].(*types.AttributeValueMemberM); ok && strings.Contains(name, "-spec") {
				if g, ok := got["status"].(*types.AttributeValueMemberM); ok {
					for a := range g.Value {
						if _, ok := k.Value[a]; !ok {
							delete(g.Value, a)
						}
					}
				}
			}
			gj, _ := api.ItemToJSON(got)
			wj, _ := api.ItemToJSON(item)
			if !bytes.Equal(gj, wj) {
				t.Fatalf("the applier's codec writes\n%s\nwant\n%s", gj, wj)
			}
		})
	}
}
