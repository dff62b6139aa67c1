package retention_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/internal/velero/retention"
)

func Test(t *testing.T) { TestingT(t) }

type RetentionSuite struct{}

var _ = Suite(&RetentionSuite{})

// history returns n successful runs every step before end (newest at
// end), named r<index>, oldest r0.
func history(end time.Time, step time.Duration, n int) []retention.Run {
	runs := make([]retention.Run, n)
	for i := range runs {
		t := end.Add(-time.Duration(n-1-i) * step)
		runs[i] = retention.Run{Name: fmt.Sprintf("r%03d", i), Time: t, Finished: true, Succeeded: true}
	}
	return runs
}

// kept returns the names of the kept runs, newest first.
func kept(ds []retention.Decision) []string {
	var out []string
	for _, d := range ds {
		if d.Keep {
			out = append(out, d.Name)
		}
	}
	return out
}

// TestKeepLast: the newest N successful runs stay; the rest go, oldest
// first.
func (s *RetentionSuite) TestKeepLast(c *C) {
	runs := history(time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC), time.Minute, 4)
	ds := retention.Select(runs, retention.Policy{KeepLast: 2}, nil)
	c.Check(kept(ds), DeepEquals, []string{"r003", "r002"})
	c.Check(retention.Prunable(ds), DeepEquals, []string{"r000", "r001"})
	c.Check(ds[0].Reasons, DeepEquals, []string{"newest successful", "last 2"})
	c.Check(ds[3].Reasons, DeepEquals, []string{"beyond the policy"})
}

// TestGFS: hourly runs over 400 days with 24 hourly, 7 daily, 4 weekly, 12
// monthly and 2 yearly keep the newest of each period, each run kept once
// whatever the number of rules that keep it.
func (s *RetentionSuite) TestGFS(c *C) {
	end := time.Date(2026, 11, 26, 23, 0, 0, 0, time.UTC)
	runs := history(end, time.Hour, 400*24)
	ds := retention.Select(runs, retention.Policy{Hourly: 24, Daily: 7, Weekly: 4, Monthly: 12, Yearly: 2}, nil)
	keep := kept(ds)
	// 24 hours (today 00:00-23:00), 6 more days (newest run of each is
	// 23:00), weeks and months whose newest run is not already kept, years.
	c.Check(slices.Contains(keep, runs[len(runs)-1].Name), Equals, true)
	count := func(prefix string) int {
		n := 0
		for _, d := range ds {
			for _, r := range d.Reasons {
				if len(r) > len(prefix) && r[:len(prefix)] == prefix {
					n++
				}
			}
		}
		return n
	}
	c.Check(count("hourly "), Equals, 24)
	c.Check(count("daily "), Equals, 7)
	c.Check(count("weekly "), Equals, 4)
	c.Check(count("monthly "), Equals, 12)
	c.Check(count("yearly "), Equals, 2)
	// Daily keeps 23:00 of each of the last 7 days; the 7th is Nov 20.
	for _, d := range ds {
		for _, r := range d.Reasons {
			if r == "daily 2026-11-20" {
				c.Check(d.Time, Equals, time.Date(2026, 11, 20, 23, 0, 0, 0, time.UTC))
			}
		}
	}
	// Yearly: 2026's newest (the newest run) and 2025's newest (Dec 31 23:00).
	for _, d := range ds {
		for _, r := range d.Reasons {
			if r == "yearly 2025" {
				c.Check(d.Time, Equals, time.Date(2025, 12, 31, 23, 0, 0, 0, time.UTC))
			}
		}
	}
	c.Check(len(keep) < 24+7+4+12+2, Equals, true, Commentf("a run kept by several rules counts once: %d", len(keep)))
	c.Check(len(keep)+len(retention.Prunable(ds)), Equals, len(runs))
}

// TestDaylightSaving: runs at 07:00 and 19:30 New York time, across the end
// of daylight saving (1 November 2026), keep with daily: 7 the evening run
// of each local day — bucketed in UTC, after the change 19:30 EST falls on
// the next UTC day and the morning runs would be kept instead — and hourly
// runs across the repeated hour 01:00-01:59 keep one run for that
// wall-clock hour.
func (s *RetentionSuite) TestDaylightSaving(c *C) {
	ny, err := time.LoadLocation("America/New_York")
	c.Assert(err, IsNil)
	var runs []retention.Run
	for day := 27; day <= 31+5; day++ { // 27 Oct to 5 Nov
		for _, hm := range [][2]int{{7, 0}, {19, 30}} {
			t := time.Date(2026, 10, day, hm[0], hm[1], 0, 0, ny)
			runs = append(runs, retention.Run{Name: t.Format("01-02 15:04"), Time: t, Finished: true, Succeeded: true})
		}
	}
	ds := retention.Select(runs, retention.Policy{Daily: 7}, ny)
	c.Check(kept(ds), DeepEquals, []string{"11-05 19:30", "11-04 19:30", "11-03 19:30", "11-02 19:30", "11-01 19:30", "10-31 19:30", "10-30 19:30"})
	utc := retention.Select(runs, retention.Policy{Daily: 7}, time.UTC)
	c.Check(kept(utc), DeepEquals, []string{"11-05 19:30", "11-05 07:00", "11-04 07:00", "11-03 07:00", "11-02 07:00", "11-01 07:00", "10-31 19:30"},
		Commentf("in UTC the evening runs after the change belong to the next day"))

	// Every 30 minutes through the night of 1 November: 01:00 and 01:30
	// happen twice (EDT, then EST).
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, ny)
	runs = nil
	for i := range 8 {
		t := start.Add(time.Duration(i) * 30 * time.Minute)
		runs = append(runs, retention.Run{Name: fmt.Sprintf("h%d", i), Time: t, Finished: true, Succeeded: true})
	}
	ds = retention.Select(runs, retention.Policy{Hourly: 10}, ny)
	var hours []string
	for _, d := range ds {
		if d.Keep {
			hours = append(hours, d.Time.In(ny).Format("15:04 MST"))
		}
	}
	// 00:00 00:30 01:00EDT 01:30EDT 01:00EST 01:30EST 02:00 02:30: wall
	// clock hours 00, 01, 02; the newest run of each.
	c.Check(hours, DeepEquals, []string{"02:30 EST", "01:30 EST", "00:30 EDT"})
}

// TestNeverPruned: the newest successful run, runs in use and runs not
// finished stay whatever the policy; failed runs are kept apart.
func (s *RetentionSuite) TestNeverPruned(c *C) {
	end := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	runs := history(end, time.Minute, 6)
	runs[5].Finished, runs[5].Succeeded = false, false // running now
	runs[4].Succeeded = false                          // failed
	runs[3].Succeeded = false                          // failed
	runs[0].InUse = true                               // a restore reads it
	ds := retention.Select(runs, retention.Policy{KeepLast: 1, FailedKeepLast: 1}, nil)
	c.Check(kept(ds), DeepEquals, []string{"r005", "r004", "r002", "r000"})
	c.Check(retention.Prunable(ds), DeepEquals, []string{"r001", "r003"})

	// Only failed runs since the last success: that success stays.
	runs = history(end, time.Minute, 3)
	runs[1].Succeeded, runs[2].Succeeded = false, false
	ds = retention.Select(runs, retention.Policy{KeepLast: 1}, nil)
	c.Check(kept(ds), DeepEquals, []string{"r000"})
	c.Check(ds[2].Reasons, DeepEquals, []string{"newest successful", "last 1"})

	// No policy: nothing goes.
	ds = retention.Select(history(end, time.Minute, 5), retention.Policy{}, nil)
	c.Check(retention.Prunable(ds), HasLen, 0)
}

// TestGenerated: over generated histories and policies, every run is kept
// or pruned, the newest successful and unfinished runs are kept, and the
// kept successful runs are at most the sum of the policy's counts plus one.
func (s *RetentionSuite) TestGenerated(c *C) {
	end := time.Date(2026, 3, 8, 12, 0, 0, 0, time.UTC) // US spring forward
	ny, _ := time.LoadLocation("America/New_York")
	for seed := range 50 {
		n := 1 + seed*7%90
		runs := history(end, time.Duration(1+seed%5)*37*time.Minute, n)
		for i := range runs {
			switch (i * (seed + 3)) % 11 {
			case 0:
				runs[i].Succeeded = false
			case 1:
				runs[i].InUse = true
			}
		}
		p := retention.Policy{KeepLast: seed % 3, Hourly: seed % 4, Daily: seed % 5, Weekly: seed % 2, Monthly: seed % 3, FailedKeepLast: seed % 2}
		ds := retention.Select(runs, p, ny)
		c.Assert(ds, HasLen, n)
		newest := ""
		keptOK := 0
		for _, d := range ds {
			if d.Succeeded && newest == "" {
				newest = d.Name
				c.Check(d.Keep, Equals, true, Commentf("seed %d: newest successful %s", seed, d.Name))
			}
			if d.InUse || !d.Finished {
				c.Check(d.Keep, Equals, true, Commentf("seed %d: %s", seed, d.Name))
			}
			if d.Keep && d.Succeeded && !d.InUse {
				keptOK++
			}
		}
		if !p.Empty() {
			c.Check(keptOK <= 1+p.KeepLast+p.Hourly+p.Daily+p.Weekly+p.Monthly+p.Yearly, Equals, true, Commentf("seed %d: %d kept", seed, keptOK))
		}
	}
}
