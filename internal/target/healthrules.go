package target

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// An ApplyDesire's `spec.health` (api.HealthRules) replaces kstatus for its Ready condition:
// CEL expressions over the object, bound as `self` (a dynamic map: the unstructured object),
// evaluated failed, then inProgress, then current; the first true one decides (as Flux's
// healthCheckExprs). A rule that does not compile, is not a bool, exceeds the cost limit or
// the deadline, or errors on the object makes Ready Unknown/HealthRuleInvalid. A field the
// object lacks is such an error (CEL's "no such key", as Flux treats it): rules guard
// optional fields with has(), e.g. `has(self.status) && self.status.phase == "Failed"`. The
// Ready message names the deciding rule and quotes it (and CEL's error), except on a Secret,
// where it names the rule only.

// Limits of one rule's evaluation. The cost limit is Kubernetes' per-expression limit for
// validation rules (a unit is roughly one CEL operation); the deadline bounds what the cost
// sees poorly (nested comprehensions over the dynamic map reach the limit only after some
// 0.2-0.7 s on a loaded machine), and stays far above what a plain rule takes (microseconds).
const (
	healthRuleCostLimit = 1_000_000
	healthRuleDeadline  = time.Second
	// healthRuleInterrupt is how many comprehension iterations run between deadline checks.
	healthRuleInterrupt = 100
	// healthProgramsMax bounds the compiled rules kept (least recently used dropped first):
	// desires usually share a few rule texts.
	healthProgramsMax = 1024
	// healthRuleMaxBytes bounds one rule's text (a rule is a line or two; a 400 KB item could
	// hold a huge one): with healthProgramsMax, the cache holds at most ~16 MiB of rule text.
	healthRuleMaxBytes = 16 << 10
)

// Ready reasons of health rules (kstatus's names for the outcomes, plus the invalid rule).
const (
	healthFailed     = string(status.FailedStatus)
	healthInProgress = string(status.InProgressStatus)
	healthCurrent    = string(status.CurrentStatus)
)

// Unknown reports whether r says the readiness cannot be known: a health rule is invalid
// (the Ready condition is Unknown, not False).
func (r *Readiness) Unknown() bool { return r.Status == api.ReasonHealthRuleInvalid }

// hasRules reports whether rules name at least one expression (nil or all empty: kstatus).
func hasRules(rules *api.HealthRules) bool {
	return rules != nil && (rules.Failed != "" || rules.InProgress != "" || rules.Current != "")
}

// UseRules sets the health rules of ApplyDesire id (its `spec.health`; nil or empty: kstatus)
// for the readiness OfObject and OfSighting compute next, and reports whether there are any.
// Each reconcile of id calls it before asking for id's readiness.
func (h *HealthCheck) UseRules(id string, rules *api.HealthRules) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !hasRules(rules) {
		delete(h.rules, id)
		return false
	}
	h.rules[id] = *rules
	return true
}

// rulesOf returns id's health rules and whether it has any.
func (h *HealthCheck) rulesOf(id string) (api.HealthRules, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, ok := h.rules[id]
	return r, ok
}

// evaluateRules is the readiness rules give live: the first true of failed, inProgress and
// current decides; none true is InProgress; an invalid rule is HealthRuleInvalid.
func evaluateRules(rules api.HealthRules, live *unstructured.Unstructured) *Readiness {
	self := live.UnstructuredContent()
	gvk := live.GroupVersionKind()
	secret := gvk.Group == "" && gvk.Kind == "Secret"
	for _, rule := range []struct{ name, expr, status string }{
		{"health.failed", rules.Failed, healthFailed},
		{"health.inProgress", rules.InProgress, healthInProgress},
		{"health.current", rules.Current, healthCurrent},
	} {
		if rule.expr == "" {
			continue
		}
		ok, err := healthPrograms.evaluate(rule.expr, self, healthRuleDeadline)
		switch {
		case err != nil && secret:
			// Condition messages never quote a Secret's values: neither the rule (which may
			// compare one) nor CEL's error (which may quote one) is shown.
			return &Readiness{Status: api.ReasonHealthRuleInvalid, Message: rule.name + " is invalid (on a Secret, the rule and its error are not shown)"}
		case err != nil:
			return &Readiness{Status: api.ReasonHealthRuleInvalid, Message: fmt.Sprintf("%s: %s: %v", rule.name, quoteRule(rule.expr), err)}
		case ok && secret:
			return &Readiness{Status: rule.status, Message: rule.name + " is true"}
		case ok:
			return &Readiness{Status: rule.status, Message: rule.name + ": " + quoteRule(rule.expr)}
		}
	}
	return &Readiness{Status: healthInProgress, Message: "no health rule is true yet"}
}

// quoteRule is a rule's text for a message: whole, or its first 256 bytes and "…" (a
// condition message names the rule; it need not hold a long one).
func quoteRule(expr string) string {
	const max = 256
	if len(expr) <= max {
		return expr
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(expr[cut]) {
		cut--
	}
	return expr[:cut] + "…"
}

// healthPrograms holds the compiled rules of every desire of the process, by rule text.
var healthPrograms = newProgramCache(healthProgramsMax, healthRuleCostLimit)

// programCache compiles each rule text once and keeps the newest max programs (or compile
// errors). Programs are safe for concurrent evaluation.
type programCache struct {
	env       func() (*cel.Env, error)
	costLimit uint64
	max       int

	mu    sync.Mutex
	byKey map[string]*list.Element // of *compiledRule
	order *list.List               // most recently used first
}

// compiledRule is a rule text's program, or why it has none.
type compiledRule struct {
	text string
	prg  cel.Program
	err  error
}

// newProgramCache returns a cache of at most max programs, each evaluated under costLimit.
func newProgramCache(max int, costLimit uint64) *programCache {
	return &programCache{
		env:       sync.OnceValues(func() (*cel.Env, error) { return cel.NewEnv(cel.Variable("self", cel.DynType)) }),
		costLimit: costLimit, max: max, byKey: map[string]*list.Element{}, order: list.New(),
	}
}

// errNotBool is a rule whose result is not a bool.
var errNotBool = errors.New("the rule must return a bool")

// program returns text's program, compiling it on first use (or after it was dropped).
func (c *programCache) program(text string) (cel.Program, error) {
	if len(text) > healthRuleMaxBytes {
		return nil, fmt.Errorf("the rule is %d bytes, over the limit of %d", len(text), healthRuleMaxBytes)
	}
	c.mu.Lock()
	if e, ok := c.byKey[text]; ok {
		c.order.MoveToFront(e)
		cr := e.Value.(*compiledRule)
		c.mu.Unlock()
		return cr.prg, cr.err
	}
	c.mu.Unlock()
	// Compiled outside the lock: two desires may compile one text at once, harmlessly.
	cr := &compiledRule{text: text}
	cr.prg, cr.err = c.compile(text)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[text]; !ok {
		c.byKey[text] = c.order.PushFront(cr)
		for c.order.Len() > c.max {
			old := c.order.Back()
			c.order.Remove(old)
			delete(c.byKey, old.Value.(*compiledRule).text)
		}
	}
	return cr.prg, cr.err
}

// compile parses and checks text against the environment (self: dyn) and plans its program
// with the cost limit and interrupt checks on.
func (c *programCache) compile(text string) (cel.Program, error) {
	env, err := c.env()
	if err != nil {
		return nil, fmt.Errorf("the CEL environment: %w", err)
	}
	ast, iss := env.Compile(text)
	if iss.Err() != nil {
		return nil, fmt.Errorf("does not compile: %s", compileErrors(iss.Err()))
	}
	// self is dynamic: only a rule whose type is known and not bool is refused here.
	if out := ast.OutputType(); !out.IsExactType(types.BoolType) && !out.IsExactType(types.DynType) {
		return nil, fmt.Errorf("%w, not %s", errNotBool, out)
	}
	prg, err := env.Program(ast, cel.CostLimit(c.costLimit), cel.InterruptCheckFrequency(healthRuleInterrupt))
	if err != nil {
		return nil, fmt.Errorf("does not compile: %w", err)
	}
	return prg, nil
}

// evaluate runs text's program on self within deadline and returns its bool.
func (c *programCache) evaluate(text string, self map[string]any, deadline time.Duration) (bool, error) {
	prg, err := c.program(text)
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	out, _, err := prg.ContextEval(ctx, map[string]any{"self": self})
	if err != nil {
		if ctx.Err() != nil {
			return false, fmt.Errorf("evaluation exceeded its %v deadline: %w", deadline, err)
		}
		return false, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("%w, not %s", errNotBool, out.Type())
	}
	return b, nil
}

// compileErrors is err's "ERROR: <input>:line:col: ..." lines, without the source excerpts
// and carets CEL adds below each (the Ready message is one line).
func compileErrors(err error) string {
	var errs []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if strings.HasPrefix(l, "ERROR: ") {
			errs = append(errs, strings.TrimPrefix(l, "ERROR: "))
		}
	}
	if len(errs) == 0 {
		return err.Error()
	}
	return strings.Join(errs, "; ")
}
