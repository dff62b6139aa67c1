// Tools module: hack/dashboards writes nacflow's Grafana dashboards
// (config/monitoring/dashboards, and the chart's copy) with Grafana's own
// SDK. Kept apart from the main module so that the SDK never moves
// nacflow's requirements.
module github.com/nacflow/nacflow/hack/dashboards

go 1.26.0

require (
	github.com/grafana/grafana-foundation-sdk/go v0.0.22
	gopkg.in/check.v1 v1.0.0-20201130134442-10cb98267c6c
)

require (
	github.com/kr/pretty v0.2.1 // indirect
	github.com/kr/text v0.1.0 // indirect
)
