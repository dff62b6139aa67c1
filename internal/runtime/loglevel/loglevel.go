// Package loglevel gives a reconcile of one object the loggers its own log
// level calls for (OADP NAC's NonAdminBackup spec.logLevel): the run's
// story shown or hidden, everything but errors dropped.
package loglevel

import "github.com/go-logr/logr"

// Object log levels (OADP NAC's NonAdminBackup spec.logLevel enum): the
// verbose ones log the run's story at info, the quiet ones keep only errors.
var (
	verboseLevels = map[string]bool{"debug": true, "trace": true}
	quietLevels   = map[string]bool{"warning": true, "error": true, "fatal": true, "panic": true}
)

// Loggers returns the logger of a reconcile of an object with log level
// level (NonAdminBackup spec.logLevel; "" for none) and the logger its
// story — the run's events — is written to: base and base.V(1) for the
// controller's own level; base twice for debug and trace, so that the story
// shows at info; for warning and above, loggers that drop every info line
// and keep errors.
func Loggers(base logr.Logger, level string) (logger, story logr.Logger) {
	switch {
	case verboseLevels[level]:
		return base, base
	case quietLevels[level]:
		sink := base.GetSink()
		if cd, ok := sink.(logr.CallDepthLogSink); ok {
			// errorsOnly's own frame sits between the caller and sink.
			sink = cd.WithCallDepth(1)
		}
		quiet := logr.New(errorsOnly{sink})
		return quiet, quiet
	default:
		return base, base.V(1)
	}
}

// errorsOnly is a logr.LogSink that passes errors on and drops every info
// line, for an object whose log level is warning or above.
type errorsOnly struct{ logr.LogSink }

// Init implements logr.LogSink: the wrapped sink is initialized already
// (and shared: it must not be changed).
func (errorsOnly) Init(logr.RuntimeInfo) {}

// Enabled implements logr.LogSink: no info line is enabled.
func (errorsOnly) Enabled(int) bool { return false }

// Info implements logr.LogSink: dropped.
func (errorsOnly) Info(int, string, ...any) {}

// WithValues implements logr.LogSink.
func (s errorsOnly) WithValues(kv ...any) logr.LogSink {
	return errorsOnly{s.LogSink.WithValues(kv...)}
}

// WithName implements logr.LogSink.
func (s errorsOnly) WithName(name string) logr.LogSink { return errorsOnly{s.LogSink.WithName(name)} }
