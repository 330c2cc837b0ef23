package api

import (
	"encoding/json"
	"reflect"
	"slices"
	"time"
)

// DynamoDBMetadata is the document metadata every desire carries. Its attributes sit at the
// top level of the DynamoDB item.
type DynamoDBMetadata struct {
	// DocumentID is the partition key `documentID`: a UUID, see DesireID.
	DocumentID string `json:"documentID" dynamodbav:"documentID"`
	// Version is the optimistic-concurrency counter: 1 on Create, +1 on every successful Replace.
	Version int64 `json:"version" dynamodbav:"version"`
	// CreateTime is set on Create only (UTC, RFC 3339 with nanoseconds).
	CreateTime time.Time `json:"createTime" dynamodbav:"createTime"`
	// UpdateTime is set on Create and on every Replace (UTC, RFC 3339 with nanoseconds).
	UpdateTime time.Time `json:"updateTime" dynamodbav:"updateTime"`
	// Invalid is set by the applier's informers when the item could not be decoded, with the
	// reason; the controllers report it as PreCheckFailed. It is never stored.
	Invalid string `json:"-" dynamodbav:"-"`
	// createTimeText and updateTimeText are the item's own strings for CreateTime and
	// UpdateTime when the codec would spell them otherwise, so a status echoes them byte for
	// byte and a re-encoded item keeps them; "" when the codec's spelling is the item's.
	createTimeText, updateTimeText string
}

// KeepTimeSpellings records how item (a DynamoDB item of this document) spells `createTime`
// and `updateTime`, when it spells them other than the codec would and they still name
// m.CreateTime and m.UpdateTime. DecodeItem calls it; decoders of their own may too.
func (m *DynamoDBMetadata) KeepTimeSpellings(item Item) {
	m.createTimeText = keptSpelling(item[AttrCreateTime], m.CreateTime)
	m.updateTimeText = keptSpelling(item[AttrUpdateTime], m.UpdateTime)
}

// KeptTimeSpellings returns the strings KeepTimeSpellings kept for createTime and updateTime:
// "" for a time the item spells as the codec does (RFC 3339 with nanoseconds, trailing zeros
// dropped, "Z").
func (m *DynamoDBMetadata) KeptTimeSpellings() (createTime, updateTime string) {
	return m.createTimeText, m.updateTimeText
}

// StoredTimes returns `createTime` and `updateTime` as the item stores them: the kept
// spelling when the item had its own, else the codec's (time.RFC3339Nano). A status answers
// this spec when its observedDesireCreateTime and observedDesireUpdateTime equal them.
func (m *DynamoDBMetadata) StoredTimes() (createTime, updateTime string) {
	createTime, updateTime = m.createTimeText, m.updateTimeText
	if createTime == "" || !sameInstant(createTime, m.CreateTime) {
		createTime = m.CreateTime.Format(time.RFC3339Nano)
	}
	if updateTime == "" || !sameInstant(updateTime, m.UpdateTime) {
		updateTime = m.UpdateTime.Format(time.RFC3339Nano)
	}
	return createTime, updateTime
}

// TargetItem names one Kubernetes object by resource (GVR), namespace and name.
// Group is "" for the core group; Namespace is "" for cluster-scoped objects.
type TargetItem struct {
	Group     string `json:"group" dynamodbav:"group"`
	Version   string `json:"version" dynamodbav:"version"`
	Resource  string `json:"resource" dynamodbav:"resource"`
	Namespace string `json:"namespace,omitempty" dynamodbav:"namespace"`
	Name      string `json:"name" dynamodbav:"name"`
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

// CommonSpec holds the fields every desire spec has.
type CommonSpec struct {
	// ManagementCluster is the management cluster that must carry out the desire.
	ManagementCluster string `json:"managementCluster" dynamodbav:"managementCluster"`
	// ClusterID is the hosted cluster the desire belongs to (informational).
	ClusterID string `json:"clusterID,omitempty" dynamodbav:"clusterID,omitempty"`
	// NodePoolName (`nodePoolName`, S, optional) is the hosted cluster's node pool the desire
	// belongs to (informational), as upstream's backends write it (rosa-hyperfleet-kube-applier's
	// ApplyDesire and ReadDesire specs).
	NodePoolName string `json:"nodePoolName,omitempty" dynamodbav:"nodePoolName,omitempty"`
	// Owner (`spec.owner`, S, optional) names who wrote the desire (a backend, a team). Rival
	// desires of one object with different owners are reported with the rival's documentID
	// and owner (TargetConflict); with the same owner, or none, the rival rules are unchanged.
	Owner string `json:"owner,omitempty" dynamodbav:"owner,omitempty"`
	// unknown holds the `spec` attributes DecodeItem did not map (UnknownAttributes); never
	// encoded. Unexported so that only the decoder sets it.
	unknown string
}

// Condition is one entry of a status's `conditions` list, as stored: the fields of
// Kubernetes' metav1.Condition. LastTransitionTime is stored as an RFC 3339 string.
type Condition struct {
	// Type is ConditionSuccessful, ConditionDegraded or ConditionReady.
	Type string `json:"type" dynamodbav:"type"`
	// Status is "True", "False" or "Unknown".
	Status string `json:"status" dynamodbav:"status"`
	// ObservedGeneration is the spec document's Version the condition was computed from.
	ObservedGeneration int64 `json:"observedGeneration" dynamodbav:"observedGeneration"`
	// LastTransitionTime is when Status last changed (UTC).
	LastTransitionTime time.Time `json:"lastTransitionTime" dynamodbav:"lastTransitionTime"`
	// Reason is one of the Reason* constants (CamelCase).
	Reason string `json:"reason" dynamodbav:"reason"`
	// Message is for humans: the apiserver's error, what was applied, ...
	Message string `json:"message" dynamodbav:"message"`
}

// CommonStatus holds the fields every desire status has.
type CommonStatus struct {
	// Conditions are Successful and Degraded (and Ready for ApplyDesires); absent on a spec.
	Conditions []Condition `json:"conditions,omitempty" dynamodbav:"conditions,omitempty"`
	// ObservedDesireUpdateTime and ObservedDesireCreateTime are the spec item's `updateTime`
	// and `createTime` this status answers, as the strings the spec item holds (the applier
	// echoes them byte for byte): compare them as strings with StoredTimes of the spec.
	ObservedDesireUpdateTime string `json:"observedDesireUpdateTime,omitempty" dynamodbav:"observedDesireUpdateTime,omitempty"`
	ObservedDesireCreateTime string `json:"observedDesireCreateTime,omitempty" dynamodbav:"observedDesireCreateTime,omitempty"`
}

// Condition returns the condition of that type, or nil.
func (s *CommonStatus) Condition(conditionType string) *Condition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == conditionType {
			return &s.Conditions[i]
		}
	}
	return nil
}

// IsTrue reports whether s has a condition of that type with Status "True".
func (s *CommonStatus) IsTrue(conditionType string) bool {
	c := s.Condition(conditionType)
	return c != nil && c.Status == ConditionTrue
}

// SetCondition sets c in s, as Kubernetes' meta.SetStatusCondition does: a condition of the
// same type is updated in place, keeping its LastTransitionTime unless its Status changes (a
// zero LastTransitionTime in c is now); a new one is appended. Times are stored in UTC, as
// the layout says. It reports whether anything changed.
func (s *CommonStatus) SetCondition(c Condition, now time.Time) bool {
	if c.LastTransitionTime.IsZero() {
		c.LastTransitionTime = now
	}
	c.LastTransitionTime = c.LastTransitionTime.UTC()
	cur := s.Condition(c.Type)
	if cur == nil {
		s.Conditions = append(s.Conditions, c)
		return true
	}
	if cur.Status != c.Status {
		*cur = c
		return true
	}
	changed := cur.Reason != c.Reason || cur.Message != c.Message || cur.ObservedGeneration != c.ObservedGeneration
	cur.Reason, cur.Message, cur.ObservedGeneration = c.Reason, c.Message, c.ObservedGeneration
	return changed
}

// RemoveCondition removes the condition of that type from s, if any; it reports whether one
// was there.
func (s *CommonStatus) RemoveCondition(conditionType string) bool {
	n := len(s.Conditions)
	s.Conditions = slices.DeleteFunc(s.Conditions, func(c Condition) bool { return c.Type == conditionType })
	return len(s.Conditions) != n
}

// Observe makes s answer the spec whose metadata is m: its updateTime and createTime, as the
// spec item stores them (StoredTimes).
func (s *CommonStatus) Observe(m *DynamoDBMetadata) {
	s.ObservedDesireCreateTime, s.ObservedDesireUpdateTime = m.StoredTimes()
}

// ObservedTimes returns the spec updateTime and createTime s answers, parsed (RFC 3339); a
// missing or unparsable one is the zero time.
func (s *CommonStatus) ObservedTimes() (updateTime, createTime time.Time) {
	updateTime, _ = time.Parse(time.RFC3339Nano, s.ObservedDesireUpdateTime)
	createTime, _ = time.Parse(time.RFC3339Nano, s.ObservedDesireCreateTime)
	return updateTime, createTime
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

// StatusFields are the top-level attributes only status documents carry, written by the
// applier; a backend never sets them on a spec (they are not encoded when zero).
type StatusFields struct {
	// ApplierTerm is the leadership term of the applier that wrote the status (`applierTerm`, N).
	ApplierTerm int64 `json:"applierTerm,omitempty" dynamodbav:"applierTerm,omitempty"`
	// Shard is the index shard (`shard`, S "0".."3", see StatusShard; "0" when the documentID
	// is no UUID); "" in a status written by a release before 2026-12-04 for such an ID. The
	// api client writes it on spec items too (SpecIndexName's key), so a spec read back has it.
	Shard string `json:"shard,omitempty" dynamodbav:"shard,omitempty"`
}

// ApplyDesireSpec asks for a server-side apply (force) of KubeContent.
type ApplyDesireSpec struct {
	CommonSpec
	// KubeContent is one Kubernetes object as JSON. Stored as compact JSON in the top-level
	// attribute `spec_kubeContent`, not inside `spec`.
	KubeContent json.RawMessage `json:"kubeContent,omitempty" dynamodbav:"-"`
	// ApplyPolicy (`applyPolicy`, S): ApplyPolicyServerSideApply (default), ApplyPolicyCreateOnly
	// or ApplyPolicyReadOnly; read it through Policy.
	ApplyPolicy string `json:"applyPolicy,omitempty" dynamodbav:"applyPolicy,omitempty"`
	// ForceConflicts (`forceConflicts`, BOOL): false leaves fields other managers own to them and
	// reports ApplyConflict; nil (absent) is true. Read it through ForcesConflicts.
	ForceConflicts *bool `json:"forceConflicts,omitempty" dynamodbav:"forceConflicts,omitempty"`
	// IgnoreFields (`ignoreFields`, L of M): fields the apply leaves alone, and drift never
	// repairs, under a condition.
	IgnoreFields []IgnoreField `json:"ignoreFields,omitempty" dynamodbav:"ignoreFields,omitempty"`
	// YieldToManagers (`yieldToManagers`, L of S): field managers (e.g. an HPA's) whose fields
	// are never taken back.
	YieldToManagers []string `json:"yieldToManagers,omitempty" dynamodbav:"yieldToManagers,omitempty"`
	// StatusFeedback (`statusFeedback`, M): values of the object reported in status.feedback.
	StatusFeedback *StatusFeedback `json:"statusFeedback,omitempty" dynamodbav:"statusFeedback,omitempty"`
	// Health (`health`, M): CEL rules that replace kstatus for the Ready condition.
	Health *HealthRules `json:"health,omitempty" dynamodbav:"health,omitempty"`
	// Type (`type`, S) is what the desire asks for: ApplyTypeServerSideApply (also when
	// absent or "": the apply of KubeContent) or ApplyTypeDelete (the folded Delete: the
	// deletion of TargetItem, with a DeleteDesire's truth; no KubeContent). Read it through
	// ApplyType. The layout of openshift-online/rosa-hyperfleet-kube-applier's forks, which
	// keep no DeleteDesire tables (docs/contract.md "The folded Delete").
	Type string `json:"type,omitempty" dynamodbav:"type,omitempty"`
	// TargetItem (`targetItem`, M) names the object: required with type Delete (the object
	// deleted); optional with ServerSideApply, where upstream's backends write it too, and
	// then its group, version, namespace and name must agree with KubeContent's (CheckOptions).
	TargetItem *TargetItem `json:"targetItem,omitempty" dynamodbav:"targetItem,omitempty"`
	// ServerSideApply (`serverSideApply`, M) holds the ServerSideApply form's settings: nothing
	// this applier reads today (upstream's kubeContent in it is stored as the top-level
	// `spec_kubeContent`, as KubeContent is), kept so an item round-trips; an attribute inside
	// it refuses the desire (Forward safety). Not allowed with type Delete.
	ServerSideApply *ServerSideApplySpec `json:"serverSideApply,omitempty" dynamodbav:"serverSideApply,omitempty"`
	// PropagationPolicy (`propagationPolicy`, S) is a DeleteDesire's option, for type Delete
	// only: PropagationBackground (default), PropagationForeground or PropagationOrphan.
	PropagationPolicy string `json:"propagationPolicy,omitempty" dynamodbav:"propagationPolicy,omitempty"`
}

// ServerSideApplySpec is `spec.serverSideApply` (M) of an ApplyDesire: empty today. It has
// no attribute so that any attribute a newer writer puts in it is refused, not ignored.
type ServerSideApplySpec struct{}

// ApplyDesireStatus reports the outcome of an ApplyDesire.
type ApplyDesireStatus struct {
	CommonStatus
	// AppliedResourceGeneration is metadata.generation of the object after the last apply.
	AppliedResourceGeneration int64 `json:"appliedResourceGeneration,omitempty" dynamodbav:"appliedResourceGeneration"`
	// AppliedUID and AppliedResourceVersion are metadata.uid and metadata.resourceVersion of
	// the object after the last apply.
	AppliedUID             string `json:"appliedUID,omitempty" dynamodbav:"appliedUID,omitempty"`
	AppliedResourceVersion string `json:"appliedResourceVersion,omitempty" dynamodbav:"appliedResourceVersion,omitempty"`
	// AppliedFieldsDigest is an order-independent hash (hex) of the field set the applier's
	// Apply entry in managedFields held after the last apply.
	AppliedFieldsDigest string `json:"appliedFieldsDigest,omitempty" dynamodbav:"appliedFieldsDigest,omitempty"`
	// Feedback holds the values spec.statusFeedback asks for, read from an observed object
	// (`feedback`, L of M); absent without statusFeedback.
	Feedback []FeedbackValue `json:"feedback,omitempty" dynamodbav:"feedback,omitempty"`
}

// ApplyDesire is a document of the `...-applydesires` tables.
type ApplyDesire struct {
	DynamoDBMetadata
	StatusFields
	Spec   ApplyDesireSpec   `json:"spec" dynamodbav:"spec"`
	Status ApplyDesireStatus `json:"status" dynamodbav:"status"`
	object contentKey        // Spec.KubeContent's ObjectKey, as DecodeItem read it
}

// DeleteDesireSpec asks for the deletion of TargetItem.
type DeleteDesireSpec struct {
	CommonSpec
	TargetItem TargetItem `json:"targetItem" dynamodbav:"targetItem"`
	// PropagationPolicy (`propagationPolicy`, S): PropagationBackground (default),
	// PropagationForeground or PropagationOrphan; read it through Propagation.
	PropagationPolicy string `json:"propagationPolicy,omitempty" dynamodbav:"propagationPolicy,omitempty"`
}

// DeleteDesireStatus reports the outcome of a DeleteDesire.
type DeleteDesireStatus struct {
	CommonStatus
}

// DeleteDesire is a document of the `...-deletedesires` tables.
type DeleteDesire struct {
	DynamoDBMetadata
	StatusFields
	Spec   DeleteDesireSpec   `json:"spec" dynamodbav:"spec"`
	Status DeleteDesireStatus `json:"status" dynamodbav:"status"`
}

// ReadDesireSpec asks for TargetItem to be mirrored into the status.
type ReadDesireSpec struct {
	CommonSpec
	TargetItem TargetItem `json:"targetItem" dynamodbav:"targetItem"`
	// Fields (`fields`, L of S): RFC 6901 JSON Pointers; when set, status_kubeContent holds only
	// these paths of the live object (and its apiVersion, kind and metadata name/namespace).
	Fields []string `json:"fields,omitempty" dynamodbav:"fields,omitempty"`
}

// ReadDesireStatus carries the live object.
type ReadDesireStatus struct {
	CommonStatus
	// KubeContent is the live object as JSON (managedFields stripped, Secret data redacted),
	// or nil when it does not exist. Stored as compact JSON in `status_kubeContent`.
	KubeContent json.RawMessage `json:"kubeContent,omitempty" dynamodbav:"-"`
}

// ReadDesire is a document of the `...-readdesires` tables.
type ReadDesire struct {
	DynamoDBMetadata
	StatusFields
	Spec   ReadDesireSpec   `json:"spec" dynamodbav:"spec"`
	Status ReadDesireStatus `json:"status" dynamodbav:"status"`
}

// Desire is implemented by *ApplyDesire, *DeleteDesire and *ReadDesire, and by nothing else.
type Desire interface {
	// Meta returns the document metadata for reading and writing.
	Meta() *DynamoDBMetadata
	// Common returns the spec fields every desire has.
	Common() *CommonSpec
	// StatusCommon returns the status fields every desire has.
	StatusCommon() *CommonStatus
	// Kind returns the desire kind.
	Kind() DesireKind
	// DeepCopyDesire returns a copy that shares no memory with the desire.
	DeepCopyDesire() Desire
	// content returns the attribute name and field of the object stored as JSON outside the
	// codec, or "" and nil.
	content() (attr string, raw *json.RawMessage)
	// resetStatus clears the status.
	resetStatus()
}

// Meta implements Desire.
func (d *ApplyDesire) Meta() *DynamoDBMetadata { return &d.DynamoDBMetadata }

// Meta implements Desire.
func (d *DeleteDesire) Meta() *DynamoDBMetadata { return &d.DynamoDBMetadata }

// Meta implements Desire.
func (d *ReadDesire) Meta() *DynamoDBMetadata { return &d.DynamoDBMetadata }

// Common implements Desire.
func (d *ApplyDesire) Common() *CommonSpec { return &d.Spec.CommonSpec }

// Common implements Desire.
func (d *DeleteDesire) Common() *CommonSpec { return &d.Spec.CommonSpec }

// Common implements Desire.
func (d *ReadDesire) Common() *CommonSpec { return &d.Spec.CommonSpec }

// StatusCommon implements Desire.
func (d *ApplyDesire) StatusCommon() *CommonStatus { return &d.Status.CommonStatus }

// StatusCommon implements Desire.
func (d *DeleteDesire) StatusCommon() *CommonStatus { return &d.Status.CommonStatus }

// StatusCommon implements Desire.
func (d *ReadDesire) StatusCommon() *CommonStatus { return &d.Status.CommonStatus }

// Kind implements Desire.
func (d *ApplyDesire) Kind() DesireKind { return KindApplyDesire }

// Kind implements Desire.
func (d *DeleteDesire) Kind() DesireKind { return KindDeleteDesire }

// Kind implements Desire.
func (d *ReadDesire) Kind() DesireKind { return KindReadDesire }

func (d *ApplyDesire) content() (string, *json.RawMessage) {
	return AttrSpecKubeContent, &d.Spec.KubeContent
}
func (d *DeleteDesire) content() (string, *json.RawMessage) { return "", nil }
func (d *ReadDesire) content() (string, *json.RawMessage) {
	return AttrStatusKubeContent, &d.Status.KubeContent
}

func (d *ApplyDesire) resetStatus() {
	d.Status, d.StatusFields = ApplyDesireStatus{}, StatusFields{}
}
func (d *DeleteDesire) resetStatus() {
	d.Status, d.StatusFields = DeleteDesireStatus{}, StatusFields{}
}
func (d *ReadDesire) resetStatus() {
	d.Status, d.StatusFields = ReadDesireStatus{}, StatusFields{}
}

// NewDesire returns a new zero desire of T's kind (T is *ApplyDesire, *DeleteDesire or
// *ReadDesire).
func NewDesire[T Desire]() T {
	var zero T
	return reflect.New(reflect.TypeOf(zero).Elem()).Interface().(T)
}
