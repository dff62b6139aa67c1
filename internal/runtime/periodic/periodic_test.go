package periodic_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/internal/runtime/periodic"
)

// Test hooks gocheck into go test.
func Test(t *testing.T) { TestingT(t) }

type LoopSuite struct{}

var _ = Suite(&LoopSuite{})

func (s *LoopSuite) TestPeriodicLoops(c *C) {
	passes := 0
	off := &periodic.Loop{Name: "off", Period: 0, Pass: func(context.Context) error { passes++; return nil }}
	c.Check(off.Start(context.Background()), IsNil)
	c.Check(passes, Equals, 0, Commentf("period 0 disables the loop"))

	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{}, 10)
	on := &periodic.Loop{Name: "on", Period: 10 * time.Millisecond, Pass: func(context.Context) error {
		ran <- struct{}{}
		return fmt.Errorf("a failing pass does not stop the loop")
	}}
	done := make(chan error)
	go func() { done <- on.Start(ctx) }()
	<-ran
	<-ran
	cancel()
	c.Check(<-done, IsNil)

	// Nor does a panicking one: passes read what comes back from tenants'
	// buckets, and the manager must go on for every other tenant.
	ctx, cancel = context.WithCancel(context.Background())
	panics := &periodic.Loop{Name: "panics", Period: 10 * time.Millisecond, Pass: func(context.Context) error {
		ran <- struct{}{}
		var m map[string]string
		m["boom"] = "x"
		return nil
	}}
	go func() { done <- panics.Start(ctx) }()
	<-ran
	<-ran
	cancel()
	c.Check(<-done, IsNil)
}

// A loop whose period comes from a PeriodFunc (a DPA's backupSyncPeriod)
// follows it while running: disabled, then enabled, then disabled again,
// without a restart.
func (s *LoopSuite) TestPeriodicLoopFollowsItsSetting(c *C) {
	var mu sync.Mutex
	period := time.Duration(0)
	setPeriod := func(d time.Duration) { mu.Lock(); period = d; mu.Unlock() }
	ran := make(chan struct{}, 100)
	p := &periodic.Loop{Name: "dynamic", Recheck: 10 * time.Millisecond,
		PeriodFunc: func(context.Context) (time.Duration, string) { mu.Lock(); defer mu.Unlock(); return period, "test" },
		Pass:       func(context.Context) error { ran <- struct{}{}; return nil }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Start(ctx) }()

	select {
	case <-ran:
		c.Fatal("a disabled loop ran a pass")
	case <-time.After(100 * time.Millisecond):
	}
	setPeriod(20 * time.Millisecond)
	for range 3 {
		select {
		case <-ran:
		case <-time.After(5 * time.Second):
			c.Fatal("the enabled loop runs no pass")
		}
	}
	setPeriod(0)
	time.Sleep(50 * time.Millisecond)
	for len(ran) > 0 {
		<-ran
	}
	select {
	case <-ran:
		c.Fatal("a loop disabled again still runs")
	case <-time.After(100 * time.Millisecond):
	}
	cancel()
	c.Check(<-done, IsNil)
}
