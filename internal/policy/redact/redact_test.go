package redact_test

import (
	"regexp"
	"strings"
	"testing"
	"unicode"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/internal/policy/redact"
)

func Test(t *testing.T) { TestingT(t) }

type RedactSuite struct{}

var _ = Suite(&RedactSuite{})

func (s *RedactSuite) TestString(c *C) {
	for _, t := range []struct{ in, want string }{
		{"plain message", "plain message"},
		{"a=b without a secret", "a=b without a secret"},
		{`Get "https://s3.example.com/bucket/backups/b/b.tar.gz?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F20261127&X-Amz-Signature=deadbeef": dial tcp: refused`,
			`Get "https://s3.example.com/bucket/backups/b/b.tar.gz?REDACTED": dial tcp: refused`},
		{"fetching http://user:pass@store:9000/x failed", "fetching http://REDACTED@store:9000/x failed"},
		{"see https://acct.blob.core.windows.net/c/b?sv=2020&sig=abc%3D#frag.", "see https://acct.blob.core.windows.net/c/b?REDACTED."},
		{"https://storage.googleapis.com/b/o?X-Goog-Signature=00ff)", "https://storage.googleapis.com/b/o?REDACTED)"},
		{"query without scheme: X-Amz-Signature=deadbeef&x=1", "query without scheme: X-Amz-Signature=REDACTED&x=1"},
		{"access_token=abc.def aws_secret_access_key=S3CR3T AZURE_CLIENT_SECRET=x", "access_token=REDACTED aws_secret_access_key=REDACTED AZURE_CLIENT_SECRET=REDACTED"},
		// nacflow's own records: a location's revision names versions.
		{"generation=1,secret=309,decision=approve,admin=e3b0c44298fc,dpa=none", "generation=1,secret=309,decision=approve,admin=e3b0c44298fc,dpa=none"},
		{"no query https://host/path/only", "no query https://host/path/only"},
		// Tokens carried bare: a service account's JWT, a bearer credential.
		{"token eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.c2ln-_x rejected", "token REDACTED rejected"},
		{"unsigned eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0. too", "unsigned REDACTED too"},
		{"Authorization: Bearer abc.DEF-123_~+/= sent", "Authorization: Bearer REDACTED sent"},
		{"header authorization: bearer s3cr3t", "header authorization: bearer REDACTED"},
		{"Bearer\tlongbutletters and", "Bearer REDACTED and"},
		// Words alone are not tokens.
		{"the bearer of this backup", "the bearer of this backup"},
		{"eyJ alone", "eyJ alone"},
	} {
		c.Check(redact.String(t.in), Equals, t.want, Commentf("%q", t.in))
	}
}

type inner struct {
	Message string
	Ptr     *string
	List    []string
	Map     map[string]string
}

type status struct {
	Conditions  []inner
	One         *inner
	DownloadURL string
	hidden      string
}

func (s *RedactSuite) TestStrings(c *C) {
	signed := "https://store/b?X-Amz-Signature=deadbeef"
	p := "access_token=abc"
	st := &status{
		Conditions:  []inner{{Message: "GET " + signed + ": 403", List: []string{signed}, Map: map[string]string{"k": signed}}},
		One:         &inner{Ptr: &p},
		DownloadURL: signed,
		hidden:      signed,
	}
	n := redact.Strings(st, "DownloadURL")
	c.Check(n, Equals, 4)
	c.Check(st.Conditions[0].Message, Equals, "GET https://store/b?REDACTED: 403")
	c.Check(st.Conditions[0].List[0], Equals, "https://store/b?REDACTED")
	c.Check(st.Conditions[0].Map["k"], Equals, "https://store/b?REDACTED")
	c.Check(*st.One.Ptr, Equals, "access_token=REDACTED")
	c.Check(st.DownloadURL, Equals, signed, Commentf("kept on purpose"))
	c.Check(strings.Contains(st.hidden, "deadbeef"), Equals, true, Commentf("unexported: not written to the API"))
	c.Check(redact.Strings(st, "DownloadURL"), Equals, 0)
}

func FuzzString(f *testing.F) {
	f.Add(`Get "https://h/p?X-Amz-Signature=s": x`)
	f.Add("http://u:p@h/")
	f.Add("sig=abc")
	f.Add("Authorization: Bearer abc.def-123")
	f.Add("token eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.sig")
	jwt := regexp.MustCompile(`eyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]*\.`)
	f.Fuzz(func(t *testing.T, s string) {
		out := redact.String(s)
		if redact.String(out) != out {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, out, redact.String(out))
		}
		if jwt.MatchString(out) {
			t.Fatalf("a token survived in %q (from %q)", out, s)
		}
		if strings.Contains(out, "://") {
			for _, f := range strings.FieldsFunc(out, func(r rune) bool {
				return strings.ContainsRune(" \t\n\v\f\r\u0085\u00a0\"'<>`", r) || unicode.IsSpace(r)
			}) {
				if i := strings.Index(f, "?"); i >= 0 && strings.Contains(f[:i], "://") && !strings.HasPrefix(f[i+1:], redact.Mark) {
					t.Fatalf("a query survived in %q (from %q)", out, s)
				}
			}
		}
	})
}
