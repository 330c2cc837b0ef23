package kubeapplier

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
)

// DynamoDBMetadata is the document metadata every desire carries (api.DynamoDBMetadata: the
// top-level attributes documentID, version, createTime, updateTime, and the item's own
// spelling of the two times, echoed byte for byte).
type DynamoDBMetadata = api.DynamoDBMetadata

// TargetItem names one Kubernetes object by resource (GVR), namespace and name.
// Group is "" for the core group; Namespace is "" for cluster-scoped objects. It has the
// fields and layout of api.TargetItem (convert with api.TargetItem(t)); it stays a type of its
// own here for its GVR method, which needs apimachinery.
type TargetItem struct {
	Group     string `json:"group" dynamodbav:"group"`
	Version   string `json:"version" dynamodbav:"version"`
	Resource  string `json:"resource" dynamodbav:"resource"`
	Namespace string `json:"namespace,omitempty" dynamodbav:"namespace"`
	Name      string `json:"name" dynamodbav:"name"`
}

// GVR returns the target's group, version and resource.
func (t TargetItem) GVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: t.Group, Version: t.Version, Resource: t.Resource}
}

// String returns "resource.group/version namespace/name" for messages.
func (t TargetItem) String() string {
	r := t.Resource
	if t.Group != "" {
		r += "." + t.Group
	}
	if t.Namespace == "" {
		return r + "/" + t.Version + " " + t.Name
	}
	return r + "/" + t.Version + " " + t.Namespace + "/" + t.Name
}

// CommonSpec holds the fields every desire spec has (api.CommonSpec: managementCluster and
// clusterID).
type CommonSpec = api.CommonSpec

// CommonStatus holds the fields every desire status has.
type CommonStatus struct {
	// Conditions are Successful and Degraded; each ObservedGeneration is the spec document's
	// Version the condition was computed from. Stored as a DynamoDB list of maps.
	Conditions []metav1.Condition `json:"conditions,omitempty" dynamodbav:"-"`
	// ObservedDesireUpdateTime is the spec document's UpdateTime this status answers.
	ObservedDesireUpdateTime *time.Time `json:"observedDesireUpdateTime,omitempty" dynamodbav:"observedDesireUpdateTime,omitempty"`
	// ObservedDesireCreateTime is the spec document's CreateTime this status answers: it tells
	// incarnations of one documentID apart (a spec deleted and put again restarts at version 1,
	// and its updateTime may be earlier than the old one's when backend clocks skew).
	ObservedDesireCreateTime *time.Time `json:"observedDesireCreateTime,omitempty" dynamodbav:"observedDesireCreateTime,omitempty"`
	// observedUpdateTimeText and observedCreateTimeText are the spec item's own strings for
	// the two times above (see spelling.go); "" when the codec's spelling is the spec's.
	observedUpdateTimeText, observedCreateTimeText string
}

// ApplyDesireSpec asks for a server-side apply (force) of KubeContent.
type ApplyDesireSpec struct {
	CommonSpec `json:",inline"`
	// KubeContent is one Kubernetes object. Stored as compact JSON in the top-level attribute
	// `spec_kubeContent`, not inside `spec`.
	KubeContent *runtime.RawExtension `json:"kubeContent,omitempty" dynamodbav:"-"`
}

// ApplyDesireStatus reports the outcome of an ApplyDesire.
type ApplyDesireStatus struct {
	CommonStatus `json:",inline"`
	// AppliedResourceGeneration is metadata.generation of the object after the last apply.
	AppliedResourceGeneration int64 `json:"appliedResourceGeneration,omitempty" dynamodbav:"appliedResourceGeneration"`
	// AppliedUID and AppliedResourceVersion are metadata.uid and metadata.resourceVersion of
	// the object after the last apply: a new leader that finds the object still so (and no
	// other manager's change since) verifies it instead of applying it again.
	AppliedUID             string `json:"appliedUID,omitempty" dynamodbav:"appliedUID,omitempty"`
	AppliedResourceVersion string `json:"appliedResourceVersion,omitempty" dynamodbav:"appliedResourceVersion,omitempty"`
	// AppliedFieldsDigest is an order-independent hash (hex) of the field set our Apply entry
	// in managedFields held after the last apply: a field removed or taken since changes it,
	// even when no other entry and no generation moved.
	AppliedFieldsDigest string `json:"appliedFieldsDigest,omitempty" dynamodbav:"appliedFieldsDigest,omitempty"`
}

// ApplyDesire is a document of the `...-applydesires` tables.
type ApplyDesire struct {
	DynamoDBMetadata `json:",inline"`
	Spec             ApplyDesireSpec   `json:"spec" dynamodbav:"spec"`
	Status           ApplyDesireStatus `json:"status" dynamodbav:"status"`
}

// DeleteDesireSpec asks for the deletion of TargetItem.
type DeleteDesireSpec struct {
	CommonSpec `json:",inline"`
	TargetItem TargetItem `json:"targetItem" dynamodbav:"targetItem"`
}

// DeleteDesireStatus reports the outcome of a DeleteDesire.
type DeleteDesireStatus struct {
	CommonStatus `json:",inline"`
}

// DeleteDesire is a document of the `...-deletedesires` tables.
type DeleteDesire struct {
	DynamoDBMetadata `json:",inline"`
	Spec             DeleteDesireSpec   `json:"spec" dynamodbav:"spec"`
	Status           DeleteDesireStatus `json:"status" dynamodbav:"status"`
}

// ReadDesireSpec asks for TargetItem to be mirrored into the status.
type ReadDesireSpec struct {
	CommonSpec `json:",inline"`
	TargetItem TargetItem `json:"targetItem" dynamodbav:"targetItem"`
}

// ReadDesireStatus carries the live object.
type ReadDesireStatus struct {
	CommonStatus `json:",inline"`
	// KubeContent is the live object (managedFields stripped, Secret data redacted), or nil when
	// it does not exist. Stored as compact JSON in the top-level attribute `status_kubeContent`.
	KubeContent *runtime.RawExtension `json:"kubeContent,omitempty" dynamodbav:"-"`
}

// ReadDesire is a document of the `...-readdesires` tables.
type ReadDesire struct {
	DynamoDBMetadata `json:",inline"`
	Spec             ReadDesireSpec   `json:"spec" dynamodbav:"spec"`
	Status           ReadDesireStatus `json:"status" dynamodbav:"status"`
}

// Desire is implemented by *ApplyDesire, *DeleteDesire and *ReadDesire, and by nothing else.
// It is a runtime.Object so client-go informers can cache desires; the informer key is the
// DocumentID.
type Desire interface {
	runtime.Object
	metav1.ObjectMetaAccessor
	// Meta returns the document metadata for reading and writing.
	Meta() *DynamoDBMetadata
	// Common returns the spec fields every desire has.
	Common() *CommonSpec
	// StatusCommon returns the status fields every desire has.
	StatusCommon() *CommonStatus
	// Kind returns the desire kind: "ApplyDesire", "DeleteDesire" or "ReadDesire".
	Kind() DesireKind
	// resetStatus clears the status: a spec document's own status is no verdict of ours.
	resetStatus()
	// content returns the attribute name and field of the object stored as JSON outside the
	// codec, or "" and nil.
	content() (attr string, raw **runtime.RawExtension)
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

func (d *ApplyDesire) Meta() *DynamoDBMetadata      { return &d.DynamoDBMetadata }
func (d *DeleteDesire) Meta() *DynamoDBMetadata     { return &d.DynamoDBMetadata }
func (d *ReadDesire) Meta() *DynamoDBMetadata       { return &d.DynamoDBMetadata }
func (d *ApplyDesire) Common() *CommonSpec          { return &d.Spec.CommonSpec }
func (d *DeleteDesire) Common() *CommonSpec         { return &d.Spec.CommonSpec }
func (d *ReadDesire) Common() *CommonSpec           { return &d.Spec.CommonSpec }
func (d *ApplyDesire) StatusCommon() *CommonStatus  { return &d.Status.CommonStatus }
func (d *DeleteDesire) StatusCommon() *CommonStatus { return &d.Status.CommonStatus }
func (d *ReadDesire) StatusCommon() *CommonStatus   { return &d.Status.CommonStatus }
func (d *ApplyDesire) Kind() DesireKind             { return KindApplyDesire }
func (d *DeleteDesire) Kind() DesireKind            { return KindDeleteDesire }
func (d *ReadDesire) Kind() DesireKind              { return KindReadDesire }

func (d *ApplyDesire) content() (string, **runtime.RawExtension) {
	return attrSpecKubeContent, &d.Spec.KubeContent
}
func (d *DeleteDesire) content() (string, **runtime.RawExtension) { return "", nil }
func (d *ReadDesire) content() (string, **runtime.RawExtension) {
	return attrStatusKubeContent, &d.Status.KubeContent
}

func (d *ApplyDesire) resetStatus()  { d.Status = ApplyDesireStatus{} }
func (d *DeleteDesire) resetStatus() { d.Status = DeleteDesireStatus{} }
func (d *ReadDesire) resetStatus()   { d.Status = ReadDesireStatus{} }

// GetObjectKind implements runtime.Object; desires carry no GVK.
func (d *ApplyDesire) GetObjectKind() schema.ObjectKind  { return schema.EmptyObjectKind }
func (d *DeleteDesire) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (d *ReadDesire) GetObjectKind() schema.ObjectKind   { return schema.EmptyObjectKind }

// GetObjectMeta exposes DocumentID as the name so client-go caches key desires by ID. The
// returned value is a copy: setting fields on it changes nothing.
func (d *ApplyDesire) GetObjectMeta() metav1.Object  { return objectMeta(&d.DynamoDBMetadata) }
func (d *DeleteDesire) GetObjectMeta() metav1.Object { return objectMeta(&d.DynamoDBMetadata) }
func (d *ReadDesire) GetObjectMeta() metav1.Object   { return objectMeta(&d.DynamoDBMetadata) }

func objectMeta(m *DynamoDBMetadata) metav1.Object {
	return &metav1.ObjectMeta{Name: m.DocumentID,
		Generation: m.Version, CreationTimestamp: metav1.NewTime(m.CreateTime)}
}

// DeepCopyObject implements runtime.Object.
func (d *ApplyDesire) DeepCopyObject() runtime.Object { return d.DeepCopy() }

// DeepCopyObject implements runtime.Object.
func (d *DeleteDesire) DeepCopyObject() runtime.Object { return d.DeepCopy() }

// DeepCopyObject implements runtime.Object.
func (d *ReadDesire) DeepCopyObject() runtime.Object { return d.DeepCopy() }

// DeepCopy returns a copy that shares no memory with d.
func (d *ApplyDesire) DeepCopy() *ApplyDesire {
	if d == nil {
		return nil
	}
	out := *d
	out.Status.CommonStatus = d.Status.CommonStatus.deepCopy()
	out.Spec.KubeContent = copyRaw(d.Spec.KubeContent)
	return &out
}

// DeepCopy returns a copy that shares no memory with d.
func (d *DeleteDesire) DeepCopy() *DeleteDesire {
	if d == nil {
		return nil
	}
	out := *d
	out.Status.CommonStatus = d.Status.CommonStatus.deepCopy()
	return &out
}

// DeepCopy returns a copy that shares no memory with d.
func (d *ReadDesire) DeepCopy() *ReadDesire {
	if d == nil {
		return nil
	}
	out := *d
	out.Status.CommonStatus = d.Status.CommonStatus.deepCopy()
	out.Status.KubeContent = copyRaw(d.Status.KubeContent)
	return &out
}

func (s CommonStatus) deepCopy() CommonStatus {
	out := s
	if s.Conditions != nil {
		out.Conditions = make([]metav1.Condition, len(s.Conditions))
		for i := range s.Conditions {
			s.Conditions[i].DeepCopyInto(&out.Conditions[i])
		}
	}
	if s.ObservedDesireUpdateTime != nil {
		t := *s.ObservedDesireUpdateTime
		out.ObservedDesireUpdateTime = &t
	}
	if s.ObservedDesireCreateTime != nil {
		t := *s.ObservedDesireCreateTime
		out.ObservedDesireCreateTime = &t
	}
	return out
}

func copyRaw(r *runtime.RawExtension) *runtime.RawExtension {
	if r == nil {
		return nil
	}
	return r.DeepCopy()
}

// ObservedSpecVersion returns the highest spec Version any condition was computed from, 0 when
// there is none.
func (s *CommonStatus) ObservedSpecVersion() int64 {
	var v int64
	for _, c := range s.Conditions {
		v = max(v, c.ObservedGeneration)
	}
	return v
}
