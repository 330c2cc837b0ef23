package kubeapplier

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// Two ApplyDesires with different documentIDs that target the same object would share one
// field manager and silently undo each other while both say Successful. The informer indexes
// ApplyDesires by their object (group, kind, namespace, name), and the rule is deterministic:
// the desire created first (the spec's createTime; then the smaller documentID) keeps the
// object; every other one is refused with TargetConflict naming it, and the keeper's message
// names the others. A change to any of them looks at the others again.

// targetIndex is the informers' index of ApplyDesires by the object they apply.
const targetIndex = "target"

// targetIndexers indexes ApplyDesires by objectKey, and Apply and Delete desires by their
// object's family (see deleteconflicts.go); ReadDesires are not indexed.
var targetIndexers = cache.Indexers{targetIndex: func(obj any) ([]string, error) {
	if d, ok := obj.(*ApplyDesire); ok {
		if k := d.objectKey(); k != "" {
			return []string{k}, nil
		}
	}
	return nil, nil
}, familyIndex: indexFamily}

// objectKey names the object an ApplyDesire's kubeContent applies: "group/Kind/namespace/name",
// any version. "" when the content does not name one (it is refused anyway).
func (d *ApplyDesire) objectKey() string {
	if d.Invalid != "" || d.Spec.KubeContent == nil {
		return ""
	}
	var obj struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if json.Unmarshal(d.Spec.KubeContent.Raw, &obj) != nil || obj.Kind == "" || obj.Metadata.Name == "" {
		return ""
	}
	gv, err := schema.ParseGroupVersion(obj.APIVersion)
	if err != nil {
		return ""
	}
	return gv.Group + "/" + obj.Kind + "/" + obj.Metadata.Namespace + "/" + obj.Metadata.Name
}

// sameObject returns the other cached ApplyDesires that target d's object.
func sameObject(indexer cache.Indexer, d *ApplyDesire) []*ApplyDesire {
	k := d.objectKey()
	if k == "" {
		return nil
	}
	objs, err := indexer.ByIndex(targetIndex, k)
	if err != nil {
		return nil
	}
	var out []*ApplyDesire
	for _, o := range objs {
		if other, ok := o.(*ApplyDesire); ok && other.DocumentID != d.DocumentID {
			out = append(out, other)
		}
	}
	return out
}

// targetConflict applies the rule to d and its rivals (the desires of this management cluster
// that target the same object): the keeper, and whether d is it.
func targetConflict(d *ApplyDesire, rivals []*ApplyDesire) (keeper *ApplyDesire, others []string) {
	all := append([]*ApplyDesire{d}, rivals...)
	slices.SortFunc(all, func(a, b *ApplyDesire) int {
		if c := a.CreateTime.Compare(b.CreateTime); c != 0 {
			return c
		}
		return strings.Compare(a.DocumentID, b.DocumentID)
	})
	for _, o := range all[1:] {
		others = append(others, o.DocumentID)
	}
	return all[0], others
}

// conflictVerdict is d's verdict when other ApplyDesires target its object, or ok=false.
// A refused desire applies nothing; the keeper's own verdict names the refused ones.
func conflictVerdict(d *ApplyDesire, rivals []*ApplyDesire) (Verdict, bool) {
	if len(rivals) == 0 {
		return Verdict{}, false
	}
	keeper, _ := targetConflict(d, rivals)
	if keeper.DocumentID == d.DocumentID {
		return Verdict{}, false
	}
	return Refused(ReasonTargetConflict, fmt.Sprintf(
		"%s is also the target of ApplyDesire %s (created %s), which keeps it; this desire is not applied until only one desire targets the object",
		objectName(d), keeper.DocumentID, keeper.CreateTime.UTC().Format("2006-01-02T15:04:05.000Z07:00"))), true
}

// keeperNote is the sentence added to the keeper's verdict message.
func keeperNote(d *ApplyDesire, rivals []*ApplyDesire) string {
	if len(rivals) == 0 {
		return ""
	}
	keeper, others := targetConflict(d, rivals)
	if keeper.DocumentID != d.DocumentID {
		return ""
	}
	return fmt.Sprintf("; ApplyDesire %s also target(s) this object and were refused (%s)", strings.Join(others, ", "), ReasonTargetConflict)
}

func objectName(d *ApplyDesire) string {
	parts := strings.SplitN(d.objectKey(), "/", 4)
	if len(parts) != 4 {
		return "the object"
	}
	return parts[1] + " " + objectRef(parts[2], parts[3])
}

// objectConflicts is the controller's view of the rules for ApplyDesires of cluster, over the
// informers' indexes.
type objectConflicts struct {
	indexer cache.Indexer
	cluster string
	// deletes is the DeleteDesire informer's index (nil: no DeleteDesire is a rival); mapper
	// maps an ApplyDesire's kind to the resource DeleteDesires name.
	deletes cache.Indexer
	mapper  meta.ResettableRESTMapper
}

// rivals returns the other ApplyDesires of this management cluster that target d's object and
// would be carried out (decodable).
func (c objectConflicts) rivals(d *ApplyDesire) []*ApplyDesire {
	var out []*ApplyDesire
	for _, o := range sameObject(c.indexer, d) {
		if o.Invalid == "" && o.Spec.ManagementCluster == c.cluster {
			out = append(out, o)
		}
	}
	return out
}

// check returns d's refusal when another desire keeps its object, else the note for the
// keeper's message ("" without rivals).
func (c objectConflicts) check(d Desire) (Verdict, bool, string) {
	ad, ok := d.(*ApplyDesire)
	if !ok {
		return Verdict{}, false, ""
	}
	if dels := deleteRivals(c.deletes, c.mapper, c.cluster, ad); len(dels) > 0 {
		// A DeleteDesire wins while it exists (deleteconflicts.go).
		return deleteConflictVerdict(ad, dels), true, ""
	}
	rivals := c.rivals(ad)
	if v, refused := conflictVerdict(ad, rivals); refused {
		return v, true, ""
	}
	return Verdict{}, false, keeperNote(ad, rivals)
}

// others returns the IDs of the desires that share obj's object, to look at again when obj
// changes or goes.
func (c objectConflicts) others(obj any) []string {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	ad, ok := obj.(*ApplyDesire)
	if !ok {
		return nil
	}
	var ids []string
	for _, o := range sameObject(c.indexer, ad) {
		ids = append(ids, o.DocumentID)
	}
	return ids
}
