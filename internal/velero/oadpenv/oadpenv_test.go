package oadpenv_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"go.uber.org/zap/zapcore"
	. "gopkg.in/check.v1"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/nacflow/nacflow/internal/velero/oadpenv"
)

// Test hooks gocheck into go test.
func Test(t *testing.T) { TestingT(t) }

type EnvSuite struct{}

var _ = Suite(&EnvSuite{})

// OADP passes logrus level numbers (strconv of logrus.ParseLevel of the
// DPA's Velero log level); names are accepted too.
func (s *EnvSuite) TestZapLevel(c *C) {
	for _, tc := range []struct {
		in   string
		want zapcore.Level
	}{
		{"0", zapcore.PanicLevel}, {"1", zapcore.FatalLevel}, {"2", zapcore.ErrorLevel},
		{"3", zapcore.WarnLevel}, {"4", zapcore.InfoLevel}, {"5", zapcore.DebugLevel},
		{"6", zapcore.DebugLevel - 1},
		{"panic", zapcore.PanicLevel}, {"warning", zapcore.WarnLevel}, {"warn", zapcore.WarnLevel},
		{"INFO", zapcore.InfoLevel}, {" debug ", zapcore.DebugLevel}, {"trace", zapcore.DebugLevel - 1},
	} {
		got, err := oadpenv.ZapLevel(tc.in)
		c.Check(err, IsNil, Commentf("%q", tc.in))
		c.Check(got, Equals, tc.want, Commentf("%q", tc.in))
	}
	for _, bad := range []string{"7", "-1", "verbose", "4.0", "info,debug"} {
		_, err := oadpenv.ZapLevel(bad)
		c.Check(err, NotNil, Commentf("%q", bad))
	}
}

// logged returns what a logger built from opts writes for one info, one
// debug (V(1)) and one error line.
func logged(opts *zap.Options) string {
	var buf bytes.Buffer
	log := zap.New(zap.UseFlagOptions(opts), zap.WriteTo(&buf))
	log.Info("an info line")
	log.V(1).Info("a debug line")
	log.Error(nil, "an error line")
	return buf.String()
}

func (s *EnvSuite) TestApplyLogging(c *C) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }

	// OADP's Velero log level "debug" arrives as 5, its spec.logFormat as json.
	opts := &zap.Options{}
	c.Assert(oadpenv.ApplyLogging(opts, nil, env(map[string]string{"LOG_LEVEL": "5", "LOG_FORMAT": "json"})), IsNil)
	out := logged(opts)
	c.Check(strings.Contains(out, "a debug line"), Equals, true, Commentf("%s", out))
	first, _, _ := strings.Cut(out, "\n")
	c.Check(json.Valid([]byte(first)), Equals, true, Commentf("json wanted: %s", first))

	// "2" (error) with text: info dropped, the error kept, not JSON.
	opts = &zap.Options{}
	c.Assert(oadpenv.ApplyLogging(opts, nil, env(map[string]string{"LOG_LEVEL": "2", "LOG_FORMAT": "text"})), IsNil)
	out = logged(opts)
	c.Check(strings.Contains(out, "an info line"), Equals, false, Commentf("%s", out))
	c.Check(strings.Contains(out, "an error line"), Equals, true, Commentf("%s", out))
	c.Check(json.Valid([]byte(strings.Split(out, "\n")[0])), Equals, false, Commentf("console wanted: %s", out))

	// Flags given on the command line win over the environment.
	opts = &zap.Options{}
	zap.Level(zapcore.ErrorLevel)(opts) // what --zap-log-level=error set
	zap.JSONEncoder()(opts)             // what --zap-encoder=json set
	c.Assert(oadpenv.ApplyLogging(opts, map[string]bool{"zap-log-level": true, "zap-encoder": true},
		env(map[string]string{"LOG_LEVEL": "6", "LOG_FORMAT": "text"})), IsNil)
	out = logged(opts)
	c.Check(strings.Contains(out, "an info line"), Equals, false, Commentf("%s", out))
	c.Check(json.Valid([]byte(strings.Split(out, "\n")[0])), Equals, true, Commentf("%s", out))

	// Unset or empty (OADP's LOG_LEVEL when the DPA names no level) changes nothing.
	opts = &zap.Options{}
	c.Assert(oadpenv.ApplyLogging(opts, nil, env(map[string]string{"LOG_LEVEL": "", "LOG_FORMAT": ""})), IsNil)
	c.Check(opts.Level, IsNil)
	c.Check(opts.NewEncoder, IsNil)

	// A bad value names its variable.
	for _, tc := range []struct{ k, v string }{{"LOG_LEVEL", "loud"}, {"LOG_LEVEL", "9"}, {"LOG_FORMAT", "yaml"}} {
		err := oadpenv.ApplyLogging(&zap.Options{}, nil, env(map[string]string{tc.k: tc.v}))
		c.Assert(err, NotNil, Commentf("%s=%s", tc.k, tc.v))
		c.Check(strings.HasPrefix(err.Error(), "$"+tc.k+": "), Equals, true, Commentf("%v", err))
		c.Check(strings.Contains(err.Error(), tc.v), Equals, true, Commentf("%v", err))
	}
}
