package phases

import "github.com/nacflow/nacflow/engine"

// AsFunc returns fn as the registry gives it to the engine (unguarded), for
// tests that run a phase function through the engine.Func contract.
func AsFunc[O engine.Object, A any](fn phaseFunc[O, A]) engine.Func { return bind(fn) }
