// Package testwait holds the one knob of the tests' waits: how much longer
// than its nominal bound a test waits for something that must happen
// eventually. A loaded machine (a cold build beside the tests, a CI runner
// with neighbours) is slower, never wrong; the bound only decides how long a
// test that fails takes to say so.
package testwait

import (
	"os"
	"strconv"
	"time"
)

// EnvScale names the environment variable that sets Scale.
const EnvScale = "NACFLOW_TEST_TIMEOUT_SCALE"

// DefaultScale is Scale when EnvScale is unset or not a number ≥ 1.
const DefaultScale = 3

// Scale returns the factor of every eventually-style bound: $NACFLOW_TEST_TIMEOUT_SCALE
// when it is a number ≥ 1 (fractions allowed), else DefaultScale.
func Scale() float64 {
	if f, err := strconv.ParseFloat(os.Getenv(EnvScale), 64); err == nil && f >= 1 {
		return f
	}
	return DefaultScale
}

// Bound returns d×Scale(): how long to wait for what nominally takes up to
// d. Only bounds of "it happens" scale; a check that something happens
// before a deadline (woken within 4 s, not at the 2-minute recheck) times
// it itself.
func Bound(d time.Duration) time.Duration {
	return time.Duration(float64(d) * Scale())
}

// Pause returns how long a poll loop sleeps before its next check: base
// (its shortest pause) plus a tenth of how long it has waited so far, at
// most limit, and never less than its last check took. Something that
// happens soon is seen soon; a long wait polls less often (a check late
// by at most a tenth of the wait); and a loop whose check is itself
// expensive (many API calls, a kubectl process) spends at most half of its
// time checking. On a machine where every package's tests share two cores,
// a tight poll is load the other packages wait behind.
func Pause(base, limit, waited, took time.Duration) time.Duration {
	return max(min(base+waited/10, limit), took)
}
