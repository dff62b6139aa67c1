package text_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/internal/text"
)

func Test(t *testing.T) { TestingT(t) }

type TruncateSuite struct{}

var _ = Suite(&TruncateSuite{})

func (s *TruncateSuite) TestTruncate(c *C) {
	for _, t := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"abcdefghij", 8, "abcde…"},
		// "é" is two bytes: a cut inside it moves back to its start.
		{"ééééé", 8, "éé…"},
		{"ééééé", 7, "éé…"},
		{"ab€cd", 6, "ab…"},
		{"abcdef", 2, "ab"},
		{"éé", 1, ""},
		{"abc", 0, ""},
	} {
		got := text.Truncate(t.in, t.n)
		c.Check(got, Equals, t.want, Commentf("%q cut to %d", t.in, t.n))
		c.Check(len(got) <= max(t.n, len(t.in)) || len(t.in) <= t.n, Equals, true)
		c.Check(utf8.ValidString(got), Equals, true, Commentf("%q", got))
	}
}

func (s *TruncateSuite) TestNeverSplitsARune(c *C) {
	in := strings.Repeat("日本語", 100)
	for n := 0; n < len(in)+2; n++ {
		got := text.Truncate(in, n)
		c.Assert(utf8.ValidString(got), Equals, true, Commentf("n=%d", n))
		c.Assert(len(got) <= n || got == in, Equals, true, Commentf("n=%d len=%d", n, len(got)))
	}
}
