package testwait

import (
	"testing"
	"time"
)

func TestScale(t *testing.T) {
	for value, want := range map[string]float64{"": DefaultScale, "5": 5, "1.5": 1.5, "1": 1, "0.5": DefaultScale, "-2": DefaultScale, "x": DefaultScale} {
		t.Setenv(EnvScale, value)
		if got := Scale(); got != want {
			t.Errorf("%s=%q: Scale() = %v, want %v", EnvScale, value, got, want)
		}
	}
	t.Setenv(EnvScale, "2.5")
	if got := Bound(10 * time.Second); got != 25*time.Second {
		t.Errorf("Bound(10s) at scale 2.5 = %s, want 25s", got)
	}
}

func TestPause(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct{ base, limit, waited, took, want time.Duration }{
		{100 * ms, time.Second, 0, ms, 100 * ms},               // at first: the base
		{100 * ms, time.Second, 3 * time.Second, ms, 400 * ms}, // a tenth of the wait added
		{100 * ms, time.Second, time.Minute, ms, time.Second},  // at most the limit
		{100 * ms, time.Second, 0, 700 * ms, 700 * ms},         // never less than the check took
		{100 * ms, time.Second, time.Minute, 3 * time.Second, 3 * time.Second},
	} {
		if got := Pause(c.base, c.limit, c.waited, c.took); got != c.want {
			t.Errorf("Pause(%s, %s, %s, %s) = %s, want %s", c.base, c.limit, c.waited, c.took, got, c.want)
		}
	}
}
