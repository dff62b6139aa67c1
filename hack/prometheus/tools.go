//go:build tools

// Package tools pins the commands this module builds: promtool
// (bin/promtool), which checks and unit-tests the alert rules in make
// test-rules, and the Prometheus server (bin/prometheus), which make
// test-monitoring runs against the rules and nacflow's metrics.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
