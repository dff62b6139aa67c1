package gctune_test

import (
	"context"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/internal/runtime/gctune"
)

func Test(t *testing.T) { TestingT(t) }

type TunerSuite struct{}

var _ = Suite(&TunerSuite{})

// The limit is the budget while the live heap leaves its least growth
// under it, and follows the live heap above that.
func (s *TunerSuite) TestLimit(c *C) {
	const mib = 1 << 20
	// The binary's resident pages: 38 MiB of a 150 MiB resident budget
	// leave 112 MiB to the Go memory.
	t := gctune.WithFileResident(gctune.Tuner{}, func() (int64, bool) { return 38 * mib, true })
	for _, tc := range []struct {
		live, nonHeap uint64
		want          int64
	}{
		{0, 0, 112 * mib},                // before the first collection
		{20 * mib, 8 * mib, 112 * mib},   // 1,000 NABs
		{65 * mib, 10 * mib, 112 * mib},  // 10,000 NABs: 65 + 16.25 + 10 is under it
		{80 * mib, 12 * mib, 112 * mib},  // exactly: 80 + 20 + 12
		{200 * mib, 12 * mib, 262 * mib}, // a large cache: 25 % above it, never less
	} {
		c.Check(t.Limit(tc.live, tc.nonHeap), Equals, tc.want, Commentf("live %d MiB", tc.live>>20))
	}
	custom := gctune.Tuner{Budget: 1000, MinPercent: 10}
	c.Check(custom.Limit(100, 0), Equals, int64(1000))
	c.Check(custom.Limit(1000, 5), Equals, int64(1105))
	c.Check(gctune.Tuner{Budget: gctune.Leave}.Limit(100, 0), Equals, int64(math.MaxInt64))
	// No overflow, however large the figures.
	c.Check(t.Limit(math.MaxUint64/2, 0), Equals, int64(math.MaxInt64))
	c.Check(t.Limit(math.MaxUint64, math.MaxUint64), Equals, int64(math.MaxInt64))
	c.Check(t.Limit(0, math.MaxUint64), Equals, int64(math.MaxInt64))
	c.Check(t.Limit(1<<60, 0), Equals, int64(1<<60+1<<58)) // 25 % above, exactly
	c.Check(custom.Limit(199, 0), Equals, int64(1000))
	c.Check(gctune.Tuner{Budget: 1, MinPercent: 25}.Limit(199, 1), Equals, int64(199+49+1))
}

// By default the budget is what the resident budget leaves once the
// binary's resident pages, as read, are taken out: more code, less heap.
func (s *TunerSuite) TestBudgetFollowsTheBinary(c *C) {
	const mib = 1 << 20
	file := func(n int64, ok bool) func() (int64, bool) { return func() (int64, bool) { return n, ok } }
	c.Check(gctune.WithFileResident(gctune.Tuner{}, file(42*mib, true)).Limit(0, 0), Equals, int64(108*mib))
	c.Check(gctune.WithFileResident(gctune.Tuner{}, file(30*mib, true)).Limit(0, 0), Equals, int64(120*mib))
	c.Check(gctune.WithFileResident(gctune.Tuner{Resident: 200 * mib}, file(42*mib, true)).Limit(0, 0), Equals, int64(158*mib))
	c.Check(gctune.WithFileResident(gctune.Tuner{}, file(0, false)).Limit(0, 0), Equals, int64(gctune.DefaultBudget),
		Commentf("unreadable (not Linux): the fixed budget"))
	c.Check(gctune.WithFileResident(gctune.Tuner{}, file(140*mib, true)).Limit(0, 0), Equals, int64(64*mib),
		Commentf("never below 64 MiB"))
	c.Check(gctune.WithFileResident(gctune.Tuner{Budget: 90 * mib}, file(42*mib, true)).Limit(0, 0), Equals, int64(90*mib),
		Commentf("a Budget set wins"))
	c.Check(gctune.WithFileResident(gctune.Tuner{}, file(42*mib, true)).Limit(100*mib, 0), Equals, int64(125*mib),
		Commentf("the floor above the live heap still holds"))
}

// RssFile is read from a /proc/PID/status in kB; anything else is unread.
func (s *TunerSuite) TestParseRssFile(c *C) {
	for _, tc := range []struct {
		status string
		want   int64
		ok     bool
	}{
		{"Name:\tnac\nRssAnon:\t  81234 kB\nRssFile:\t  43008 kB\nRssShmem:\t0 kB\n", 43008 << 10, true},
		{"RssFile: 0 kB", 0, true},
		{"Name:\tnac\n", 0, false},
		{"RssFile:\t12 MB\n", 0, false},
		{"RssFile:\t-1 kB\n", 0, false},
		{"RssFile:\t99999999999999999999 kB\n", 0, false},
		{"RssFile:\t9007199254740993 kB\n", 0, false},
		{"RssFile:\n", 0, false},
		{"", 0, false},
	} {
		got, ok := gctune.ParseRssFile([]byte(tc.status))
		c.Check(ok, Equals, tc.ok, Commentf("%q", tc.status))
		c.Check(got, Equals, tc.want, Commentf("%q", tc.status))
	}
	// On this machine (Linux), the test binary's own figure is read.
	if runtime.GOOS == "linux" {
		b, err := os.ReadFile("/proc/self/status")
		c.Assert(err, IsNil)
		n, ok := gctune.ParseRssFile(b)
		c.Check(ok, Equals, true)
		c.Check(n > 0, Equals, true, Commentf("a running binary has resident code"))
	}
}

// Run sets the process's GOGC and soft memory limit, and stops with its
// context.
func (s *TunerSuite) TestRunSets(c *C) {
	oldGOGC := debug.SetGCPercent(100)
	defer debug.SetGCPercent(oldGOGC)
	oldLimit := debug.SetMemoryLimit(math.MaxInt64)
	defer debug.SetMemoryLimit(oldLimit)
	runtime.GC() // a live heap to read, and no collection due soon
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	// A budget of 1 byte: the limit is the floor over the live heap.
	go func() {
		gctune.Tuner{Percent: 7, Budget: 1, MinPercent: 30, Period: time.Millisecond}.Run(ctx)
		close(done)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for (gogc() != 7 || debug.SetMemoryLimit(-1) == math.MaxInt64) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	c.Check(gogc(), Equals, uint64(7))
	limit, live := debug.SetMemoryLimit(-1), liveHeap()
	// The floor: 30 % above the live heap, plus what is outside the heap.
	c.Check(limit < math.MaxInt64, Equals, true)
	c.Check(uint64(limit) >= live*13/10, Equals, true, Commentf("limit %d, live %d", limit, live))
}

// With Leave for both, Run changes neither setting.
func (s *TunerSuite) TestRunLeaves(c *C) {
	oldGOGC := debug.SetGCPercent(77)
	defer debug.SetGCPercent(oldGOGC)
	oldLimit := debug.SetMemoryLimit(123 << 20)
	defer debug.SetMemoryLimit(oldLimit)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	gctune.Tuner{Percent: gctune.Leave, Budget: gctune.Leave, Period: time.Millisecond}.Run(ctx)
	c.Check(gogc(), Equals, uint64(77))
	c.Check(debug.SetMemoryLimit(-1), Equals, int64(123<<20))
}

// gogc reads the process's GOGC without changing it.
func gogc() uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// liveHeap reads the live heap as of the last collection.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
