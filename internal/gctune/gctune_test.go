package gctune_test

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/internal/gctune"
)

func Test(t *testing.T) { TestingT(t) }

type TunerSuite struct{}

var _ = Suite(&TunerSuite{})

// The growth is the headroom as a share of the live heap, within the
// bounds: a small heap gets the most, a large one the least.
func (s *TunerSuite) TestPercent(c *C) {
	t := gctune.Tuner{}
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, 50},         // before the first collection
		{20 << 20, 50},  // 1,000 NABs: 80 % would be more than the most
		{32 << 20, 50},  // exactly 16 MiB of 32
		{40 << 20, 40},  // 16 of 40
		{64 << 20, 25},  // exactly the least
		{128 << 20, 25}, // 12.5 % would be less than the least
	} {
		c.Check(t.Percent(tc.live), Equals, tc.want, Commentf("live %d MiB", tc.live>>20))
	}
	custom := gctune.Tuner{Headroom: 100, MinPercent: 10, MaxPercent: 200}
	c.Check(custom.Percent(40), Equals, 200)
	c.Check(custom.Percent(100), Equals, 100)
	c.Check(custom.Percent(10000), Equals, 10)
}

// Run sets the process's GOGC from its live heap, and stops with its
// context.
func (s *TunerSuite) TestRunSets(c *C) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	// A headroom of 1 byte: any live heap gets the least.
	go func() {
		gctune.Tuner{Headroom: 1, MinPercent: 7, MaxPercent: 9, Period: time.Millisecond}.Run(ctx)
		close(done)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for gogc() != 7 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	c.Check(gogc(), Equals, uint64(7))
}

// gogc reads the process's GOGC without changing it.
func gogc() uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
