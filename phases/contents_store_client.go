package phases

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/nacflow/nacflow/internal/policy/endpoint"
)

// storeClient is the HTTP client of every request nacflow makes to an
// object store: GETs of a backup's files at the URLs Velero pre-signs. The
// store may be a tenant's, so the client obeys the endpoint rules at
// connect time, not only at validation: every connection — the first and
// any after it — dials only an address endpoint.Policy admits, resolved
// once (no DNS rebinding between check and connect); it follows no
// redirect (a pre-signed GET is answered where it was signed for; a 3xx
// from a store is an error naming where it pointed); it uses no proxy from
// the environment (the proxy, not the rules, would choose the address).
type storeClient struct {
	hc *http.Client
}

// errRedirect is returned for a store's redirect: followed, it would lead
// nacflow's own request wherever a tenant's store points.
var errRedirect = errors.New("the object store answered with a redirect, which nacflow does not follow")

// newStoreClient returns a storeClient whose connections obey p (the
// admin's endpoint rules; zero: the defaults), resolving names with r (nil:
// net.DefaultResolver).
func newStoreClient(p endpoint.Policy, r endpoint.Resolver) *storeClient {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = p.Dial(r, &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second})
	t.MaxIdleConnsPerHost = 4
	return &storeClient{hc: &http.Client{
		Transport: t,
		CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			return fmt.Errorf("%w (to %s)", errRedirect, redactedURL(req.URL))
		},
	}}
}

// do sends req. Its errors name the URL without its query (the signature)
// and user info: they end up in status, which tenants and view users read.
func (s *storeClient) do(req *http.Request) (*http.Response, error) {
	if s == nil {
		s = defaultStore // the default rules: deny by default
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("%s %s: %w", req.Method, redactedURL(req.URL), err)
	}
	return resp, nil
}

// defaultStore obeys the default endpoint rules only.
var defaultStore = newStoreClient(endpoint.Policy{}, nil)

// redactedURL is u's scheme, host and path: what says which store and file
// without what opens it.
func redactedURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}
	return c.String()
}
