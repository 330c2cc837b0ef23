package api

// Condition types written into every desire's status.
const (
	// ConditionSuccessful is True when the desire is carried out on the cluster.
	ConditionSuccessful = "Successful"
	// ConditionDegraded is True when the applier itself could not do its job (transient
	// errors: apiserver 5xx/429/timeouts, discovery failures, a terminating namespace); False
	// otherwise.
	ConditionDegraded = "Degraded"
	// ConditionReady (ApplyDesires) is True when the applied object is Current in kstatus's
	// terms (sigs.k8s.io/cli-utils/pkg/kstatus/status): a Deployment rolled out, a CRD
	// established, a Job complete; kinds without status are Current while they exist. Its
	// reason is kstatus's status: Current, InProgress, Failed, Terminating, NotFound or
	// Unknown, its message kstatus's. Updated when the object's resourceVersion changes.
	ConditionReady = "Ready"
)

// Condition statuses, as Kubernetes spells them.
const (
	ConditionTrue    = "True"
	ConditionFalse   = "False"
	ConditionUnknown = "Unknown"
)

// Condition reasons. They are CamelCase as Kubernetes' metav1.Condition requires.
const (
	// ReasonNoErrors: the desire was carried out.
	ReasonNoErrors = "NoErrors"
	// ReasonKubeAPIError: the kube-apiserver refused or failed the call; the message is its own.
	ReasonKubeAPIError = "KubeAPIError"
	// ReasonPreCheckFailed: the desire was refused before any API call (wrong management
	// cluster, invalid kubeContent, scope mismatch, unknown kind, ...).
	ReasonPreCheckFailed = "PreCheckFailed"
	// ReasonWaitingForDeletion: the target has a deletionTimestamp and finalizers remain.
	ReasonWaitingForDeletion = "WaitingForDeletion"
	// ReasonContentTooLarge: the live object does not fit in a DynamoDB item (400 KB).
	ReasonContentTooLarge = "ContentTooLarge"
	// ReasonNotFound: a ReadDesire's target does not exist.
	ReasonNotFound = "NotFound"
	// ReasonKindNotServed: the cluster does not serve the desire's kind or resource yet (a CRD
	// not applied or not established). Not Degraded; retried with back-off and at once when a
	// CRD is applied: it heals by itself, unlike PreCheckFailed.
	ReasonKindNotServed = "KindNotServed"
	// ReasonTargetConflict: a rival desire of this management cluster keeps the object and
	// this ApplyDesire is not applied: a DeleteDesire of the object (it wins while it
	// exists), or another ApplyDesire created earlier (docs/design.md "Two desires, one object").
	// It heals when the rival is deleted or retargeted.
	ReasonTargetConflict = "TargetConflict"
	// ReasonDriftConflict: another writer re-took fields of the applied object within seconds
	// of each drift repair; repairs are backed off (1 s doubling to 5 min) instead of fighting,
	// and the object is not as applied. Not Degraded: stop the other writer, or leave the
	// fields it owns out of kubeContent.
	ReasonDriftConflict = "DriftConflict"
	// ReasonStaleFieldOwners: the object's managedFields hold entries at an apiVersion its
	// CustomResourceDefinition no longer serves, and the apiserver refuses every apply for
	// it (kubernetes/kubernetes#111937); removing those entries failed. The message names
	// the version and the managers. Not Degraded and never taken for the desire's fault;
	// retried with back-off.
	ReasonStaleFieldOwners = "StaleFieldOwners"
	// ReasonTargetAbsent: a ReadOnly ApplyDesire's object does not exist (spec.applyPolicy);
	// nothing is created. Not Degraded; looked at again when the object appears.
	ReasonTargetAbsent = "TargetAbsent"
	// ReasonApplyConflict: the apply would take fields other field managers own, and
	// spec.forceConflicts is false; the message names the managers and the first field
	// paths of the apiserver's 409. Retried when the object changes and at the resync.
	ReasonApplyConflict = "ApplyConflict"
	// ReasonHealthRuleInvalid (the Ready condition's reason, status Unknown): a CEL rule of
	// spec.health does not compile, or failed on the object; the message names the rule.
	// Successful is not changed by it.
	ReasonHealthRuleInvalid = "HealthRuleInvalid"
)
