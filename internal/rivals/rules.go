package rivals

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/stream"
)

// ConfirmRetry is how soon a desire whose rival could not be confirmed (a read failed, or the
// keeper kept changing under the reads) is looked at again; nothing is written meanwhile.
const ConfirmRetry = 2 * time.Second

// SpecGetter reads one spec consistently: api.ErrNotFound when it is gone, api.ErrInvalidItem
// when it does not decode (either way it is no rival).
type SpecGetter[T api.Desire] interface {
	Get(ctx context.Context, id string) (T, error)
}

// Rules are the rival rules for the ApplyDesires of one management cluster.
type Rules struct {
	// Applies and Deletes are the Apply and Delete desire informers' indexers, indexed by
	// Indexers. Deletes nil: no DeleteDesire is a rival.
	Applies, Deletes cache.Indexer
	// Cluster is the management cluster: desires of others are no rivals.
	Cluster string
	// Resource maps an ApplyDesire's kind to the resource DeleteDesires name. Nil, or any
	// error (a kind the cluster does not serve, or discovery failing for now): every
	// DeleteDesire of the object's family is taken for a rival, since the object may be
	// theirs; a deletion wins over an apply it might fight.
	Resource func(schema.GroupVersionKind) (string, error)
	// ApplySpecs and DeleteSpecs confirm a rival before a desire is refused for it. Nil: the
	// cache is taken as it is.
	ApplySpecs  SpecGetter[*api.ApplyDesire]
	DeleteSpecs SpecGetter[*api.DeleteDesire]
	// SelfRefused reports whether the applier refused this spec of an ApplyDesire (its
	// documentID, version and createTime) for itself: its reconciler's last verdict on it was
	// PreCheckFailed, which only a spec change heals. Such a desire applies nothing, so it is
	// no rival of the others of its object (docs/design.md "Two desires, one object"). Nil:
	// none is.
	SelfRefused func(*api.ApplyDesire) bool
}

// Outcome is what the rules decide for one ApplyDesire. At most one of Unconfirmed, Deletes
// and Keeper is set; with none, the desire is carried out.
type Outcome struct {
	// Unconfirmed: a confirming read failed, or the keeper kept changing under the reads.
	// Nothing is decided: look again after ConfirmRetry.
	Unconfirmed bool
	// Deletes are the DeleteDesires, confirmed, that target the desire's object, by
	// documentID: they win while they exist, and the desire applies nothing.
	Deletes []*api.DeleteDesire
	// FoldedDeletes are the ApplyDesires of type Delete, confirmed, that target the desire's
	// object, by documentID: they win as Deletes do.
	FoldedDeletes []*api.ApplyDesire
	// Keeper is the ApplyDesire, confirmed, that keeps the object: the desire applies nothing.
	Keeper *api.ApplyDesire
	// Refused are the documentIDs of the rivals the desire keeps the object against, in the
	// rule's order (created after it, or at the same time with a larger documentID); nil
	// without rivals.
	Refused []string
	// RefusedDesires are those rivals as cached, in Refused's order (their owners name them
	// in the keeper's message).
	RefusedDesires []*api.ApplyDesire
}

// Check applies the rules to ad: a DeleteDesire (or folded Delete) of its object first, then
// the other ApplyDesires of its object. A desire that never writes (applyPolicy ReadOnly) has
// no rivals: it is carried out whatever else targets its object; nor has a folded Delete,
// which, as a DeleteDesire, is never refused for a rival.
func (r Rules) Check(ctx context.Context, ad *api.ApplyDesire) Outcome {
	if !writes(ad) || ad.Spec.IsDelete() {
		return Outcome{}
	}
	s := subjectOf(ad)
	if dels, folded := r.deleteRivals(s), r.foldedRivals(s); len(dels)+len(folded) > 0 {
		dels, err := r.confirmDeletes(ctx, s, dels)
		if err != nil {
			return Outcome{Unconfirmed: true}
		}
		folded, err := r.confirmFolded(ctx, s, folded)
		if err != nil {
			return Outcome{Unconfirmed: true}
		}
		if len(dels)+len(folded) > 0 {
			return Outcome{Deletes: dels, FoldedDeletes: folded}
		}
	}
	rivals := r.applyRivals(s)
	for range len(rivals) + 2 {
		if len(rivals) == 0 {
			return Outcome{}
		}
		keeper, others := keeperOf(ad, rivals)
		if keeper.DocumentID == ad.DocumentID {
			return Outcome{Refused: ids(others), RefusedDesires: others}
		}
		// Refused for the keeper: only once its spec is confirmed to keep the object.
		cur, err := r.confirmApply(ctx, s, keeper)
		switch {
		case err != nil:
			return Outcome{Unconfirmed: true}
		case cur == keeper:
			return Outcome{Keeper: keeper}
		case cur == nil: // gone, retargeted or undecodable since the cache saw it
			rivals = slices.DeleteFunc(rivals, func(r *api.ApplyDesire) bool { return r == keeper })
		default: // another incarnation since: the rule again with it
			rivals = slices.DeleteFunc(rivals, func(r *api.ApplyDesire) bool { return r == keeper })
			rivals = append(rivals, cur)
		}
	}
	return Outcome{Unconfirmed: true}
}

// subject is the ApplyDesire the rules judge, with its content's object key and family parsed
// once: the parse reads the whole kubeContent, and a check needs them several times.
type subject struct {
	ad          *api.ApplyDesire
	key, family string
}

func subjectOf(ad *api.ApplyDesire) subject {
	k := ObjectKey(ad)
	return subject{ad: ad, key: k, family: familyOf(k)}
}

// sameObject returns the other cached ApplyDesires that target s's object, of any management
// cluster (an undecodable desire names no object and is not in the index).
func (r Rules) sameObject(s subject) []*api.ApplyDesire {
	if s.key == "" {
		return nil
	}
	var out []*api.ApplyDesire
	for _, o := range ofFamily[*api.ApplyDesire](r.Applies, s.family) {
		if o.DocumentID != s.ad.DocumentID && ObjectKey(o) == s.key {
			out = append(out, o)
		}
	}
	return out
}

// applyRivals returns the other ApplyDesires of this management cluster that target s's
// object, would be carried out (decodable, not refused for themselves) and write it (not
// ReadOnly).
func (r Rules) applyRivals(s subject) []*api.ApplyDesire {
	var out []*api.ApplyDesire
	for _, o := range r.sameObject(s) {
		if carriedOut(o) && !r.selfRefused(o) && writes(o) && o.Spec.ManagementCluster == r.Cluster {
			out = append(out, o)
		}
	}
	return out
}

func (r Rules) selfRefused(d *api.ApplyDesire) bool {
	return r.SelfRefused != nil && r.SelfRefused(d)
}

// keeperOf is the rule over ad and its rivals: the one created first (then the smaller
// documentID) keeps the object; others are the rest, in that order.
func keeperOf(ad *api.ApplyDesire, rivals []*api.ApplyDesire) (keeper *api.ApplyDesire, others []*api.ApplyDesire) {
	all := append([]*api.ApplyDesire{ad}, rivals...)
	slices.SortFunc(all, func(a, b *api.ApplyDesire) int {
		if c := a.CreateTime.Compare(b.CreateTime); c != 0 {
			return c
		}
		return strings.Compare(a.DocumentID, b.DocumentID)
	})
	return all[0], all[1:]
}

// ids returns the documentIDs of ds, in order.
func ids(ds []*api.ApplyDesire) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.DocumentID
	}
	return out
}

// deleteRivals returns the cached DeleteDesires of this management cluster that target s's
// object, by documentID.
func (r Rules) deleteRivals(s subject) []*api.DeleteDesire {
	var out []*api.DeleteDesire
	for _, dd := range ofFamily[*api.DeleteDesire](r.Deletes, s.family) {
		if r.isDeleteRival(s, dd) {
			out = append(out, dd)
		}
	}
	slices.SortFunc(out, func(a, b *api.DeleteDesire) int { return strings.Compare(a.DocumentID, b.DocumentID) })
	return out
}

// isDeleteRival reports whether dd, a DeleteDesire of this management cluster, targets s's
// object: the same family and, when ad's kind maps to a resource, that resource (any version;
// a non-canonical spelling is refused by its own reconciler and deletes nothing, so it does
// not win).
func (r Rules) isDeleteRival(s subject, dd *api.DeleteDesire) bool {
	if !carriedOut(dd) || dd.Spec.ManagementCluster != r.Cluster || deleteFamily(dd) != s.family {
		return false
	}
	ad := s.ad
	var obj struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if r.Resource == nil || ad.Spec.KubeContent == nil || json.Unmarshal(ad.Spec.KubeContent, &obj) != nil {
		return true
	}
	gv, err := schema.ParseGroupVersion(obj.APIVersion)
	if err != nil {
		return true
	}
	res, err := r.Resource(gv.WithKind(obj.Kind))
	return err != nil || dd.Spec.TargetItem.Resource == res
}

// foldedRivals returns the cached folded Deletes of this management cluster that target s's
// object, by documentID.
func (r Rules) foldedRivals(s subject) []*api.ApplyDesire {
	var out []*api.ApplyDesire
	for _, o := range ofFamily[*api.ApplyDesire](r.Applies, s.family) {
		if dd, ok := FoldedDelete(o); ok && o.DocumentID != s.ad.DocumentID && r.isDeleteRival(s, dd) {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b *api.ApplyDesire) int { return strings.Compare(a.DocumentID, b.DocumentID) })
	return out
}

// confirmFolded returns the folded Deletes of folded whose spec, read consistently, is still
// a folded Delete of s's object; an error when a read failed.
func (r Rules) confirmFolded(ctx context.Context, s subject, folded []*api.ApplyDesire) ([]*api.ApplyDesire, error) {
	if r.ApplySpecs == nil {
		return folded, nil
	}
	var out []*api.ApplyDesire
	for _, o := range folded {
		cur, err := r.ApplySpecs.Get(ctx, o.DocumentID)
		switch {
		case gone(err):
			continue
		case err != nil:
			return nil, err
		}
		if dd, ok := FoldedDelete(cur); ok && r.isDeleteRival(s, dd) {
			out = append(out, cur)
		}
	}
	return out, nil
}

// gone reports whether a confirming read's error says the spec is no rival: deleted, or
// undecodable.
func gone(err error) bool {
	return errors.Is(err, api.ErrNotFound) || errors.Is(err, api.ErrInvalidItem)
}

// confirmDeletes returns the DeleteDesires of dels whose spec, read consistently, still
// exists and still targets s's object; an error when a read failed.
func (r Rules) confirmDeletes(ctx context.Context, s subject, dels []*api.DeleteDesire) ([]*api.DeleteDesire, error) {
	if r.DeleteSpecs == nil {
		return dels, nil
	}
	var out []*api.DeleteDesire
	for _, dd := range dels {
		cur, err := r.DeleteSpecs.Get(ctx, dd.DocumentID)
		switch {
		case gone(err):
			continue
		case err != nil:
			return nil, err
		}
		if r.isDeleteRival(s, cur) {
			out = append(out, cur)
		}
	}
	return out, nil
}

// confirmApply reads keeper's spec consistently: keeper itself when it still targets s's
// object as the cache says, the spec as stored when it does so as another incarnation (its
// createTime, which orders keepers, differs), nil when it is gone, retargeted, undecodable,
// refused for itself or no longer writes (ReadOnly).
func (r Rules) confirmApply(ctx context.Context, s subject, keeper *api.ApplyDesire) (*api.ApplyDesire, error) {
	if r.ApplySpecs == nil {
		return keeper, nil
	}
	cur, err := r.ApplySpecs.Get(ctx, keeper.DocumentID)
	switch {
	case gone(err):
		return nil, nil
	case err != nil:
		return nil, err
	case !carriedOut(cur) || r.selfRefused(cur) || !writes(cur) || cur.Spec.ManagementCluster != r.Cluster || ObjectKey(cur) != s.key:
		return nil, nil
	case cur.CreateTime.Equal(keeper.CreateTime):
		return keeper, nil
	}
	return cur, nil
}

// Others returns the documentIDs of the cached ApplyDesires that share obj's object (obj: an
// ApplyDesire informer's object or tombstone), to look at again when obj changes or goes; for
// a folded Delete, every other ApplyDesire of its object's family (as DeleteHandler does for
// a DeleteDesire).
func (r Rules) Others(obj any) []string {
	ad, ok := stream.As[*api.ApplyDesire](obj)
	if !ok {
		return nil
	}
	var ids []string
	if dd, ok := FoldedDelete(ad); ok {
		for _, o := range ofFamily[*api.ApplyDesire](r.Applies, deleteFamily(dd)) {
			if o.DocumentID != ad.DocumentID {
				ids = append(ids, o.DocumentID)
			}
		}
		return ids
	}
	for _, o := range r.sameObject(subjectOf(ad)) {
		ids = append(ids, o.DocumentID)
	}
	return ids
}
