package main

import (
	"bytes"
	"flag"
	"io"
	"strings"

	. "gopkg.in/check.v1"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/nacflow/nacflow/internal/velero/oadpenv"
)

// OADPEnvSuite holds nac to the OADP operator's contract with the image it
// runs as the non-admin controller: no arguments, settings in the
// environment, flags winning where given.
type OADPEnvSuite struct{}

var _ = Suite(&OADPEnvSuite{})

// parseAndLog parses args with nac's own flags, applies env as main does,
// and returns what the resulting logger writes for an info and a debug line.
func parseAndLog(c *C, args []string, env map[string]string) (string, error) {
	fs := flag.NewFlagSet("nac", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o := &options{}
	zapOpts := registerFlags(fs, o)
	c.Assert(fs.Parse(args), IsNil)
	if err := oadpenv.ApplyLogging(zapOpts, givenFlags(fs), func(k string) string { return env[k] }); err != nil {
		return "", err
	}
	var buf bytes.Buffer
	log := zap.New(zap.UseFlagOptions(zapOpts), zap.WriteTo(&buf))
	log.Info("info line")
	log.V(1).Info("debug line")
	return buf.String(), nil
}

func (s *OADPEnvSuite) TestLoggingFromTheEnvironment(c *C) {
	// No arguments, as OADP runs the image: LOG_LEVEL 5 (logrus debug) and
	// LOG_FORMAT text apply.
	out, err := parseAndLog(c, nil, map[string]string{"LOG_LEVEL": "5", "LOG_FORMAT": "text"})
	c.Assert(err, IsNil)
	c.Check(strings.Contains(out, "debug line"), Equals, true, Commentf("%s", out))
	c.Check(strings.HasPrefix(out, "{"), Equals, false, Commentf("text is the console encoder: %s", out))

	// Without the environment nac's own defaults hold: info, JSON.
	out, err = parseAndLog(c, nil, nil)
	c.Assert(err, IsNil)
	c.Check(strings.Contains(out, "debug line"), Equals, false, Commentf("%s", out))
	c.Check(strings.HasPrefix(out, "{"), Equals, true, Commentf("%s", out))

	// Flags given win over the environment, each on its own.
	out, err = parseAndLog(c, []string{"--zap-log-level=info"}, map[string]string{"LOG_LEVEL": "6", "LOG_FORMAT": "text"})
	c.Assert(err, IsNil)
	c.Check(strings.Contains(out, "debug line"), Equals, false, Commentf("--zap-log-level wins: %s", out))
	c.Check(strings.HasPrefix(out, "{"), Equals, false, Commentf("LOG_FORMAT still applies: %s", out))
	out, err = parseAndLog(c, []string{"--zap-encoder=json"}, map[string]string{"LOG_LEVEL": "5", "LOG_FORMAT": "text"})
	c.Assert(err, IsNil)
	c.Check(strings.HasPrefix(out, "{"), Equals, true, Commentf("--zap-encoder wins: %s", out))
	c.Check(strings.Contains(out, "debug line"), Equals, true, Commentf("LOG_LEVEL still applies: %s", out))

	// A bad value is an error naming the variable, even with flags given
	// for the other one.
	_, err = parseAndLog(c, []string{"--zap-encoder=json"}, map[string]string{"LOG_LEVEL": "chatty"})
	c.Assert(err, NotNil)
	c.Check(err, ErrorMatches, `\$LOG_LEVEL: "chatty" is not a logrus level.*`)
}

// --oadp-namespace wins; else WATCH_NAMESPACE, what OADP sets; else an
// error saying both.
func (s *OADPEnvSuite) TestOADPNamespace(c *C) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "WATCH_NAMESPACE" {
				return v
			}
			return ""
		}
	}
	ns, err := oadpNamespace(options{}, env("openshift-adp"))
	c.Check(err, IsNil)
	c.Check(ns, Equals, "openshift-adp")
	ns, err = oadpNamespace(options{oadpNamespace: "mine"}, env("openshift-adp"))
	c.Check(err, IsNil)
	c.Check(ns, Equals, "mine")
	_, err = oadpNamespace(options{}, env(""))
	c.Check(err, ErrorMatches, ".*--oadp-namespace.*WATCH_NAMESPACE.*")
}
