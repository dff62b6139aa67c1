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
