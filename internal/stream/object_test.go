package stream

import (
	"testing"

	"github.com/kube-applier-aws/kubeapplier/api"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestObjectMetaKeysByDocumentID: client-go caches key desires by documentID (the name), and
// the informer's object gives its desire back.
func TestObjectMetaKeysByDocumentID(t *testing.T) {
	for _, d := range []api.Desire{&api.ApplyDesire{DynamoDBMetadata: api.DynamoDBMetadata{DocumentID: "a", Version: 3}}, &api.DeleteDesire{DynamoDBMetadata: api.DynamoDBMetadata{DocumentID: "d"}}, &api.ReadDesire{DynamoDBMetadata: api.DynamoDBMetadata{DocumentID: "r"}}} {
		o := &desireObject{d}
		m := o.GetObjectMeta()
		if back, ok := DesireOf(o); !ok || back != d {
			t.Errorf("%T: desireFrom does not give the desire back", d)
		}
		if m.GetName() != d.Meta().DocumentID || m.GetGeneration() != d.Meta().Version || o.GetObjectKind().GroupVersionKind() != (schema.GroupVersionKind{}) {
			t.Errorf("%T: meta %s/%d", d, m.GetName(), m.GetGeneration())
		}
	}
}
