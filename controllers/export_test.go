package controllers

import (
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
)

// ThrottledSink is the sink NewEventBroadcaster(qps, burst) puts in front of
// sink, with its rate limiter on clk, so that a test can pace it on a fake
// clock.
func ThrottledSink(sink record.EventSink, qps float32, burst int, clk flowcontrol.Clock) record.EventSink {
	return &throttledSink{EventSink: sink, limiter: flowcontrol.NewTokenBucketRateLimiterWithClock(qps, burst, clk)}
}

// EventLimiter returns the rate limiter NewEventBroadcaster put in front of
// the sinks of b, or nil when it put none (qps ≤ 0).
func EventLimiter(b record.EventBroadcaster) flowcontrol.RateLimiter {
	if t, ok := b.(*throttledBroadcaster); ok {
		return t.limiter
	}
	return nil
}
