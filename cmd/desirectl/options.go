package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// Desire options (docs/contract.md "Desire options") are set with flags, not with manifest
// annotations: they belong to the desire (the DynamoDB item), not to the object. An annotation
// would have to be stripped from kubeContent before it is written (the desire would no longer
// hold the manifest as given) or else be applied to the object, where the applier's field
// manager would own it. The flags of one command hold for every object of its input; objects
// that need other options go in another command. Each flag at its default writes nothing, so
// a desire without options stays readable by appliers before v0.2.0 (Forward safety).

// applyOptions are the option flags of `apply`.
type applyOptions struct {
	owner          string
	applyPolicy    string
	forceConflicts bool
	ignoreFields   []string // CONDITION=POINTER[,POINTER...]
	yieldTo        []string
	feedback       []string // NAME=JSONPATH
	health         api.HealthRules
}

// Names of the option flags (docs/desirectl.md lists them).
const (
	flagOwner             = "owner"
	flagApplyPolicy       = "apply-policy"
	flagForceConflicts    = "force-conflicts"
	flagIgnoreFields      = "ignore-fields"
	flagYieldToManager    = "yield-to-manager"
	flagFeedback          = "feedback"
	flagHealthCurrent     = "health-current"
	flagHealthInProgress  = "health-in-progress"
	flagHealthFailed      = "health-failed"
	flagPropagationPolicy = "propagation-policy"
	flagFields            = "fields"
)

// addOwnerFlag registers --owner (spec.owner) on apply, delete and read.
func addOwnerFlag(cmd *cobra.Command, owner *string) {
	cmd.Flags().StringVar(owner, flagOwner, "", "spec.owner: who keeps the desire (a backend, a team); a rival desire of the object with another owner is reported with both")
}

func (o *applyOptions) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	addOwnerFlag(cmd, &o.owner)
	fs.StringVar(&o.applyPolicy, flagApplyPolicy, api.ApplyPolicyServerSideApply,
		"spec.applyPolicy: ServerSideApply (apply and repair drift), CreateOnly (create when absent, never update) or ReadOnly (never write; report existence, readiness, feedback)")
	fs.BoolVar(&o.forceConflicts, flagForceConflicts, true,
		"spec.forceConflicts: false leaves fields other field managers own to them (Successful=False, reason ApplyConflict)")
	fs.StringArrayVar(&o.ignoreFields, flagIgnoreFields, nil,
		"spec.ignoreFields entry CONDITION=POINTER[,POINTER...]: OnTargetPresent or OnTargetChange, RFC 6901 JSON Pointers split at each \",/\" (repeatable)")
	fs.StringArrayVar(&o.yieldTo, flagYieldToManager, nil,
		"spec.yieldToManagers: a field manager (e.g. an HPA's) whose fields are never taken back (repeatable)")
	fs.StringArrayVar(&o.feedback, flagFeedback, nil,
		"spec.statusFeedback rule NAME=JSONPATH (a kubectl JSONPath, e.g. ready=.status.readyReplicas), reported in status.feedback (repeatable)")
	fs.StringVar(&o.health.Current, flagHealthCurrent, "", "spec.health.current: CEL expression over the object (self); true: Ready=True")
	fs.StringVar(&o.health.InProgress, flagHealthInProgress, "", "spec.health.inProgress: CEL expression; true: Ready=False, InProgress")
	fs.StringVar(&o.health.Failed, flagHealthFailed, "", "spec.health.failed: CEL expression, evaluated first; true: Ready=False, Failed")
	completeValues(cmd, flagApplyPolicy, api.ApplyPolicyServerSideApply, api.ApplyPolicyCreateOnly, api.ApplyPolicyReadOnly)
	completeValues(cmd, flagIgnoreFields, api.IgnoreOnTargetPresent+"=", api.IgnoreOnTargetChange+"=")
}

// completeValues offers values for a flag in shell completion.
func completeValues(cmd *cobra.Command, flag string, values ...string) {
	_ = cmd.RegisterFlagCompletionFunc(flag, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	})
}

// spec returns the options as an ApplyDesireSpec (KubeContent and CommonSpec but Owner unset),
// in their normal form (normalApply): a flag at its default sets nothing. Errors are usage
// errors naming the flag or, from api.CheckOptions, the attribute and value.
func (o *applyOptions) spec() (api.ApplyDesireSpec, error) {
	s := api.ApplyDesireSpec{CommonSpec: api.CommonSpec{Owner: o.owner}, ApplyPolicy: o.applyPolicy, YieldToManagers: o.yieldTo}
	if !o.forceConflicts {
		no := false
		s.ForceConflicts = &no
	}
	for _, v := range o.ignoreFields {
		cond, pointers, ok := strings.Cut(v, "=")
		if !ok || pointers == "" {
			return s, usageErrorf("--%s %q: want CONDITION=POINTER[,POINTER...], e.g. OnTargetPresent=/spec/replicas", flagIgnoreFields, v)
		}
		s.IgnoreFields = append(s.IgnoreFields, api.IgnoreField{Condition: cond, JSONPointers: splitPointers(pointers)})
	}
	for _, v := range o.feedback {
		name, path, ok := strings.Cut(v, "=")
		if !ok {
			return s, usageErrorf("--%s %q: want NAME=JSONPATH, e.g. ready=.status.readyReplicas", flagFeedback, v)
		}
		if s.StatusFeedback == nil {
			s.StatusFeedback = &api.StatusFeedback{}
		}
		s.StatusFeedback.JSONPaths = append(s.StatusFeedback.JSONPaths, api.FeedbackRule{Name: name, Path: path})
	}
	if o.health != (api.HealthRules{}) {
		h := o.health
		s.Health = &h
	}
	normalApply(&s)
	return s, checkOptions(&api.ApplyDesire{Spec: s})
}

// checkOptions is api.CheckOptions as a usage error: desirectl refuses before any write what
// the api client and the applier would refuse (PreCheckFailed).
func checkOptions(d api.Desire) error {
	if err := api.CheckOptions(d); err != nil {
		return usageErrorf("%v", err)
	}
	return nil
}

// splitPointers splits a list of JSON Pointers at each comma that starts another pointer
// (",/"): a comma inside a pointer ("/metadata/annotations/a,b") stays in it.
func splitPointers(s string) []string {
	var out []string
	for {
		i := strings.Index(s, ",/")
		if i < 0 {
			return append(out, s)
		}
		out = append(out, s[:i])
		s = s[i+1:]
	}
}

// normalApply gives a spec's options (not the maps nested in them, which it never changes: s
// may share them with another desire) their normal form, which sameSpec compares and apply
// writes: a default value (ServerSideApply, forceConflicts true) is absent, and an empty list
// is nil, so a desire written with the defaults spelled out, or decoded from an empty list,
// is not rewritten for nothing. A HealthRules without rules is kept as written (the applier
// reads it as kstatus, but the item says what the user asked).
func normalApply(s *api.ApplyDesireSpec) {
	if s.ApplyPolicy == api.ApplyPolicyServerSideApply {
		s.ApplyPolicy = ""
	}
	if s.ForceConflicts != nil && *s.ForceConflicts {
		s.ForceConflicts = nil
	}
	if len(s.IgnoreFields) == 0 {
		s.IgnoreFields = nil
	}
	if len(s.YieldToManagers) == 0 {
		s.YieldToManagers = nil
	}
	if s.StatusFeedback != nil && len(s.StatusFeedback.JSONPaths) == 0 {
		s.StatusFeedback = nil
	}
}

// normalDelete and normalRead are normalApply for the other kinds.
func normalDelete(s *api.DeleteDesireSpec) {
	if s.PropagationPolicy == api.PropagationBackground {
		s.PropagationPolicy = ""
	}
}

func normalRead(s *api.ReadDesireSpec) {
	if len(s.Fields) == 0 {
		s.Fields = nil
	}
}

// deleteOptions are the option flags of `delete`.
type deleteOptions struct {
	owner       string
	propagation string
}

func (o *deleteOptions) register(cmd *cobra.Command) {
	addOwnerFlag(cmd, &o.owner)
	cmd.Flags().StringVar(&o.propagation, flagPropagationPolicy, api.PropagationBackground,
		"spec.propagationPolicy: Background (delete now, dependents afterwards), Foreground (wait for the dependents) or Orphan (keep the dependents)")
	completeValues(cmd, flagPropagationPolicy, api.PropagationBackground, api.PropagationForeground, api.PropagationOrphan)
}

// spec returns the options as a DeleteDesireSpec, in normal form, checked.
func (o *deleteOptions) spec() (api.DeleteDesireSpec, error) {
	s := api.DeleteDesireSpec{CommonSpec: api.CommonSpec{Owner: o.owner}, PropagationPolicy: o.propagation}
	normalDelete(&s)
	return s, checkOptions(&api.DeleteDesire{Spec: s})
}

// readOptions are the option flags of `read`.
type readOptions struct {
	owner  string
	fields []string
}

func (o *readOptions) register(cmd *cobra.Command) {
	addOwnerFlag(cmd, &o.owner)
	cmd.Flags().StringArrayVar(&o.fields, flagFields, nil,
		"spec.fields: mirror only these RFC 6901 JSON Pointers (e.g. /data,/status/phase; split at each \",/\"; repeatable); apiVersion, kind and metadata name and namespace always")
}

// spec returns the options as a ReadDesireSpec, in normal form, checked.
func (o *readOptions) spec() (api.ReadDesireSpec, error) {
	s := api.ReadDesireSpec{CommonSpec: api.CommonSpec{Owner: o.owner}}
	for _, v := range o.fields {
		s.Fields = append(s.Fields, splitPointers(v)...)
	}
	normalRead(&s)
	return s, checkOptions(&api.ReadDesire{Spec: s})
}

// optionsSummary is the OPTIONS column of `get -o wide`: the options a spec sets, separated
// by ";" (lists by ","), "-" for none.
func optionsSummary(spec api.Desire) string {
	var parts []string
	add := func(format string, args ...any) { parts = append(parts, fmt.Sprintf(format, args...)) }
	if o := spec.Common().Owner; o != "" {
		add("owner=%s", o)
	}
	switch d := spec.(type) {
	case *api.ApplyDesire:
		s := d.Spec
		if s.ApplyPolicy != "" && s.ApplyPolicy != api.ApplyPolicyServerSideApply {
			add("applyPolicy=%s", s.ApplyPolicy)
		}
		if !s.ForcesConflicts() {
			add("forceConflicts=false")
		}
		for _, f := range s.IgnoreFields {
			add("ignore%s=%s", f.Condition, strings.Join(f.JSONPointers, ","))
		}
		if len(s.YieldToManagers) > 0 {
			add("yieldTo=%s", strings.Join(s.YieldToManagers, ","))
		}
		if s.StatusFeedback != nil && len(s.StatusFeedback.JSONPaths) > 0 {
			add("feedback=%d", len(s.StatusFeedback.JSONPaths))
		}
		if s.Health != nil {
			add("health")
		}
	case *api.DeleteDesire:
		if p := d.Spec.PropagationPolicy; p != "" && p != api.PropagationBackground {
			add("propagationPolicy=%s", p)
		}
	case *api.ReadDesire:
		if len(d.Spec.Fields) > 0 {
			add("fields=%s", strings.Join(d.Spec.Fields, ","))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ";")
}

// feedbackSummary is the FEEDBACK column of `get -o wide`: an ApplyDesire status's feedback
// values as NAME=VALUE separated by ";", "-" for none. A value longer than 40 characters is cut.
func feedbackSummary(status api.Desire) string {
	a, ok := status.(*api.ApplyDesire)
	if !ok || a == nil || len(a.Status.Feedback) == 0 {
		return "-"
	}
	parts := make([]string, len(a.Status.Feedback))
	for i, f := range a.Status.Feedback {
		v := f.Value
		if f.Type == "" {
			v = "<" + v + ">" // matched nothing: the value is a note, not the object's
		}
		if r := []rune(v); len(r) > 40 {
			v = string(r[:39]) + "…"
		}
		parts[i] = f.Name + "=" + oneLine(v)
	}
	return strings.Join(parts, ";")
}
