package engine

import "time"

// SetRenderTimeout sets the time budget of RenderArgs to d until the
// returned func restores it, so that a test of the budget runs in
// milliseconds (gocheck runs the tests of a package one at a time).
func SetRenderTimeout(d time.Duration) (restore func()) {
	old := renderTimeout
	renderTimeout = d
	return func() { renderTimeout = old }
}
