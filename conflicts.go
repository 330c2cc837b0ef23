package kubeapplier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

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

// applyObjectKey names the object an ApplyDesire's kubeContent applies: "group/Kind/namespace/name",
// any version. "" when the content does not name one (it is refused anyway).
func applyObjectKey(d *ApplyDesire) string {
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
	if json.Unmarshal(d.Spec.KubeContent, &obj) != nil || obj.Kind == "" || obj.Metadata.Name == "" {
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
	k, fam := applyObjectKey(d), applyFamily(d)
	if k == "" || fam == "" {
		return nil
	}
	objs, err := indexer.ByIndex(familyIndex, fam)
	if err != nil {
		return nil
	}
	var out []*ApplyDesire
	for _, o := range objs {
		if other, ok := desireOf[*ApplyDesire](o); ok && other.DocumentID != d.DocumentID && applyObjectKey(other) == k {
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
	parts := strings.SplitN(applyObjectKey(d), "/", 4)
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
	// applySpecs and deleteSpecs confirm a rival with a consistent read before the desire is
	// refused for it: the informers' caches lag (a rival removed a moment ago, on another
	// table's stream, is still cached). Nil: the cache is taken as it is (tests).
	applySpecs  SpecReader[*ApplyDesire]
	deleteSpecs SpecReader[*DeleteDesire]
}

// confirmRetry is how soon a refusal that could not be confirmed (the read failed) is tried
// again; nothing is written meanwhile.
const confirmRetry = 2 * time.Second

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
func (c objectConflicts) check(ctx context.Context, ad *ApplyDesire) (Verdict, bool, string) {
	if dels := deleteRivals(c.deletes, c.mapper, c.cluster, ad); len(dels) > 0 {
		// A DeleteDesire wins while it exists (deleteconflicts.go): confirmed in its table.
		dels, err := c.confirmDeletes(ctx, ad, dels)
		if err != nil {
			return Pending(confirmRetry), true, ""
		}
		if len(dels) > 0 {
			return deleteConflictVerdict(ad, dels), true, ""
		}
	}
	rivals := c.rivals(ad)
	for range len(rivals) + 2 {
		v, refused := conflictVerdict(ad, rivals)
		if !refused {
			return Verdict{}, false, keeperNote(ad, rivals)
		}
		// Refused for the keeper: only once its spec is confirmed to keep the object.
		keeper, _ := targetConflict(ad, rivals)
		cur, err := c.confirmApply(ctx, ad, keeper)
		switch {
		case err != nil:
			return Pending(confirmRetry), true, ""
		case cur == keeper:
			return v, true, ""
		case cur == nil: // gone, retargeted or undecodable since the cache saw it
			rivals = slices.DeleteFunc(rivals, func(r *ApplyDesire) bool { return r == keeper })
		default: // another incarnation since: the rule again with it
			rivals = slices.DeleteFunc(rivals, func(r *ApplyDesire) bool { return r == keeper })
			rivals = append(rivals, cur)
		}
	}
	return Pending(confirmRetry), true, "" // the keeper kept changing under the reads
}

// confirmDeletes returns the DeleteDesires of dels whose spec, read consistently, still
// exists and still targets ad's object; an error when a read failed.
func (c objectConflicts) confirmDeletes(ctx context.Context, ad *ApplyDesire, dels []*DeleteDesire) ([]*DeleteDesire, error) {
	if c.deleteSpecs == nil {
		return dels, nil
	}
	var out []*DeleteDesire
	for _, dd := range dels {
		cur, err := c.deleteSpecs.Get(ctx, dd.DocumentID)
		switch {
		case IsNotFoundError(err) || errors.Is(err, ErrInvalidItem):
			continue // gone (or undecodable: no rival) since the cache saw it
		case err != nil:
			return nil, err
		}
		if isDeleteRival(c.mapper, c.cluster, ad, cur) {
			out = append(out, cur)
		}
	}
	return out, nil
}

// confirmApply reads keeper's spec consistently: keeper itself when it still targets ad's
// object as the cache says, the spec as stored when it does so as another incarnation (its
// createTime, which orders keepers, differs), nil when it is gone, retargeted or undecodable.
func (c objectConflicts) confirmApply(ctx context.Context, ad, keeper *ApplyDesire) (*ApplyDesire, error) {
	if c.applySpecs == nil {
		return keeper, nil
	}
	cur, err := c.applySpecs.Get(ctx, keeper.DocumentID)
	switch {
	case IsNotFoundError(err) || errors.Is(err, ErrInvalidItem):
		return nil, nil
	case err != nil:
		return nil, err
	case cur.Invalid != "" || cur.Spec.ManagementCluster != c.cluster || applyObjectKey(cur) != applyObjectKey(ad):
		return nil, nil
	case cur.CreateTime.Equal(keeper.CreateTime):
		return keeper, nil
	}
	return cur, nil
}

// scrubOnly is the ApplyDesire rules of a controller built without rivals (a test harness):
// no rival, but every verdict scrubbed of its Secret values.
type scrubOnly struct{}

func (scrubOnly) check(context.Context, *ApplyDesire) (Verdict, bool, string) {
	return Verdict{}, false, ""
}
func (scrubOnly) others(any) []string                      { return nil }
func (scrubOnly) scrub(ad *ApplyDesire, v Verdict) Verdict { return scrubVerdict(ad, v) }

// scrub is scrubVerdict: no Secret value of ad's content in v.
func (objectConflicts) scrub(ad *ApplyDesire, v Verdict) Verdict { return scrubVerdict(ad, v) }

// others returns the IDs of the desires that share obj's object, to look at again when obj
// changes or goes.
func (c objectConflicts) others(obj any) []string {
	ad, ok := desireOf[*ApplyDesire](obj)
	if !ok {
		return nil
	}
	var ids []string
	for _, o := range sameObject(c.indexer, ad) {
		ids = append(ids, o.DocumentID)
	}
	return ids
}
