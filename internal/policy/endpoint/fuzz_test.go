package endpoint

import (
	"context"
	"net"
	"net/netip"
	"net/url"
	"testing"
)

// FuzzCheck: any URL is checked without a panic, and one accepted under
// the defaults names a host that is a DNS name or an address outside every
// range denied by default, whose every address (here: the fake resolver's)
// is outside them too.
func FuzzCheck(f *testing.F) {
	for _, u := range []string{"https://s3.example.com", "http://127.0.0.1:9000", "http://[::ffff:169.254.169.254]", "http://0x7f.1",
		"http://[64:ff9b::7f00:1]", "http://localhost", "http://user@s3.example.com", "http://[fe80::1%25lo]"} {
		f.Add(u)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		refusal, err := Policy{}.Check(context.Background(), names, raw)
		if refusal != nil || err != nil {
			return
		}
		u, perr := url.Parse(raw)
		if perr != nil {
			t.Fatalf("accepted %q, which does not parse: %v", raw, perr)
		}
		var addrs []netip.Addr
		if a, err := netip.ParseAddr(u.Hostname()); err == nil {
			addrs = []netip.Addr{a}
		} else {
			got, err := names.LookupNetIP(context.Background(), "ip", u.Hostname())
			if err != nil {
				if _, ok := err.(*net.DNSError); !ok {
					t.Fatalf("accepted %q: %v", raw, err)
				}
			}
			addrs = got
		}
		for _, a := range addrs {
			if why := (Policy{}).deniedByDefault(a); why != "" {
				t.Fatalf("accepted %q, whose address %s %s", raw, a, why)
			}
		}
	})
}
