package endpoint

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	. "gopkg.in/check.v1"
)

func Test(t *testing.T) { TestingT(t) }

type EndpointSuite struct{}

var _ = Suite(&EndpointSuite{})

// fakeResolver answers from a table; a name it lacks does not exist, and
// "flaky.example.com" times out.
type fakeResolver map[string][]string

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if host == "flaky.example.com" {
		return nil, &net.DNSError{Err: "timeout", Name: host, IsTimeout: true}
	}
	addrs, ok := f[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, a := range addrs {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

var names = fakeResolver{
	"s3.example.com":           {"203.0.113.10"},
	"minio.internal":           {"10.0.0.5"},
	"localhost":                {"127.0.0.1", "::1"},
	"rebind.example.com":       {"203.0.113.11", "169.254.169.254"},
	"pods.example.com":         {"10.128.0.9"},
	"mapped.example.com":       {"::ffff:127.0.0.1"},
	"nat64.example.com":        {"64:ff9b::a9fe:a9fe"},
	"metadata.google.internal": {"169.254.169.254"},
	"store.lab":                {"127.0.0.1"},
}

// Each case: a URL, the admin's lists, and a fragment of the refusal ("" to
// accept).
func (s *EndpointSuite) TestCheck(c *C) {
	local := Lists{AllowHosts: []string{"127.0.0.1:9000"}}
	for _, t := range []struct {
		url     string
		lists   Lists
		refused string
	}{
		{"https://s3.example.com", Lists{}, ""},
		// Private ranges hold the cluster's own pods, services and nodes:
		// denied until the admin allows a store there.
		{"http://minio.internal:9000", Lists{}, "is private (10.0.0.0/8), denied by default"},
		{"http://10.1.2.3:9000", Lists{}, "is private (10.0.0.0/8)"},
		{"http://172.20.0.1", Lists{}, "is private (172.16.0.0/12)"},
		{"http://192.168.1.10:9000", Lists{}, "is private (192.168.0.0/16)"},
		{"http://100.64.0.1", Lists{}, "shared address space"},
		{"http://[fd12::1]:9000", Lists{}, "unique local"},
		{"http://[::ffff:10.0.0.5]:9000", Lists{}, "is private (10.0.0.0/8)"},
		{"http://minio.internal:9000", Lists{AllowHosts: []string{"minio.internal:9000"}}, ""},
		{"http://10.1.2.3:9000", Lists{AllowCIDRs: []string{"10.1.0.0/16"}}, ""},
		{"http://[2001:db8::1]:9000", Lists{}, ""},
		{"http://127.0.0.1:8091", Lists{}, "loopback"},
		{"http://127.0.0.2", Lists{}, "loopback"},
		{"http://localhost:9000", Lists{}, "loopback"},
		{"http://[::1]:9000", Lists{}, "loopback"},
		{"http://169.254.169.254/latest/meta-data", Lists{}, "cloud metadata"},
		{"http://[fd00:ec2::254]", Lists{}, "AWS metadata"},
		{"http://100.100.100.200", Lists{}, "Alibaba"},
		{"http://169.254.170.2/v2/credentials", Lists{}, "container credentials"},
		{"http://metadata.google.internal", Lists{}, "metadata service"},
		{"http://169.254.10.1", Lists{}, "link-local"},
		{"http://[fe80::1]", Lists{}, "link-local"},
		{"http://0.0.0.0:8091", Lists{}, "unspecified"},
		{"http://[::]:8091", Lists{}, "unspecified"},
		{"http://224.0.0.1", Lists{}, "multicast"},
		{"http://255.255.255.255", Lists{}, "reserved"},
		{"http://[::ffff:127.0.0.1]", Lists{}, "loopback"},
		{"http://mapped.example.com", Lists{}, "loopback"},
		{"http://nat64.example.com", Lists{}, "cloud metadata"},
		{"http://rebind.example.com", Lists{}, "169.254.169.254"},
		{"http://2130706433", Lists{}, "numeric form"},
		{"http://0x7f.1", Lists{}, "numeric form"},
		{"http://127.1", Lists{}, "numeric form"},
		{"http://017700000001", Lists{}, "numeric form"},
		{"http://nowhere.example.com", Lists{}, "does not resolve"},
		{"ftp://s3.example.com", Lists{}, "not an http"},
		{"file:///etc/passwd", Lists{}, "not an http"},
		{"s3.example.com", Lists{}, "not an http"},
		{"http://user:pw@s3.example.com", Lists{}, "user info"},
		{"http://[fe80::1%25eth0]", Lists{}, "zone"},
		{"http://bad_host!.com", Lists{}, "not a DNS name"},

		// Admin allowances: the exact store, by host and port.
		{"http://127.0.0.1:9000", local, ""},
		{"http://127.0.0.1:8091", local, "loopback"},
		{"http://store.lab:9000", Lists{AllowHosts: []string{"store.lab"}}, ""},
		{"http://a.store.lab", Lists{AllowHosts: []string{"*.lab"}}, "does not resolve"},
		{"http://store.lab", Lists{AllowHosts: []string{"*.lab"}}, ""},
		{"http://127.0.0.1:9000", Lists{AllowCIDRs: []string{"127.0.0.1/32"}}, ""},
		{"http://metadata.google.internal", Lists{AllowCIDRs: []string{"169.254.0.0/16"}}, "metadata service"},
		// Denials win.
		{"http://minio.internal", Lists{DenyCIDRs: []string{"10.0.0.0/8"}}, "denied by the admin"},
		{"http://pods.example.com", Lists{DenyCIDRs: []string{"10.128.0.0/14"}, AllowHosts: []string{"pods.example.com"}}, "denied by the admin"},
		{"http://127.0.0.1:9000", Lists{DenyHosts: []string{"127.0.0.1"}, AllowHosts: []string{"127.0.0.1:9000"}}, "denied by the admin"},
		{"https://s3.example.com", Lists{DenyHosts: []string{"*.example.com"}}, "denied by the admin"},
		{"https://s3.example.com:8443", Lists{DenyHosts: []string{"s3.example.com:443"}}, ""},
	} {
		p, err := t.lists.Compile("endpoints")
		c.Assert(err, IsNil)
		refusal, err := p.Check(context.Background(), names, t.url)
		c.Assert(err, IsNil, Commentf("%s", t.url))
		if t.refused == "" {
			c.Check(refusal, IsNil, Commentf("%s", t.url))
			continue
		}
		c.Assert(refusal, NotNil, Commentf("%s: accepted", t.url))
		c.Check(strings.Contains(refusal.Error(), t.refused), Equals, true, Commentf("%s: %v", t.url, refusal))
	}
}

// A resolver failure that may pass is an error to retry, not a refusal.
func (s *EndpointSuite) TestTransientDNS(c *C) {
	refusal, err := Policy{}.Check(context.Background(), names, "https://flaky.example.com")
	c.Check(refusal, IsNil)
	var dnsErr *net.DNSError
	c.Check(errors.As(err, &dnsErr), Equals, true)
}

func (s *EndpointSuite) TestCompile(c *C) {
	_, err := Lists{AllowCIDRs: []string{"10.0.0.0/8", "127.0.0.1", "fd00::/8"}, AllowHosts: []string{"*.example.com", "127.0.0.1:9000", "[::1]:9000", "s3.lab"}}.Compile("endpoints")
	c.Check(err, IsNil)
	_, err = Lists{DenyCIDRs: []string{"10.0.0.0/33"}}.Compile("endpoints")
	c.Check(err, ErrorMatches, `endpoints.denyCIDRs\[0\]: "10.0.0.0/33" is not a CIDR or an address`)
	_, err = Lists{AllowHosts: []string{"ok.lab", "http://x"}}.Compile("endpoints")
	c.Check(err, ErrorMatches, `endpoints.allowHosts\[1\]: .*`)
	_, err = Lists{DenyHosts: []string{"x.lab:99999999"}}.Compile("")
	c.Check(err, ErrorMatches, `denyHosts\[0\]: .* bad port`)
}

func (s *EndpointSuite) TestConfig(c *C) {
	for _, t := range []struct {
		kind    string
		config  map[string]string
		refused string
	}{
		{"aws", map[string]string{"region": "us-east-1", "s3ForcePathStyle": "true", "s3Url": "http://x", "profile": "p", "checksumAlgorithm": ""}, ""},
		{"aws", map[string]string{"credentialsFile": "/credentials/cloud"}, `key "credentialsFile"`},
		{"aws", map[string]string{"customerKeyEncryptionFile": "/etc/key"}, `key "customerKeyEncryptionFile"`},
		{"aws", map[string]string{"customerKeyEncryptionSecret": "cloud-credentials/key"}, "Velero's rights"},
		{"aws", map[string]string{"enableSharedConfig": "true"}, `key "enableSharedConfig"`},
		{"aws", map[string]string{"region": "x", "somethingNew": "1"}, `key "somethingNew"`},
		{"aws", map[string]string{"insecureSkipTLSVerify": "maybe"}, "not a boolean"},
		{"aws", map[string]string{"bucket": "other"}, "objectStorage.bucket"},
		{"gcp", map[string]string{"kmsKeyName": "k", "storeEndpoint": "https://x"}, ""},
		{"gcp", map[string]string{"serviceAccount": "admin@p.iam.gserviceaccount.com"}, `key "serviceAccount"`},
		{"azure", map[string]string{"resourceGroup": "g", "storageAccount": "acct1", "subscriptionId": "6f0d3a52-3c1e-4f8e-9a52-4b7a0d6c2e11", "storageAccountKeyEnvVar": "AZURE_STORAGE_ACCOUNT_ACCESS_KEY"}, ""},
		{"azure", map[string]string{"credentialsFile": "/x"}, `key "credentialsFile"`},
		// Values a plugin pastes into a URL it builds are checked as it
		// builds them.
		{"azure", map[string]string{"storageAccount": "127.0.0.1:8091/x?"}, `key "storageAccount": "127.0.0.1:8091/x?" is not a storage account name`},
		{"azure", map[string]string{"storageAccount": "169.254.169.254#"}, `is not a storage account name`},
		{"azure", map[string]string{"storageAccount": "UPPER"}, `is not a storage account name`},
		{"azure", map[string]string{"resourceGroup": "../../providers/x"}, `key "resourceGroup"`},
		{"azure", map[string]string{"resourceGroup": "rg?api-version=1"}, `key "resourceGroup"`},
		{"azure", map[string]string{"subscriptionId": "sub/resourceGroups/other"}, `key "subscriptionId": "sub/resourceGroups/other" is not a subscription ID`},
		{"aws", map[string]string{"region": "127.0.0.1:8091/x?"}, `key "region": "127.0.0.1:8091/x?" is not a region name`},
		{"aws", map[string]string{"region": "evil.example.com#"}, `is not a region name`},
		{"aws", map[string]string{"region": "us-east-1."}, `is not a region name`},
		{"aws", map[string]string{"region": "minio"}, ""},
		{"", map[string]string{"anything": "x"}, ""},
	} {
		err := CheckConfig(t.kind, t.config)
		if t.refused == "" {
			c.Check(err, IsNil, Commentf("%s %v", t.kind, t.config))
			continue
		}
		c.Assert(err, NotNil, Commentf("%s %v: accepted", t.kind, t.config))
		c.Check(strings.Contains(err.Error(), t.refused), Equals, true, Commentf("%v", err))
	}
	c.Check(URLKeys("aws"), DeepEquals, []string{"publicUrl", "s3Url"})
	c.Check(URLKeys("azure"), DeepEquals, []string{"activeDirectoryAuthorityURI", "storageAccountURI"})
}

// Fingerprint changes when, and only when, what a name resolves to does;
// addresses alone give none.
func (s *EndpointSuite) TestFingerprint(c *C) {
	r := fakeResolver{"s3.example.com": {"203.0.113.10"}}
	ctx := context.Background()
	c.Check(Fingerprint(ctx, r, []string{"http://127.0.0.1:9000", "http://[::1]"}, time.Second), Equals, "")
	a := Fingerprint(ctx, r, []string{"https://S3.example.com."}, time.Second)
	c.Check(a, Not(Equals), "")
	c.Check(Fingerprint(ctx, r, []string{"https://s3.example.com:8443/x"}, time.Second), Equals, a)
	r["s3.example.com"] = []string{"169.254.169.254"}
	c.Check(Fingerprint(ctx, r, []string{"https://s3.example.com"}, time.Second), Not(Equals), a)
	c.Check(Fingerprint(ctx, r, []string{"https://nowhere.example.com"}, time.Second), Not(Equals), "")
}

// TestDialChecksTheAddressDialed: Dial applies the rules to the address it
// connects to, resolving a name once: loopback is refused by default, by
// address or by a name resolving there, and reached once an admin allows
// that host and port; a refusal is a *RefusedError naming the rule.
func (s *EndpointSuite) TestDialChecksTheAddressDialed(c *C) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	c.Assert(err, IsNil)
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	r := fakeResolver{"store.example": {"127.0.0.1"}, "public.example": {"203.0.113.9"}}
	ctx := context.Background()

	for _, addr := range []string{ln.Addr().String(), net.JoinHostPort("store.example", port), net.JoinHostPort("::ffff:127.0.0.1", port)} {
		_, err := Policy{}.Dial(r, nil)(ctx, "tcp", addr)
		var refused *RefusedError
		c.Check(errors.As(err, &refused), Equals, true, Commentf("%s: %v", addr, err))
		c.Check(err, ErrorMatches, `connection refused by the endpoint rules: host .* loopback .*`, Commentf("%s", addr))
	}
	allow, err := Lists{AllowHosts: []string{"store.example:" + port}}.Compile("")
	c.Assert(err, IsNil)
	conn, err := allow.Dial(r, nil)(ctx, "tcp", net.JoinHostPort("store.example", port))
	c.Assert(err, IsNil)
	conn.Close()
	// The allowance is for that host and port only.
	_, err = allow.Dial(r, nil)(ctx, "tcp", ln.Addr().String())
	c.Check(err, ErrorMatches, `connection refused by the endpoint rules: .*loopback.*`)
	deny, err := Lists{DenyCIDRs: []string{"203.0.113.0/24"}}.Compile("")
	c.Assert(err, IsNil)
	_, err = deny.Dial(r, nil)(ctx, "tcp", "public.example:443")
	c.Check(err, ErrorMatches, `.*resolves to 203\.0\.113\.9, in 203\.0\.113\.0/24, denied by the admin`)
}
