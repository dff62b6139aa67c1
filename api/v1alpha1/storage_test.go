package v1alpha1_test

import (
	"strings"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

type StorageSuite struct{}

var _ = Suite(&StorageSuite{})

func (s *StorageSuite) TestCheckPrefix(c *C) {
	for _, tc := range []struct {
		prefix, err string // err "" when clean
	}{
		{"team", ""},
		{"team/my-backups", ""},
		{"tenants/team/a.b/c_d", ""},
		{"", "p must not be empty"},
		{"../other", `p "../other" must be a clean relative path: no ".." segment`},
		{"team/../other", `p "team/../other" must be a clean relative path: no ".." segment`},
		{"./a", `p "./a" must be a clean relative path: no "." segment`},
		{"a//b", `p "a//b" must be a clean relative path: no leading, trailing or doubled "/"`},
		{"/a", `p "/a" must be a clean relative path: no leading, trailing or doubled "/"`},
		{"a/", `p "a/" must be a clean relative path: no leading, trailing or doubled "/"`},
		{`a\b`, `p "a\\\\b" must not contain a backslash`},
		{"a\tb", `p "a\\tb" must not contain control or space characters`},
		{"a b", `p "a b" must not contain control or space characters`},
		{strings.Repeat("x", 513), "p is 513 bytes long, at most 512 are allowed"},
		{strings.Repeat("x", 512), ""},
	} {
		err := v1alpha1.CheckPrefix("p", tc.prefix)
		if tc.err == "" {
			c.Check(err, IsNil, Commentf("%q", tc.prefix))
			continue
		}
		c.Check(err, ErrorMatches, regexpQuote(tc.err), Commentf("%q", tc.prefix))
	}
}

func (s *StorageSuite) TestCheckBucket(c *C) {
	for _, tc := range []struct {
		bucket string
		ok     bool
	}{
		{"velero", true}, {"my.bucket-1_x", true}, {"a", true},
		{"", false}, {"velero/demo", false}, {"-x", false}, {"x-", false}, {".x", false},
		{"a b", false}, {"ä", false}, {strings.Repeat("b", 223), false},
	} {
		err := v1alpha1.CheckBucket("bucket", tc.bucket)
		c.Check(err == nil, Equals, tc.ok, Commentf("%q: %v", tc.bucket, err))
	}
}

func spec(provider, s3URL, bucket, prefix string) *velerov1.BackupStorageLocationSpec {
	sp := &velerov1.BackupStorageLocationSpec{Provider: provider,
		StorageType: velerov1.StorageType{ObjectStorage: &velerov1.ObjectStorageLocation{Bucket: bucket, Prefix: prefix}}}
	if s3URL != "" {
		sp.Config = map[string]string{"s3Url": s3URL}
	}
	return sp
}

// Two locations overlap when the store and bucket are equal and one prefix
// holds the other by whole segments; no prefix holds the whole bucket.
func (s *StorageSuite) TestOverlaps(c *C) {
	admin := v1alpha1.StorageOf(spec("aws", "http://127.0.0.1:9000", "velero", ""))
	for _, tc := range []struct {
		about string
		other *velerov1.BackupStorageLocationSpec
		want  bool
	}{
		{"tenant folder in the admin's whole bucket", spec("aws", "http://127.0.0.1:9000", "velero", "demo/x"), true},
		{"same bucket, the URL spelled differently", spec("velero.io/aws", "HTTP://127.0.0.1:9000/", "velero", "demo"), true},
		{"another bucket", spec("aws", "http://127.0.0.1:9000", "tenants", "demo"), false},
		{"another store", spec("aws", "http://127.0.0.1:9001", "velero", "demo"), false},
		{"another provider", spec("gcp", "http://127.0.0.1:9000", "velero", "demo"), false},
	} {
		c.Check(admin.Overlaps(v1alpha1.StorageOf(tc.other)), Equals, tc.want, Commentf(tc.about))
		c.Check(v1alpha1.StorageOf(tc.other).Overlaps(admin), Equals, tc.want, Commentf("%s (reversed)", tc.about))
	}
	a := v1alpha1.StorageOf(spec("aws", "", "b", "team"))
	for _, tc := range []struct {
		prefix string
		want   bool
	}{
		{"team", true}, {"/team/", true}, {"team/x", true}, {"teams", false}, {"tea", false}, {"other/team", false}, {"", true},
	} {
		c.Check(a.Overlaps(v1alpha1.StorageOf(spec("aws", "", "b", tc.prefix))), Equals, tc.want, Commentf("%q", tc.prefix))
	}
}

// regexpQuote escapes a message for ErrorMatches.
func regexpQuote(s string) string {
	r := strings.NewReplacer(`.`, `\.`, `(`, `\(`, `)`, `\)`, `[`, `\[`, `]`, `\]`, `*`, `\*`, `+`, `\+`, `?`, `\?`, `|`, `\|`, `{`, `\{`, `}`, `\}`, `^`, `\^`, `$`, `\$`)
	return r.Replace(s)
}
