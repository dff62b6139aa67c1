// Package periodic runs a manager Runnable that does one pass of work at a
// period, such as backup sync and garbage collection.
package periodic

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"
)

// DefaultRecheck is how often a Loop with a PeriodFunc looks at
// its period again between passes (and while disabled), so that a changed
// setting applies within it.
const DefaultRecheck = 30 * time.Second

// Loop runs Pass every Period until its context ends. It is a manager
// Runnable that needs leader election (the default), so only the leader runs
// it. A period of 0 disables it.
//
// With PeriodFunc the period is resolved again at least every Recheck (the
// DataProtectionApplication's backupSyncPeriod or garbageCollectionPeriod
// may change while nac runs): a pass runs once Period has passed since the
// last one, and a disabled loop waits for a non-zero period. Without it,
// Period is fixed and a period of 0 makes Start return at once.
type Loop struct {
	// Name names the loop in logs.
	Name string
	// Period between passes; 0 disables the loop. Ignored with PeriodFunc.
	Period time.Duration
	// PeriodFunc, when set, returns the period in force and where it comes
	// from (logged when either changes).
	PeriodFunc func(context.Context) (time.Duration, string)
	// Recheck is how often PeriodFunc is asked again (DefaultRecheck
	// when 0).
	Recheck time.Duration
	// Pass does one pass; its error is logged and the next pass runs on time.
	// A panic in it is recovered and logged as an error like a failed pass
	// (as controller-runtime's RecoverPanic does for reconcilers): passes
	// read objects that come back from tenants' buckets, and one bad object
	// must not stop the manager for every tenant.
	Pass func(context.Context) error
}

// pass runs p.Pass, turning a panic into an error that holds its value and
// stack.
func (p *Loop) pass(ctx context.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("pass panicked: %v\n%s", r, debug.Stack())
		}
	}()
	return p.Pass(ctx)
}

// Start implements manager.Runnable.
func (p *Loop) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithValues("loop", p.Name)
	if p.PeriodFunc == nil {
		if p.Period <= 0 {
			logger.Info("disabled (period 0)")
			return nil
		}
		p.PeriodFunc = func(context.Context) (time.Duration, string) { return p.Period, "" }
	}
	recheck := p.Recheck
	if recheck <= 0 {
		recheck = DefaultRecheck
	}
	var (
		last       time.Time // of the last pass; zero: none yet
		logged     string
		loggedOnce bool
	)
	for {
		period, source := p.PeriodFunc(ctx)
		if key := period.String() + " " + source; !loggedOnce || key != logged {
			loggedOnce, logged = true, key
			if period <= 0 {
				logger.Info("disabled (period 0)", "source", source)
			} else {
				logger.Info("period in force", "period", period.String(), "source", source)
			}
		}
		wait := recheck
		if period > 0 {
			if due := time.Until(last.Add(period)); last.IsZero() || due <= 0 {
				if err := p.pass(ctx); err != nil {
					logger.Error(err, "pass failed")
				}
				last = time.Now()
				wait = min(recheck, period)
			} else {
				wait = min(recheck, due)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}
