package controllers

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Periodic runs Pass every Period until its context ends. It is a manager
// Runnable that needs leader election (the default), so only the leader runs
// it. A Period of 0 disables it: Start returns at once.
type Periodic struct {
	// Name names the loop in logs.
	Name string
	// Period between passes; 0 disables the loop.
	Period time.Duration
	// Pass does one pass; its error is logged and the next pass runs on time.
	Pass func(context.Context) error
}

// Start implements manager.Runnable.
func (p *Periodic) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithValues("loop", p.Name)
	if p.Period <= 0 {
		logger.Info("disabled (period 0)")
		return nil
	}
	t := time.NewTicker(p.Period)
	defer t.Stop()
	for {
		if err := p.Pass(ctx); err != nil {
			logger.Error(err, "pass failed")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
