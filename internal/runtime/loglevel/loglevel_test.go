package loglevel_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/internal/runtime/loglevel"
)

// Test hooks gocheck into go test.
func Test(t *testing.T) { TestingT(t) }

type LogLevelSuite struct{}

var _ = Suite(&LogLevelSuite{})

// NonAdminBackup spec.logLevel: debug and trace show the run's story at
// the controller's info level; warning and above keep only errors.
func (s *LogLevelSuite) TestLoggers(c *C) {
	for _, tc := range []struct {
		level     string
		wantInfo  bool // the reconcile's own info lines
		wantStory bool // the story, at a controller logging at info
	}{
		{"", true, false},
		{"info", true, false},
		{"debug", true, true},
		{"trace", true, true},
		{"warning", false, false},
		{"error", false, false},
		{"panic", false, false},
	} {
		var lines []string
		base := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: 0})
		logger, story := loglevel.Loggers(base, tc.level)
		logger.Info("own line")
		story.Info("Ended phase validate")
		logger.WithValues("k", "v").WithName("n").Error(errors.New("boom"), "failed")
		out := strings.Join(lines, "\n")
		c.Check(strings.Contains(out, "own line"), Equals, tc.wantInfo, Commentf("level %q: %s", tc.level, out))
		c.Check(strings.Contains(out, "Ended phase validate"), Equals, tc.wantStory, Commentf("level %q: %s", tc.level, out))
		c.Check(strings.Contains(out, "boom"), Equals, true, Commentf("errors are always kept (level %q)", tc.level))
	}
}
