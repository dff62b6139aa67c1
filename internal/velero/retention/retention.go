// Package retention decides which runs of a schedule a retention policy
// keeps: the last N, and the newest of each of the last N hours, days,
// weeks, months and years (grandfather-father-son, as Kasten K10,
// KubeStash and restic's forget define it), with failed runs kept apart.
// It is pure: the caller lists the runs and deletes what it is told.
package retention

import (
	"fmt"
	"sort"
	"time"
)

// Policy is a retention policy. Zero counts keep nothing by that rule; a
// Policy whose successful-run counts are all zero keeps every run (no
// policy).
type Policy struct {
	// KeepLast keeps the newest KeepLast successful runs.
	KeepLast int
	// Hourly, Daily, Weekly, Monthly and Yearly keep the newest successful
	// run of each of the newest that many hours, days, ISO weeks, months
	// and years (periods of the time zone) that have one.
	Hourly, Daily, Weekly, Monthly, Yearly int
	// FailedKeepLast keeps the newest FailedKeepLast failed runs (runs
	// that finished other than successfully); older ones are pruned.
	FailedKeepLast int
}

// Empty reports whether p has no rule for successful runs: then nothing is
// pruned.
func (p Policy) Empty() bool {
	return p.KeepLast == 0 && p.Hourly == 0 && p.Daily == 0 && p.Weekly == 0 && p.Monthly == 0 && p.Yearly == 0
}

// Run is one run of a schedule.
type Run struct {
	// Name identifies the run.
	Name string
	// Time is when it ran (its Velero Backup's creation).
	Time time.Time
	// Finished is true once Velero has finished it; Succeeded when it
	// Completed.
	Finished, Succeeded bool
	// InUse is true while something needs it (a restore from it that has
	// not ended): it is never pruned.
	InUse bool
}

// Decision is what Select decided for one run.
type Decision struct {
	Run
	// Keep is whether the run stays.
	Keep bool
	// Reasons says why it stays ("last 2", "daily 2026-11-01", "newest
	// successful", "in use", "running") or why it goes ("beyond the
	// policy").
	Reasons []string
}

// Select applies p to runs, in zone loc (nil: UTC), and returns a decision
// for each run, newest first. Never pruned, whatever p says: a run not
// finished, a run in use, and the newest successful run. An empty p keeps
// every run. Ties in time are ordered by name (the greater first).
func Select(runs []Run, p Policy, loc *time.Location) []Decision {
	if loc == nil {
		loc = time.UTC
	}
	out := make([]Decision, len(runs))
	for i, r := range runs {
		out[i] = Decision{Run: r}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Time.Equal(out[j].Time) {
			return out[i].Time.After(out[j].Time)
		}
		return out[i].Name > out[j].Name
	})
	keep := func(d *Decision, why string) {
		d.Keep = true
		d.Reasons = append(d.Reasons, why)
	}
	newestSuccess, failed := true, 0
	buckets := []struct {
		n      int
		name   string
		key    func(time.Time) string
		filled map[string]bool
	}{
		{p.Hourly, "hourly", func(t time.Time) string { return t.Format("2006-01-02 15h") }, map[string]bool{}},
		{p.Daily, "daily", func(t time.Time) string { return t.Format("2006-01-02") }, map[string]bool{}},
		{p.Weekly, "weekly", func(t time.Time) string { y, w := t.ISOWeek(); return fmt.Sprintf("%d-W%02d", y, w) }, map[string]bool{}},
		{p.Monthly, "monthly", func(t time.Time) string { return t.Format("2006-01") }, map[string]bool{}},
		{p.Yearly, "yearly", func(t time.Time) string { return t.Format("2006") }, map[string]bool{}},
	}
	last := 0
	for i := range out {
		d := &out[i]
		switch {
		case !d.Finished:
			keep(d, "running")
			continue
		case !d.Succeeded:
			failed++
			if failed <= p.FailedKeepLast || p.Empty() {
				keep(d, fmt.Sprintf("failed: last %d", p.FailedKeepLast))
			}
			if d.InUse {
				keep(d, "in use")
			}
			continue
		}
		if p.Empty() {
			keep(d, "no retention policy")
		}
		if newestSuccess {
			keep(d, "newest successful")
			newestSuccess = false
		}
		if last < p.KeepLast {
			last++
			keep(d, fmt.Sprintf("last %d", p.KeepLast))
		}
		local := d.Time.In(loc)
		for b := range buckets {
			bk := &buckets[b]
			k := bk.key(local)
			if bk.n == 0 || bk.filled[k] || len(bk.filled) >= bk.n {
				continue
			}
			bk.filled[k] = true
			keep(d, bk.name+" "+k)
		}
		if d.InUse {
			keep(d, "in use")
		}
	}
	for i := range out {
		if !out[i].Keep {
			out[i].Reasons = []string{"beyond the policy"}
		}
	}
	return out
}

// Prunable returns the names of the runs decisions prune, oldest first.
func Prunable(decisions []Decision) []string {
	var names []string
	for i := len(decisions) - 1; i >= 0; i-- {
		if !decisions[i].Keep {
			names = append(names, decisions[i].Name)
		}
	}
	return names
}
