package endpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"
)

// Resolver resolves a host name to addresses (*net.Resolver does); tests
// inject their own so that no DNS is needed.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Lists are an admin's endpoint rules as written (ValidateBSLSpec
// args.endpoints, nac --endpoint-* flags): CIDRs ("10.0.0.0/8",
// "fd00::/8", or one address) and host patterns ("s3.example.com",
// "*.example.com" for any name under example.com, an address, each
// optionally with ":port" — "127.0.0.1:9000" allows that port only).
type Lists struct {
	// AllowCIDRs are addresses an endpoint may resolve to even when they
	// are in a range denied by default.
	AllowCIDRs []string `json:"allowCIDRs,omitempty"`
	// DenyCIDRs are addresses no endpoint may resolve to; they win over
	// every allowance.
	DenyCIDRs []string `json:"denyCIDRs,omitempty"`
	// AllowHosts are endpoints accepted whatever they resolve to (except
	// into DenyCIDRs).
	AllowHosts []string `json:"allowHosts,omitempty"`
	// DenyHosts are endpoints never accepted; they win over every
	// allowance.
	DenyHosts []string `json:"denyHosts,omitempty"`
}

// Policy is compiled Lists; the zero Policy applies the defaults only.
type Policy struct {
	allowCIDRs, denyCIDRs []netip.Prefix
	allowHosts, denyHosts []hostPattern
}

// Compile parses l; an error names the entry (as field.list[i]) that does
// not parse. field is the prefix for those names ("endpoints"; "" for none).
func (l Lists) Compile(field string) (Policy, error) {
	var p Policy
	var err error
	if field != "" {
		field += "."
	}
	if p.allowCIDRs, err = parseCIDRs(field+"allowCIDRs", l.AllowCIDRs); err != nil {
		return Policy{}, err
	}
	if p.denyCIDRs, err = parseCIDRs(field+"denyCIDRs", l.DenyCIDRs); err != nil {
		return Policy{}, err
	}
	if p.allowHosts, err = parseHosts(field+"allowHosts", l.AllowHosts); err != nil {
		return Policy{}, err
	}
	if p.denyHosts, err = parseHosts(field+"denyHosts", l.DenyHosts); err != nil {
		return Policy{}, err
	}
	return p, nil
}

// Merge returns the union of p's and q's rules (denials still win).
func (p Policy) Merge(q Policy) Policy {
	return Policy{
		allowCIDRs: append(append([]netip.Prefix{}, p.allowCIDRs...), q.allowCIDRs...),
		denyCIDRs:  append(append([]netip.Prefix{}, p.denyCIDRs...), q.denyCIDRs...),
		allowHosts: append(append([]hostPattern{}, p.allowHosts...), q.allowHosts...),
		denyHosts:  append(append([]hostPattern{}, p.denyHosts...), q.denyHosts...),
	}
}

// IsZero reports whether p adds nothing to the defaults.
func (p Policy) IsZero() bool {
	return len(p.allowCIDRs)+len(p.denyCIDRs)+len(p.allowHosts)+len(p.denyHosts) == 0
}

// deniedRange is an address range denied by default.
type deniedRange struct {
	prefix netip.Prefix
	what   string
}

// defaultDenied are the ranges no endpoint may resolve to unless an admin
// allows it: what a pod reaches only because it is on the node or in the
// cloud (loopback, link-local, the metadata services of AWS, GCP, Azure,
// Alibaba, OpenStack), addresses that mean "this host" (unspecified), and
// multicast/broadcast/reserved space, and the private ranges (10/8,
// 172.16/12, 192.168/16, 100.64/10, fc00::/7): a cluster's pods, services
// and nodes live there, so a tenant's endpoint in them reaches what only
// the Velero pod reaches. On-premises object stores live there too: the
// admin allows each (AllowHosts, or AllowCIDRs for its range).
var defaultDenied = func() []deniedRange {
	var out []deniedRange
	for _, r := range []struct{ cidr, what string }{
		{"169.254.169.254/32", "the cloud metadata service"},
		{"169.254.170.2/32", "the AWS container credentials endpoint"},
		{"fd00:ec2::254/128", "the AWS metadata service (IPv6)"},
		{"100.100.100.200/32", "the Alibaba Cloud metadata service"},
		{"0.0.0.0/8", "unspecified (this host)"},
		{"127.0.0.0/8", "loopback"},
		{"169.254.0.0/16", "link-local"},
		{"224.0.0.0/4", "multicast"},
		{"240.0.0.0/4", "reserved (and broadcast)"},
		{"::/128", "unspecified (this host)"},
		{"::1/128", "loopback"},
		{"::/96", "IPv4-compatible IPv6 (deprecated)"},
		{"fe80::/10", "link-local"},
		{"ff00::/8", "multicast"},
		{"10.0.0.0/8", "private"},
		{"172.16.0.0/12", "private"},
		{"192.168.0.0/16", "private"},
		{"100.64.0.0/10", "shared address space (carrier-grade NAT)"},
		{"198.18.0.0/15", "benchmarking"},
		{"fc00::/7", "unique local (private)"},
	} {
		out = append(out, deniedRange{netip.MustParsePrefix(r.cidr), r.what})
	}
	return out
}()

// metadataHosts are the names of cloud metadata services, denied by
// default whatever they resolve to here (Velero may resolve them
// elsewhere).
var metadataHosts = []string{"metadata.google.internal", "metadata.goog", "metadata", "instance-data", "instance-data.ec2.internal"}

// nat64 is the well-known NAT64 prefix (RFC 6052): its addresses reach the
// IPv4 address in their last 32 bits.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// Check returns nil when rawURL is an endpoint Velero may connect to for a
// tenant under p, a refusal (an error saying which rule and which address)
// when it is not, and err for a resolver failure that may pass (a DNS
// timeout: retry). The rules, in order:
//
//  1. http or https, a host, no user info;
//  2. a host name is a DNS name, never a numeric form that C resolvers
//     read as an IPv4 address ("2130706433", "0x7f.1", "127.1");
//  3. a host matching DenyHosts is refused;
//  4. the host (an address, or every address its name resolves to now,
//     IPv4-mapped and NAT64 addresses also read as IPv4) in DenyCIDRs is
//     refused;
//  5. a host matching AllowHosts is accepted;
//  6. a cloud metadata host name, or an address in a range denied by
//     default (defaultDenied) and not in AllowCIDRs, is refused.
//
// A name that does not resolve is refused. The addresses are those of now:
// Velero resolves the name again when it connects (DNS rebinding).
func (p Policy) Check(ctx context.Context, r Resolver, rawURL string) (refusal, err error) {
	u, perr := url.Parse(rawURL)
	switch {
	case perr != nil:
		return fmt.Errorf("%q is not a URL", rawURL), nil
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%q is not an http or https URL", rawURL), nil
	case u.Opaque != "" || u.Host == "":
		return fmt.Errorf("%q has no host", rawURL), nil
	case u.User != nil:
		return fmt.Errorf("%q carries user info; put credentials in the credential Secret", rawURL), nil
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	_, refusal, err = p.admit(ctx, r, host, port)
	return refusal, err
}

// admit applies rules 2 to 6 of Check to host (lower case, no trailing dot)
// and port, and returns the addresses it checked: a connection that dials
// one of them reaches what was checked.
func (p Policy) admit(ctx context.Context, r Resolver, host, port string) (addrs []netip.Addr, refusal, err error) {
	if a, aerr := netip.ParseAddr(host); aerr == nil {
		if a.Zone() != "" {
			return nil, fmt.Errorf("host %s has an IPv6 zone", host), nil
		}
		addrs = []netip.Addr{a}
	} else if why := badHostName(host); why != "" {
		return nil, fmt.Errorf("host %q %s", host, why), nil
	}
	for _, h := range p.denyHosts {
		if h.matches(host, port) {
			return nil, fmt.Errorf("host %s is denied by the admin (%s)", host, h), nil
		}
	}
	if addrs == nil {
		if r == nil {
			r = net.DefaultResolver
		}
		got, lerr := r.LookupNetIP(ctx, "ip", host)
		var dnsErr *net.DNSError
		switch {
		case lerr != nil && errors.As(lerr, &dnsErr) && dnsErr.IsNotFound:
			return nil, fmt.Errorf("host %s does not resolve", host), nil
		case lerr != nil:
			return nil, nil, fmt.Errorf("resolving %s: %w", host, lerr)
		case len(got) == 0:
			return nil, fmt.Errorf("host %s does not resolve", host), nil
		}
		addrs = got
	}
	for _, a := range addrs {
		for _, v := range views(a) {
			for _, d := range p.denyCIDRs {
				if d.Contains(v) {
					return nil, fmt.Errorf("host %s resolves to %s, in %s, denied by the admin", host, a, d), nil
				}
			}
		}
	}
	for _, h := range p.allowHosts {
		if h.matches(host, port) {
			return addrs, nil, nil
		}
	}
	if slices.Contains(metadataHosts, host) {
		return nil, fmt.Errorf("host %s is a cloud metadata service", host), nil
	}
	for _, a := range addrs {
		if why := p.deniedByDefault(a); why != "" {
			what := "host " + host
			if a.String() != host {
				what += " resolves to " + a.String() + ","
			}
			return nil, fmt.Errorf("%s %s, denied by default (an admin may allow it: endpoints.allowCIDRs or allowHosts)", what, why), nil
		}
	}
	return addrs, nil, nil
}

// RefusedError is the error of a connection Dial refused: the rule and the
// address, never the URL (which may carry a signature).
type RefusedError struct{ Why error }

func (e *RefusedError) Error() string {
	return "connection refused by the endpoint rules: " + e.Why.Error()
}

// Dial returns a DialContext for an http.Transport that connects only
// where p lets a tenant's endpoint lead: it resolves the host of addr
// ("host:port") once with r (nil: net.DefaultResolver), applies Check's
// rules 2 to 6 to every address, and dials those addresses itself, so a
// name cannot resolve elsewhere between the check and the connection (DNS
// rebinding) and a redirect is checked as the first request was. Errors: a
// *RefusedError naming the rule, the resolver's, the dialer's.
func (p Policy) Dial(r Resolver, d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if d == nil {
		d = &net.Dialer{}
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		host = strings.TrimSuffix(strings.ToLower(host), ".")
		addrs, refusal, err := p.admit(ctx, r, host, port)
		if err != nil {
			return nil, err
		}
		if refusal != nil {
			return nil, &RefusedError{Why: refusal}
		}
		var last error
		for _, a := range addrs {
			c, err := d.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
			if err == nil {
				return c, nil
			}
			last = err
		}
		return nil, last
	}
}

// deniedByDefault returns what range of defaultDenied holds a (or the IPv4
// address it stands for) when no AllowCIDRs entry holds it, "" otherwise.
func (p Policy) deniedByDefault(a netip.Addr) string {
	for _, v := range views(a) {
		allowed := false
		for _, al := range p.allowCIDRs {
			if al.Contains(v) {
				allowed = true
			}
		}
		if allowed {
			continue
		}
		for _, d := range defaultDenied {
			if d.prefix.Contains(v) {
				return "is " + d.what + " (" + d.prefix.String() + ")"
			}
		}
	}
	return ""
}

// views returns a as itself plus the IPv4 address it stands for, when it
// is IPv4-mapped (::ffff:a.b.c.d) or NAT64 (64:ff9b::a.b.c.d).
func views(a netip.Addr) []netip.Addr {
	a = a.WithZone("")
	out := []netip.Addr{a}
	if a.Is4In6() {
		out = append(out, a.Unmap())
	}
	if a.Is6() && nat64.Contains(a) {
		b := a.As16()
		out = append(out, netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
	}
	return out
}

// badHostName says why host is not a DNS name Velero's resolver reads as
// nacflow's does, "" when it is one.
func badHostName(host string) string {
	if host == "" || len(host) > 253 {
		return "is not a DNS name"
	}
	numeric := true
	for _, label := range strings.Split(host, ".") {
		if label == "" || len(label) > 63 {
			return "is not a DNS name"
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "is not a DNS name"
			}
		}
		if !isNumberPart(label) {
			numeric = false
		}
	}
	if numeric {
		return "is a numeric form C resolvers read as an IPv4 address; write the address as a.b.c.d"
	}
	return ""
}

// isNumberPart reports whether label is a number as inet_aton reads one:
// decimal, octal (leading 0) or hexadecimal (0x).
func isNumberPart(label string) bool {
	digits, hex := strings.CutPrefix(label, "0x")
	for _, c := range digits {
		if !(c >= '0' && c <= '9' || hex && c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// hostPattern is one AllowHosts/DenyHosts entry.
type hostPattern struct {
	host     string // lower-case name or address; "*.x" for names under x
	port     string // "" for any port
	wildcard bool
	addr     netip.Addr // valid when host is an address
}

func (h hostPattern) String() string {
	if h.port == "" {
		return h.host
	}
	return net.JoinHostPort(h.host, h.port)
}

func (h hostPattern) matches(host, port string) bool {
	if h.port != "" && h.port != port {
		return false
	}
	if h.addr.IsValid() {
		a, err := netip.ParseAddr(host)
		return err == nil && a.WithZone("") == h.addr
	}
	if h.wildcard {
		return strings.HasSuffix(host, h.host[1:])
	}
	return host == h.host
}

func parseHosts(field string, in []string) ([]hostPattern, error) {
	var out []hostPattern
	for i, s := range in {
		s = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), ".")
		p := hostPattern{host: s}
		if a, err := netip.ParseAddr(s); err == nil {
			p.addr = a
		} else if h, port, err := net.SplitHostPort(s); err == nil {
			p.host, p.port = strings.TrimSuffix(h, "."), port
			if a, err := netip.ParseAddr(p.host); err == nil {
				p.addr = a
			}
		}
		if p.port != "" {
			if n := len(p.port); n > 5 || strings.Trim(p.port, "0123456789") != "" {
				return nil, fmt.Errorf("%s[%d]: %q has a bad port", field, i, in[i])
			}
		}
		if strings.HasPrefix(p.host, "*.") {
			p.wildcard = true
		}
		name := strings.TrimPrefix(p.host, "*.")
		if !p.addr.IsValid() && badHostName(name) != "" {
			return nil, fmt.Errorf("%s[%d]: %q is not a host name, *.domain or address, with an optional :port", field, i, in[i])
		}
		out = append(out, p)
	}
	return out, nil
}

func parseCIDRs(field string, in []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for i, s := range in {
		s = strings.TrimSpace(s)
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %q is not a CIDR or an address", field, i, in[i])
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// Fingerprint returns a short digest of what the host names of urls
// resolve to now (sorted addresses, or that a name does not resolve), ""
// when none of them names a host by DNS name (addresses never change). A
// location's revision carries it, so that a name that comes to resolve
// elsewhere re-runs the location's validation (Check) without a spec
// change. Each lookup is bounded by timeout; one that fails counts as
// "unresolved" (the next fingerprint may differ).
func Fingerprint(ctx context.Context, r Resolver, urls []string, timeout time.Duration) string {
	if r == nil {
		r = net.DefaultResolver
	}
	var parts []string
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			continue
		}
		host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
		if host == "" {
			continue
		}
		if _, err := netip.ParseAddr(host); err == nil {
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, timeout)
		addrs, err := r.LookupNetIP(lctx, "ip", host)
		cancel()
		got := "unresolved"
		if err == nil {
			s := make([]string, len(addrs))
			for i, a := range addrs {
				s[i] = a.String()
			}
			sort.Strings(s)
			got = strings.Join(s, ",")
		}
		parts = append(parts, host+"="+got)
	}
	if len(parts) == 0 {
		return ""
	}
	sort.Strings(parts)
	sum := sha256.Sum256([]byte(strings.Join(parts, ";")))
	return hex.EncodeToString(sum[:8])
}
