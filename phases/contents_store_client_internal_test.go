package phases

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/internal/policy/endpoint"
)

// loopbackStore is a storeClient that may reach the tests' stores, which
// listen on loopback.
var loopbackStore = func() *storeClient {
	p, err := endpoint.Lists{AllowCIDRs: []string{"127.0.0.0/8"}}.Compile("")
	if err != nil {
		panic(err)
	}
	return newStoreClient(p, nil)
}()

type StoreClientSuite struct{}

var _ = Suite(&StoreClientSuite{})

// TestRedirectNotFollowed: a store that redirects a GET elsewhere gets an
// error naming the redirect, and the target is never asked.
func (s *StoreClientSuite) TestRedirectNotFollowed(c *C) {
	asked := 0
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { asked++ }))
	defer target.Close()
	store := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/secrets?X-Amz-Signature=abc", http.StatusFound)
	}))
	defer store.Close()
	_, err := getBackupFile(context.Background(), loopbackStore, store.URL+"/b/backup.tar.gz?X-Amz-Signature=deadbeef")
	c.Assert(err, NotNil)
	c.Check(err, ErrorMatches, `GET http://127\.0\.0\.1:\d+/b/backup\.tar\.gz: .*redirect.*`)
	c.Check(strings.Contains(err.Error(), "deadbeef"), Equals, false, Commentf("%v", err))
	c.Check(strings.Contains(err.Error(), "abc"), Equals, false, Commentf("%v", err))
	c.Check(asked, Equals, 0)
}

// TestRulesAtConnect: the default rules refuse a loopback store when the
// connection is made (whatever validation said before), and the error names
// the rule, not the signed URL.
func (s *StoreClientSuite) TestRulesAtConnect(c *C) {
	asked := 0
	store := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { asked++ }))
	defer store.Close()
	_, err := getBackupFile(context.Background(), newStoreClient(endpoint.Policy{}, nil), store.URL+"/f?X-Amz-Signature=deadbeef")
	c.Assert(err, NotNil)
	c.Check(err, ErrorMatches, `GET http://127\.0\.0\.1:\d+/f: connection refused by the endpoint rules: host 127\.0\.0\.1 .*loopback.*`)
	c.Check(asked, Equals, 0)

	// A name is resolved once and the address checked is the one dialed.
	_, err = getBackupFile(context.Background(), newStoreClient(endpoint.Policy{}, staticResolver{"store.example": "127.0.0.1"}),
		strings.Replace(store.URL, "127.0.0.1", "store.example", 1)+"/f")
	c.Check(err, ErrorMatches, `.*host store\.example resolves to 127\.0\.0\.1, is loopback.*`)
	c.Check(asked, Equals, 0)

	// Allowed, the same store answers.
	body, err := getBackupFile(context.Background(), loopbackStore, store.URL+"/f")
	c.Assert(err, IsNil)
	_, _ = io.Copy(io.Discard, body)
	body.Close()
	c.Check(asked, Equals, 1)
}

// staticResolver resolves from a table, without DNS.
type staticResolver map[string]string

func (t staticResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	a, ok := t[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return []netip.Addr{netip.MustParseAddr(a)}, nil
}
