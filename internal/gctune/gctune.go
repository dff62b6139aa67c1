// Package gctune sets the Go collector's GOGC from the size of the live
// heap, so that a controller with a small cache keeps collecting cheaply and
// one with a large cache stays small.
//
// GOGC is the heap's growth between collections as a percentage of the live
// heap: its CPU cost falls and its memory cost rises with it. A fixed value
// fits one size only. On nacflow's bench machine (make bench, issue 22),
// GOGC=25 instead of 50 took 17-40 % more CPU at 1,000 NonAdminBackups (a
// live heap of about 20 MB, collected very often) but cut the peak RSS at
// 10,000 (about 70 MB live) from 164 to 143 MiB for 5 % more CPU. The tuner
// gives each its value: the growth is Headroom bytes, as a percentage of the
// live heap, kept between MinPercent and MaxPercent.
package gctune

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Defaults of Tuner.
const (
	// DefaultHeadroom is the heap growth allowed between collections when
	// that is between the percentages: 16 MiB.
	DefaultHeadroom = 16 << 20
	// DefaultMinPercent is the GOGC of a large heap.
	DefaultMinPercent = 25
	// DefaultMaxPercent is the GOGC of a small heap (nacflow's fixed value
	// before the tuner).
	DefaultMaxPercent = 50
	// DefaultPeriod is how often the live heap is looked at.
	DefaultPeriod = time.Second
)

// Tuner sets GOGC from the live heap. Its zero value uses the defaults.
type Tuner struct {
	// Headroom is the growth between collections, in bytes.
	Headroom uint64
	// MinPercent and MaxPercent bound the GOGC set.
	MinPercent, MaxPercent int
	// Period is how often the live heap is read (runtime/metrics'
	// /gc/heap/live:bytes, as of the last collection) and GOGC set anew
	// when it changed.
	Period time.Duration
}

func (t Tuner) withDefaults() Tuner {
	if t.Headroom == 0 {
		t.Headroom = DefaultHeadroom
	}
	if t.MinPercent <= 0 {
		t.MinPercent = DefaultMinPercent
	}
	if t.MaxPercent < t.MinPercent {
		t.MaxPercent = max(DefaultMaxPercent, t.MinPercent)
	}
	if t.Period <= 0 {
		t.Period = DefaultPeriod
	}
	return t
}

// Percent returns the GOGC for a live heap of live bytes: Headroom as a
// percentage of live, between MinPercent and MaxPercent (MaxPercent when
// live is 0, before the first collection).
func (t Tuner) Percent(live uint64) int {
	t = t.withDefaults()
	if live == 0 {
		return t.MaxPercent
	}
	p := t.Headroom * 100 / live
	return int(min(max(p, uint64(t.MinPercent)), uint64(t.MaxPercent)))
}

// Run sets GOGC at once and then every Period until ctx ends. It sets the
// process-wide GOGC (debug.SetGCPercent): run one Tuner per process, and
// none when the user set $GOGC.
func (t Tuner) Run(ctx context.Context) {
	t = t.withDefaults()
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	current := -1
	tick := time.NewTicker(t.Period)
	defer tick.Stop()
	for {
		metrics.Read(sample)
		var live uint64
		if sample[0].Value.Kind() == metrics.KindUint64 {
			live = sample[0].Value.Uint64()
		}
		if p := t.Percent(live); p != current {
			debug.SetGCPercent(p)
			current = p
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
