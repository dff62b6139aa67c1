package phases

import (
	"context"
	"reflect"

	"github.com/nacflow/nacflow/engine"
)

// phaseFunc is a phase function as this package writes it: Run takes the
// operation's NAC object already as the kind O the function serves
// (engine.Object for functions that serve every kind) and its decoded args
// as an *A, so no function repeats the assertions; Doc is its reference
// (`nac funcs`, docs/functions.md). bind makes it an engine.Func.
type phaseFunc[O engine.Object, A any] interface {
	Run(ctx context.Context, op *engine.Operation, obj O, a *A) (engine.Result, error)
	Doc() engine.FuncDoc
}

// bound is a phaseFunc as an engine.Func (see bind).
type bound[O engine.Object, A any] struct {
	name string
	fn   phaseFunc[O, A]
}

// boundExcepted is a bound function that declares safety-rule exceptions
// (engine.Excepted).
type boundExcepted[O engine.Object, A any] struct {
	bound[O, A]
	engine.Excepted
}

// bind returns fn as an engine.Func named by fn's Go type (the name
// blueprints use in a phase's func field: *CopySecret is "CopySecret"),
// whose NewArgs is a new *A and whose Run refuses, as a terminal error, an
// operation whose object is not an O. It is engine.Documented, and
// engine.Excepted when fn is.
func bind[O engine.Object, A any](fn phaseFunc[O, A]) engine.Func {
	b := bound[O, A]{name: reflect.TypeOf(fn).Elem().Name(), fn: fn}
	if e, ok := fn.(engine.Excepted); ok {
		return &boundExcepted[O, A]{bound: b, Excepted: e}
	}
	return &b
}

// Name implements engine.Func.
func (b *bound[O, A]) Name() string { return b.name }

// NewArgs implements engine.Func.
func (b *bound[O, A]) NewArgs() any { return new(A) }

// Doc implements engine.Documented.
func (b *bound[O, A]) Doc() engine.FuncDoc { return b.fn.Doc() }

// KeepsMessage implements engine.MessageKeeper for a function that does;
// false for the others.
func (b *bound[O, A]) KeepsMessage(message string) bool {
	k, ok := b.fn.(engine.MessageKeeper)
	return ok && k.KeepsMessage(message)
}

// Run implements engine.Func: it hands op.Object as an O and args as an *A
// to the function.
func (b *bound[O, A]) Run(ctx context.Context, op *engine.Operation, args any) (engine.Result, error) {
	obj, err := as[O](b.name, op)
	if err != nil {
		return engine.Result{}, err
	}
	return b.fn.Run(ctx, op, obj, args.(*A))
}
