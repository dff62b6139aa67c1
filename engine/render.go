package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"

	nacv1alpha1 "github.com/nacflow/nacflow/api/v1alpha1"
)

// Limits on what rendering may cost, so that no blueprint — and no tenant
// value a blueprint feeds to a function — can exhaust the controller's
// memory or hold a reconcile worker: a rendered arg is at most
// MaxRenderedBytes; no value a function returns is larger than
// MaxValueSize; the functions that build strings or lists from a count are
// bounded before they allocate; and the templates of one RenderArgs call
// together take at most MaxRenderSteps steps and RenderTimeout.
const (
	// MaxRenderedBytes bounds one rendered template (bytes).
	MaxRenderedBytes = 64 << 10
	// MaxListLength bounds the lists seq, until, untilStep, split, splitn
	// and splitList build (elements).
	MaxListLength = 10000
	// MaxValueSize bounds what one template function returns: the bytes of
	// its strings plus one per element, entry and level of nesting (about
	// its size as indented JSON). 1 MiB: about the largest Kubernetes
	// object, so that any value read from .Object can pass through a
	// function, while a loop that doubles a value stops after a few rounds.
	MaxValueSize = 1 << 20
	// MaxRenderSteps bounds the steps of one RenderArgs call (one phase's
	// args): every range iteration, every template call ({{ template }},
	// {{ block }}) and every write of output. Ten times what a range over a
	// MaxListLength list needs. Counted, not timed, so that a template that
	// renders once renders on every reconcile, however loaded the
	// controller.
	MaxRenderSteps = 100_000
	// RenderTimeout bounds the time of one RenderArgs call, checked at every
	// step: the backstop for steps that are each slow (functions over values
	// near MaxValueSize). MaxRenderSteps cheap steps take about 10ms, so a
	// template within the step budget stays far from it even on a loaded,
	// CPU-throttled controller, where a 100ms budget could fail a phase that
	// renders in microseconds.
	RenderTimeout = time.Second
)

// renderTimeout is RenderTimeout; tests shorten it.
var renderTimeout = RenderTimeout

// ErrRenderBudget is the error, wrapped, of a render that went past
// MaxRenderSteps or RenderTimeout.
var ErrRenderBudget = errors.New("render budget exceeded")

// budget is what one RenderArgs call may still spend, and the caller's
// context: every step checks all three.
type budget struct {
	ctx      context.Context
	steps    int
	deadline time.Time
}

func newBudget(ctx context.Context) *budget {
	return &budget{ctx: ctx, deadline: time.Now().Add(renderTimeout)}
}

// step counts one step; it returns an error wrapping ErrRenderBudget when
// the steps or the time are spent, or wrapping the context's error when it
// is done.
func (b *budget) step() error {
	b.steps++
	if b.steps > MaxRenderSteps {
		return fmt.Errorf("%w: more than %d steps (range iterations, template calls and writes, engine.MaxRenderSteps)", ErrRenderBudget, MaxRenderSteps)
	}
	if err := b.ctx.Err(); err != nil {
		return fmt.Errorf("rendering stopped: %w", err)
	}
	if time.Now().After(b.deadline) {
		return fmt.Errorf("%w: rendering took longer than %s (engine.RenderTimeout)", ErrRenderBudget, renderTimeout)
	}
	return nil
}

// renderBuffer collects one template's output, at most MaxRenderedBytes;
// every write is a step of the budget, including the empty writes that
// instrument adds to every range iteration and template call, so that a
// loop that writes nothing is counted too (text/template stops executing at
// the first write error).
type renderBuffer struct {
	bytes.Buffer
	budget *budget
}

func (b *renderBuffer) Write(p []byte) (int, error) {
	if err := b.budget.step(); err != nil {
		return 0, err
	}
	if b.Len()+len(p) > MaxRenderedBytes {
		return 0, fmt.Errorf("the rendered template is longer than %d bytes", MaxRenderedBytes)
	}
	return b.Buffer.Write(p)
}

// PhaseParams is what templates see of one phase: {{ .Phases.<name>.Output.<key> }}.
type PhaseParams struct {
	Output map[string]string
}

// Params are the template parameters of a phase (Kanister's TemplateParams,
// for NAC objects). Everything in them is data: user-supplied strings are
// inserted as values and never parsed as templates.
type Params struct {
	// object is the NAC object, converted to a map on first use (.Object);
	// shared by the copies of the Params.
	object *lazyObject
	// Namespace and Name are the NAC object's.
	Namespace string
	Name      string
	// NamespaceLabels are the labels of the NAC object's Namespace (never
	// nil), e.g. {{ index .NamespaceLabels "cost-centre" }}.
	NamespaceLabels map[string]string
	// OADPNamespace is the namespace Velero runs in.
	OADPNamespace string
	// UUID is the operation's NACUUID.
	UUID string
	// Time is the plan's start time, RFC 3339, fixed for the whole plan.
	Time string
	// Phases holds the outputs of the phases that completed, by name.
	Phases map[string]PhaseParams
	// DeferPhase holds the deferPhase's output once it completed.
	DeferPhase *PhaseParams
}

// lazyObject converts an object to a map once, on first use.
type lazyObject struct {
	once sync.Once
	obj  runtime.Object
	m    map[string]any
	err  error
}

// Object returns the NAC object as a map (metadata, spec, status): templates
// read it as .Object. It is converted on first use only, as most phases never
// read it. A conversion error fails the template that asked.
func (p Params) Object() (map[string]any, error) {
	l := p.object
	l.once.Do(func() { l.m, l.err = runtime.DefaultUnstructuredConverter.ToUnstructured(l.obj) })
	return l.m, l.err
}

// NewParams builds the template parameters for op from its object and plan.
// It returns an error only when the object cannot be converted to a map
// (reported when a template reads .Object).
func NewParams(op *Operation, plan *nacv1alpha1.PlanStatus) (Params, error) {
	p := Params{
		object:          &lazyObject{obj: op.Object},
		Namespace:       op.Object.GetNamespace(),
		Name:            op.Object.GetName(),
		NamespaceLabels: map[string]string{},
		OADPNamespace:   op.OADPNamespace,
		UUID:            op.UUID,
		Phases:          map[string]PhaseParams{},
	}
	maps.Copy(p.NamespaceLabels, op.NamespaceLabels)
	if plan.StartTime != nil {
		p.Time = plan.StartTime.UTC().Format("2006-01-02T15:04:05Z07:00")
	}
	for _, ph := range plan.Phases {
		if ph.State == nacv1alpha1.PhaseComplete {
			p.Phases[ph.Name] = PhaseParams{Output: ph.Output}
		}
	}
	if d := plan.DeferPhase; d != nil && d.State == nacv1alpha1.PhaseComplete {
		p.DeferPhase = &PhaseParams{Output: d.Output}
	}
	return p, nil
}

// templates caches parsed templates by source: blueprints are few and their
// templates run for every operation (a parsed template is safe for
// concurrent Execute).
var templates sync.Map

// newTemplate parses src with the allow-listed functions and
// missingkey=error, and instruments it, once per distinct source.
func newTemplate(src string) (*template.Template, error) {
	if t, ok := templates.Load(src); ok {
		return t.(*template.Template), nil
	}
	t, err := template.New("arg").Option("missingkey=error").Funcs(funcMap).Parse(src)
	if err != nil {
		return nil, err
	}
	instrument(t)
	templates.Store(src, t)
	return t, nil
}

// instrument puts an empty text node first in every template body and every
// range body of t: text/template writes it, so the renderBuffer counts a
// step for every template call and every range iteration — text/template
// has no other hook into its loops, and a range that writes nothing (nested
// ranges over until, or range over a number) would otherwise run unseen.
func instrument(t *template.Template) {
	done := map[*parse.ListNode]bool{}
	for _, tt := range t.Templates() {
		if tt.Tree != nil && tt.Root != nil && !done[tt.Root] {
			done[tt.Root] = true
			countSteps(tt.Root)
			prependStep(tt.Root)
		}
	}
}

// countSteps instruments the range bodies within l.
func countSteps(l *parse.ListNode) {
	if l == nil {
		return
	}
	for _, n := range l.Nodes {
		switch n := n.(type) {
		case *parse.RangeNode:
			countSteps(n.List)
			countSteps(n.ElseList)
			prependStep(n.List)
		case *parse.IfNode:
			countSteps(n.List)
			countSteps(n.ElseList)
		case *parse.WithNode:
			countSteps(n.List)
			countSteps(n.ElseList)
		case *parse.ListNode:
			countSteps(n)
		}
	}
}

func prependStep(l *parse.ListNode) {
	if l != nil {
		l.Nodes = append([]parse.Node{&parse.TextNode{NodeType: parse.NodeText, Pos: l.Pos}}, l.Nodes...)
	}
}

// parseTemplates parses every string in a decoded JSON value, so that a bad
// template is found when a plan is compiled rather than when it runs.
func parseTemplates(v any) error {
	switch t := v.(type) {
	case string:
		_, err := newTemplate(t)
		return err
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(t)) {
			if err := parseTemplates(t[k]); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
		}
	case []any:
		for i, e := range t {
			if err := parseTemplates(e); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
	}
	return nil
}

// RenderArgs is RenderArgsContext without a context of its own: only the
// render budget stops it.
func RenderArgs(args map[string]apiextensionsv1.JSON, p Params) (map[string]any, error) {
	return RenderArgsContext(context.Background(), args, p)
}

// RenderArgsContext renders every string in args as a template over p and
// returns the rendered args as plain JSON values. Non-string values pass
// through. It returns an error naming the arg when a template fails to
// parse or to execute (an unknown function, a missing key, a value past
// MaxValueSize, an output past MaxRenderedBytes); when the templates
// together go past MaxRenderSteps steps or RenderTimeout, an error wrapping
// ErrRenderBudget (the same blueprint would fail again: terminal); and when
// ctx is done, an error wrapping ctx.Err() (not the template's fault).
func RenderArgsContext(ctx context.Context, args map[string]apiextensionsv1.JSON, p Params) (map[string]any, error) {
	b := newBudget(ctx)
	out := make(map[string]any, len(args))
	for _, key := range slices.Sorted(maps.Keys(args)) {
		var v any
		if err := json.Unmarshal(args[key].Raw, &v); err != nil {
			return nil, fmt.Errorf("args.%s: %w", key, err)
		}
		r, err := renderValue(v, p, b)
		if err != nil {
			return nil, fmt.Errorf("args.%s: %w", key, err)
		}
		out[key] = r
	}
	return out, nil
}

func renderValue(v any, p Params, b *budget) (any, error) {
	switch t := v.(type) {
	case string:
		if !strings.Contains(t, "{{") {
			return t, nil
		}
		tpl, err := newTemplate(t)
		if err != nil {
			return nil, err
		}
		buf := renderBuffer{budget: b}
		if err := tpl.Execute(&buf, p); err != nil {
			return nil, err
		}
		return buf.String(), nil
	case map[string]any:
		m := make(map[string]any, len(t))
		for _, k := range slices.Sorted(maps.Keys(t)) {
			r, err := renderValue(t[k], p, b)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			m[k] = r
		}
		return m, nil
	case []any:
		l := make([]any, len(t))
		for i, e := range t {
			r, err := renderValue(e, p, b)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			l[i] = r
		}
		return l, nil
	default:
		return v, nil
	}
}

// ArgsValidator is implemented by argument structs that check their values
// beyond their types; DecodeArgs calls it after decoding.
type ArgsValidator interface {
	// Validate returns an error naming the arg that is wrong.
	Validate() error
}

// DecodeArgs decodes rendered args strictly into into, a pointer to a
// function's argument struct: an unknown arg name, a wrongly typed value, or
// a value the struct's Validate (ArgsValidator) refuses is an error.
func DecodeArgs(rendered map[string]any, into any) error {
	return decodeArgs(rendered, into, true)
}

// decodeArgs is DecodeArgs, with the ArgsValidator check only when validate.
func decodeArgs(rendered map[string]any, into any, validate bool) error {
	raw, err := json.Marshal(rendered)
	if err != nil {
		return fmt.Errorf("encoding args: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return fmt.Errorf("args: %w", err)
	}
	if v, ok := into.(ArgsValidator); ok && validate {
		if err := v.Validate(); err != nil {
			return fmt.Errorf("args: %w", err)
		}
	}
	return nil
}
