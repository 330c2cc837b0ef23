package kubeapplier

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// Condition types written into every desire's status (defined in the api module).
const (
	// ConditionSuccessful is True when the desire is carried out on the cluster.
	ConditionSuccessful = api.ConditionSuccessful
	// ConditionDegraded is True when the applier itself could not do its job.
	ConditionDegraded = api.ConditionDegraded
	// ConditionReady (ApplyDesires) is True when the applied object is Current in kstatus's terms.
	ConditionReady = api.ConditionReady
)

// Condition reasons (defined and documented in the api module).
const (
	ReasonNoErrors           = api.ReasonNoErrors
	ReasonKubeAPIError       = api.ReasonKubeAPIError
	ReasonPreCheckFailed     = api.ReasonPreCheckFailed
	ReasonWaitingForDeletion = api.ReasonWaitingForDeletion
	ReasonContentTooLarge    = api.ReasonContentTooLarge
	ReasonNotFound           = api.ReasonNotFound
	ReasonKindNotServed      = api.ReasonKindNotServed
	ReasonTargetConflict     = api.ReasonTargetConflict
	ReasonDriftConflict      = api.ReasonDriftConflict
	ReasonStaleFieldOwners   = api.ReasonStaleFieldOwners
	ReasonTargetAbsent       = api.ReasonTargetAbsent
	ReasonApplyConflict      = api.ReasonApplyConflict
)

// DynamoDBMetadata is the document metadata every desire carries (api.DynamoDBMetadata: the
// top-level attributes documentID, version, createTime, updateTime, and the item's own
// spelling of the two times, echoed byte for byte).
type DynamoDBMetadata = api.DynamoDBMetadata

// The desire types are the api module's (one definition for the applier and for backends);
// docs/contract.md describes their items.
type (
	// TargetItem names one Kubernetes object by resource (GVR), namespace and name (api.TargetItem).
	TargetItem = api.TargetItem
	// CommonSpec holds the fields every desire spec has (api.CommonSpec).
	CommonSpec = api.CommonSpec
	// ApplyDesire is a document of the `...-applydesires` tables (api.ApplyDesire): a
	// server-side apply (force) of Spec.KubeContent, one object as JSON.
	ApplyDesire = api.ApplyDesire
	// ApplyDesireSpec is an ApplyDesire's spec (api.ApplyDesireSpec).
	ApplyDesireSpec = api.ApplyDesireSpec
	// DeleteDesire is a document of the `...-deletedesires` tables (api.DeleteDesire): the
	// deletion of Spec.TargetItem.
	DeleteDesire = api.DeleteDesire
	// DeleteDesireSpec is a DeleteDesire's spec (api.DeleteDesireSpec).
	DeleteDesireSpec = api.DeleteDesireSpec
	// ReadDesire is a document of the `...-readdesires` tables (api.ReadDesire): the live
	// object of Spec.TargetItem mirrored into Status.KubeContent.
	ReadDesire = api.ReadDesire
	// ReadDesireSpec is a ReadDesire's spec (api.ReadDesireSpec).
	ReadDesireSpec = api.ReadDesireSpec
	// Desire is implemented by *ApplyDesire, *DeleteDesire and *ReadDesire, and by nothing
	// else (api.Desire).
	Desire = api.Desire
)

// GVROf returns t's group, version and resource, for the dynamic client.
func GVROf(t TargetItem) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: t.Group, Version: t.Version, Resource: t.Resource}
}

// DesireKind names a desire type (api.DesireKind); table names use it lower-cased with an
// "s" ("applydesires").
type DesireKind = api.DesireKind

// The three desire kinds.
const (
	KindApplyDesire  = api.KindApplyDesire
	KindDeleteDesire = api.KindDeleteDesire
	KindReadDesire   = api.KindReadDesire
)

// DesireKinds lists every kind, in a stable order.
var DesireKinds = api.DesireKinds

// Condition statuses, as Kubernetes spells them (api.ConditionTrue, ...).
const (
	ConditionTrue    = api.ConditionTrue
	ConditionFalse   = api.ConditionFalse
	ConditionUnknown = api.ConditionUnknown
)
