// Package oadpenv reads the environment the OADP operator gives its
// non-admin controller, so that nac runs as that controller's image with no
// arguments: openshift/oadp-operator's nonadmin_controller.go sets
// WATCH_NAMESPACE (the OADP namespace), LOG_LEVEL (the DPA's
// spec.configuration.velero.logLevel as a logrus level number, "" when that
// is unset) and LOG_FORMAT (the DPA's spec.logFormat: "text" or "json").
package oadpenv

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sirupsen/logrus"
	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// The variables the OADP operator sets on the non-admin controller's
// container (openshift/oadp-operator pkg/common: LogLevelEnvVar,
// LogFormatEnvVar; WATCH_NAMESPACE in nonadmin_controller.go).
const (
	NamespaceVar = "WATCH_NAMESPACE"
	LogLevelVar  = "LOG_LEVEL"
	LogFormatVar = "LOG_FORMAT"
)

// traceLevel is the zap level of logrus' trace: one step more verbose than
// debug (logr's V(2)), so trace shows all debug shows and any finer line.
const traceLevel = zapcore.DebugLevel - 1

// ZapLevel returns the zap level of a logrus level, given as its number
// (what OADP passes: 0 panic, 1 fatal, 2 error, 3 warning, 4 info, 5 debug,
// 6 trace; sirupsen/logrus's Level constants) or its name (any case, as
// logrus.ParseLevel reads it, "warn" or "warning"). It returns an error for
// anything else.
func ZapLevel(value string) (zapcore.Level, error) {
	v := strings.TrimSpace(value)
	var level logrus.Level
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		if n > uint64(logrus.TraceLevel) {
			return 0, fmt.Errorf("%q is not a logrus level: numbers go from 0 (panic) to 6 (trace)", value)
		}
		level = logrus.Level(n)
	} else if level, err = logrus.ParseLevel(v); err != nil {
		return 0, fmt.Errorf("%q is not a logrus level: want 0 (panic) to 6 (trace), or panic, fatal, error, warning, info, debug or trace", value)
	}
	switch level {
	case logrus.PanicLevel:
		return zapcore.PanicLevel, nil
	case logrus.FatalLevel:
		return zapcore.FatalLevel, nil
	case logrus.ErrorLevel:
		return zapcore.ErrorLevel, nil
	case logrus.WarnLevel:
		return zapcore.WarnLevel, nil
	case logrus.InfoLevel:
		return zapcore.InfoLevel, nil
	case logrus.DebugLevel:
		return zapcore.DebugLevel, nil
	default: // logrus.TraceLevel
		return traceLevel, nil
	}
}

// Encoder returns the zap option of a log format as OADP names it (the
// DPA's spec.logFormat enum): "text" is zap's console encoder, "json" its
// JSON encoder (any case). It returns an error for anything else.
func Encoder(value string) (zap.Opts, error) {
	switch strings.ToLower(strings.TrimSpace(value)) {
	case "text":
		return zap.ConsoleEncoder(), nil
	case "json":
		return zap.JSONEncoder(), nil
	}
	return nil, fmt.Errorf("%q is not a log format: want text or json", value)
}

// ApplyLogging sets opts' level from LOG_LEVEL and its encoder from
// LOG_FORMAT, read with getenv, except where the command line gave
// --zap-log-level or --zap-encoder (given holds the names of the flags given,
// without dashes): a flag wins over the environment. An unset or empty
// variable changes nothing (OADP sets LOG_LEVEL to "" when the DPA names no
// Velero log level). It returns an error naming the variable whose value is
// not a level or a format.
func ApplyLogging(opts *zap.Options, given map[string]bool, getenv func(string) string) error {
	if v := getenv(LogLevelVar); v != "" && !given["zap-log-level"] {
		level, err := ZapLevel(v)
		if err != nil {
			return fmt.Errorf("$%s: %w", LogLevelVar, err)
		}
		opts.Level = level
	}
	if v := getenv(LogFormatVar); v != "" && !given["zap-encoder"] {
		enc, err := Encoder(v)
		if err != nil {
			return fmt.Errorf("$%s: %w", LogFormatVar, err)
		}
		enc(opts)
	}
	return nil
}
