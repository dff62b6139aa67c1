// Package gctune sets the Go collector's GOGC and soft memory limit so that
// a controller with a small cache collects cheaply and one with a large cache
// stays within a memory budget without collecting all the time.
//
// GOGC is the heap's growth between collections as a percentage of the live
// heap: its CPU cost falls and its memory cost rises with it. The soft memory
// limit (Go's GOMEMLIMIT, runtime/debug.SetMemoryLimit) makes the runtime
// collect earlier when the Go memory (heap, stacks and runtime metadata; not
// the binary's mapped code) nears it, whatever GOGC allows.
//
// The Tuner sets GOGC to Percent (50) and the limit to Budget, but never
// lower than the live heap plus MinPercent (25 %) of growth plus the memory
// outside the heap: a large cache is then collected as at GOGC=25 rather
// than continuously (a fixed limit below the live heap makes the runtime
// spend up to half the CPU on collection). By default the Budget is what a
// resident set of Resident (150 MiB) leaves once the binary's own resident
// pages are taken out, as measured (Linux's RssFile, read every Period; 112
// MiB where it cannot be read): the code the process touches grows with the
// features it links, and a fixed Go budget would let the resident set grow
// with it.
//
// A budget rather than a GOGC derived from the live heap alone: the
// latter collects hard from a fixed heap size whether or not the memory is
// near its bound, and costs CPU for nothing (docs/performance.md has the
// figures).
package gctune

import (
	"bytes"
	"context"
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"time"
)

// Defaults of Tuner.
const (
	// DefaultPercent is the GOGC set (nacflow's value before the tuner).
	DefaultPercent = 50
	// DefaultResident is the resident-set budget the soft limit is derived
	// from by default: 150 MiB, less the binary's resident pages.
	DefaultResident = 150 << 20
	// DefaultBudget is the soft limit on the Go memory where the binary's
	// resident pages cannot be read (not Linux): 112 MiB, which with about
	// 38 MiB of mapped code and data keeps the resident set near 150 MiB.
	DefaultBudget = 112 << 20
	// minBudget is the least Go budget a Resident leaves, however much of
	// it the binary's pages take (a floor against a misread figure).
	minBudget = 64 << 20
	// DefaultMinPercent is the least growth above the live heap, in
	// percent, that the limit leaves.
	DefaultMinPercent = 25
	// DefaultPeriod is how often the live heap is looked at.
	DefaultPeriod = time.Second
)

// Leave, as Tuner.Percent or Tuner.Budget, leaves that setting to the Go
// runtime (what $GOGC or $GOMEMLIMIT set, or Go's default).
const Leave = -1

// Tuner sets GOGC and the soft memory limit. Its zero value uses the
// defaults.
type Tuner struct {
	// Percent is the GOGC set once at the start (0: DefaultPercent;
	// Leave: not set).
	Percent int
	// Budget is the soft memory limit in bytes when the live heap leaves
	// room under it (0: Resident less the binary's resident pages; Leave:
	// no limit is set).
	Budget int64
	// Resident is the resident-set budget in bytes that a zero Budget is
	// derived from every Period: Resident less the process's file-backed
	// resident pages (/proc/self/status RssFile: the binary's code and
	// data), but not below 64 MiB; DefaultBudget where that cannot be read
	// (0: DefaultResident).
	Resident int64
	// fileResident reads the process's file-backed resident bytes (nil:
	// /proc/self/status); ok is false where it cannot.
	fileResident func() (bytes int64, ok bool)
	// MinPercent is the least growth above the live heap, in percent of
	// it, the limit leaves (0: DefaultMinPercent).
	MinPercent int
	// Period is how often the live heap is read (runtime/metrics'
	// /gc/heap/live:bytes, as of the last collection) and the limit set
	// anew when it changed (0: DefaultPeriod).
	Period time.Duration
}

func (t Tuner) withDefaults() Tuner {
	if t.Percent == 0 {
		t.Percent = DefaultPercent
	}
	if t.Resident <= 0 {
		t.Resident = DefaultResident
	}
	if t.MinPercent <= 0 {
		t.MinPercent = DefaultMinPercent
	}
	if t.Period <= 0 {
		t.Period = DefaultPeriod
	}
	return t
}

// budget returns the Go budget in bytes: Budget when set, else Resident
// less the binary's resident pages (DefaultBudget when they cannot be read).
func (t Tuner) budget() int64 {
	if t.Budget != 0 {
		return t.Budget
	}
	read := t.fileResident
	if read == nil {
		read = procFileResident
	}
	file, ok := read()
	if !ok {
		return DefaultBudget
	}
	return max(t.Resident-file, minBudget)
}

// procFileResident reads RssFile (kB) from /proc/self/status: the
// process's resident pages backed by files, which for a static Go binary are
// its code and read-only data. ok is false where there is no such line.
func procFileResident() (int64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	return parseRssFile(b)
}

// parseRssFile returns the RssFile line of a /proc/PID/status in bytes.
func parseRssFile(status []byte) (int64, bool) {
	for line := range bytes.Lines(status) {
		rest, found := bytes.CutPrefix(line, []byte("RssFile:"))
		if !found {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil || kb < 0 || kb > math.MaxInt64>>10 {
			return 0, false
		}
		return kb << 10, true
	}
	return 0, false
}

// Limit returns the soft memory limit in bytes for a live heap of live
// bytes and nonHeap bytes of Go memory outside the heap (stacks, runtime
// metadata): the budget (Budget, or what Resident leaves), or live plus
// MinPercent of it plus nonHeap when that is more. It returns
// math.MaxInt64 (no limit) when Budget is Leave.
func (t Tuner) Limit(live, nonHeap uint64) int64 {
	t = t.withDefaults()
	if t.Budget < 0 {
		return math.MaxInt64
	}
	// Past a quarter of the int64 range there is no limit to speak of;
	// below it the sum cannot overflow.
	const huge = math.MaxInt64 / 4
	m := uint64(t.MinPercent)
	if live > huge/(100+m)*100 || nonHeap > huge {
		return math.MaxInt64
	}
	floor := live + live/100*m + live%100*m/100 + nonHeap
	return max(t.budget(), int64(floor))
}

// The runtime/metrics samples Run reads: the live heap, and what the soft
// memory limit counts (all of the Go memory less what was returned to the
// OS) split into the heap's classes and the rest.
var samples = []string{
	"/gc/heap/live:bytes",
	"/memory/classes/total:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
}

// Run sets GOGC at once, then the soft memory limit at once and every
// Period until ctx ends. It sets process-wide values
// (debug.SetGCPercent, debug.SetMemoryLimit): run one Tuner per process,
// with Leave for what the user set ($GOGC, $GOMEMLIMIT).
func (t Tuner) Run(ctx context.Context) {
	t = t.withDefaults()
	if t.Percent > 0 {
		debug.SetGCPercent(t.Percent)
	}
	if t.Budget < 0 {
		return
	}
	s := make([]metrics.Sample, len(samples))
	for i, name := range samples {
		s[i].Name = name
	}
	var current int64 = -1
	v := make([]uint64, len(s))
	tick := time.NewTicker(t.Period)
	defer tick.Stop()
	for {
		metrics.Read(s)
		for i := range s {
			v[i] = 0
			if s[i].Value.Kind() == metrics.KindUint64 {
				v[i] = s[i].Value.Uint64()
			}
		}
		live, total, released := v[0], v[1], v[2]
		var nonHeap uint64
		if heap := released + v[3] + v[4] + v[5]; total > heap {
			nonHeap = total - heap
		}
		if l := t.Limit(live, nonHeap); l != current {
			debug.SetMemoryLimit(l)
			current = l
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
