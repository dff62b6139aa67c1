package itemdigest_test

import (
	"crypto/sha256"
	"encoding/json"
	"strings"
	"testing"

	. "gopkg.in/check.v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/nacflow/nacflow/internal/policy/itemdigest"
)

func Test(t *testing.T) { TestingT(t) }

type DigestSuite struct{}

var _ = Suite(&DigestSuite{})

// An item with every kind of JSON number Velero meets, unicode, HTML
// characters encoding/json escapes, and keys out of order.
const awkward = `{"kind":"ConfigMap","apiVersion":"v1",
	"metadata":{"name":"cm","namespace":"team","annotations":{"z":"ü € 😀 \u2028 <a href=\"x\">&amp;</a>","a":"\ud83d\ude00"}},
	"spec":{"int":42,"negative":-7,"zero":0,"negzero":-0,"negzerofloat":-0.0,"float":1.5,"whole":3.0,"exp":1e3,"tiny":1e-7,"big":12345678901234567890,
	"huge":1e300,"maxint":9223372036854775807,"minint":-9223372036854775808,"list":[1,2.5,"x",null,true,{"b":1,"a":2}]}}`

// pluginSees is the item as velero-plugin-nacflow receives it, step by
// step as Velero v1.18.3 does it: archive.Unmarshal (json.Unmarshal into
// an *unstructured.Unstructured), restoreItem's obj.DeepCopy(), the
// restore item action client's json.Marshal of UnstructuredContent(), the
// plugin server's json.Unmarshal into an unstructured.Unstructured.
func pluginSees(c *C, raw string) map[string]any {
	var obj unstructured.Unstructured
	c.Assert(json.Unmarshal([]byte(raw), &obj), IsNil)
	itemFromBackup := obj.DeepCopy()
	wire, err := json.Marshal(itemFromBackup.UnstructuredContent())
	c.Assert(err, IsNil)
	var received unstructured.Unstructured
	c.Assert(json.Unmarshal(wire, &received), IsNil)
	return received.UnstructuredContent()
}

// TestRoundTrip: the digest of the tarball's bytes is the digest of the
// item as the plugin receives it, numbers and unicode included, and is the
// SHA-256 of the canonical JSON (sorted keys) cut to 16 bytes.
func (s *DigestSuite) TestRoundTrip(c *C) {
	for _, raw := range []string{
		awkward,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"plain","namespace":"team"},"data":{"k":"v"}}`,
		`{"kind":"X","n":0.1,"m":100000000000000000000000,"o":-1.0e-20,"p":18446744073709551615}`,
		"{\"kind\":\"X\",\"s\":\"invalid \xff utf-8\"}",
	} {
		fromTarball, err := itemdigest.Of([]byte(raw))
		c.Assert(err, IsNil, Commentf("%s", raw))
		received := pluginSees(c, raw)
		fromPlugin, err := itemdigest.OfObject(received)
		c.Assert(err, IsNil)
		c.Check(fromPlugin, Equals, fromTarball, Commentf("%s", raw))
		// The plugin may hand it on again (another round): the same.
		again, err := itemdigest.OfObject(pluginSees(c, mustJSON(c, received)))
		c.Assert(err, IsNil)
		c.Check(again, Equals, fromTarball, Commentf("%s", raw))
	}
	// The canonical form: sorted keys, Velero's number types.
	received := pluginSees(c, awkward)
	spec := received["spec"].(map[string]any)
	c.Check(spec["int"], Equals, int64(42))
	c.Check(spec["whole"], Equals, int64(3))
	c.Check(spec["float"], Equals, 1.5)
	c.Check(spec["big"], Equals, float64(12345678901234567890))
	c.Check(spec["maxint"], Equals, int64(9223372036854775807))
	canonical, err := json.Marshal(received)
	c.Assert(err, IsNil)
	c.Check(strings.HasPrefix(string(canonical), `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"annotations":{"a":"😀","z":"ü € 😀 \u2028 \u003ca href=\"x\"\u003e\u0026amp;\u003c/a\u003e"}`), Equals, true, Commentf("%s", canonical))
	sum := sha256.Sum256(canonical)
	d, err := itemdigest.Of([]byte(awkward))
	c.Assert(err, IsNil)
	c.Check(d[:], DeepEquals, sum[:itemdigest.Size])
}

func mustJSON(c *C, v any) string {
	b, err := json.Marshal(v)
	c.Assert(err, IsNil)
	return string(b)
}

// TestStable: the digest depends on the item, not on its file's layout
// (spacing, key order, a number's spelling); any change of a value
// changes it; what Velero cannot decode has none.
func (s *DigestSuite) TestStable(c *C) {
	a, err := itemdigest.Of([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"n":"1"},"x":2}`))
	c.Assert(err, IsNil)
	b, err := itemdigest.Of([]byte(" {\n\"x\": 2.0, \"data\": {\"n\": \"1\"},\"metadata\":{\"name\":\"cm\"},\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\"}\n"))
	c.Assert(err, IsNil)
	c.Check(b, Equals, a)
	c.Check(a.String(), HasLen, 2*itemdigest.Size)
	for _, changed := range []string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"n":"2"},"x":2}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"n":"1"},"x":2.5}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","labels":{}},"data":{"n":"1"},"x":2}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"n":"1"},"x":"2"}`,
	} {
		d, err := itemdigest.Of([]byte(changed))
		c.Assert(err, IsNil)
		c.Check(d, Not(Equals), a, Commentf("%s", changed))
	}
	for _, bad := range []string{`[1]`, `{"metadata":{"name":"no-kind"}}`, `{"kind":"X"`, ``, `null`} {
		_, err := itemdigest.Of([]byte(bad))
		c.Check(err, NotNil, Commentf("%q", bad))
	}
}

func digest(i int) itemdigest.Digest {
	d, err := itemdigest.OfObject(map[string]any{"kind": "X", "i": int64(i)})
	if err != nil {
		panic(err)
	}
	return d
}

// TestSet: a set is sorted and without repeats whatever order it is made
// in, holds what it was made of and nothing else, and reads back what it
// wrote.
func (s *DigestSuite) TestSet(c *C) {
	var ds []itemdigest.Digest
	for i := 100; i > 0; i-- {
		ds = append(ds, digest(i), digest(i%7))
	}
	set, err := itemdigest.NewSet(ds)
	c.Assert(err, IsNil)
	c.Check(set.Len(), Equals, 101)
	for i := 0; i <= 100; i++ {
		c.Check(set.Contains(digest(i)), Equals, true, Commentf("%d", i))
	}
	c.Check(set.Contains(digest(101)), Equals, false)
	c.Check(itemdigest.Set{}.Contains(digest(1)), Equals, false)

	enc := set.Encode()
	c.Check(enc, HasLen, 1+101*itemdigest.Size)
	c.Check(enc[0], Equals, itemdigest.Version)
	back, err := itemdigest.Decode(enc)
	c.Assert(err, IsNil)
	c.Check(back.Len(), Equals, 101)
	c.Check(back.Encode(), DeepEquals, enc)
	for i := 0; i <= 101; i++ {
		c.Check(back.Contains(digest(i)), Equals, i <= 100)
	}
	empty, err := itemdigest.Decode([]byte{itemdigest.Version})
	c.Assert(err, IsNil)
	c.Check(empty.Len(), Equals, 0)

	// What Encode never writes is refused.
	swapped := append([]byte{}, enc...)
	copy(swapped[1:], enc[1+itemdigest.Size:1+2*itemdigest.Size])
	copy(swapped[1+itemdigest.Size:], enc[1:1+itemdigest.Size])
	repeated := append(append([]byte{}, enc[:1+itemdigest.Size]...), enc[1:1+itemdigest.Size]...)
	for bad, want := range map[string]string{
		"":                     `an empty digest set.*`,
		"\x02":                 `digest set version 2 \(this nacflow reads version 1\)`,
		string(enc[:20]):       `a digest set of 19 bytes is not whole 16-byte digests`,
		string(swapped):        `digest 1 of the set is not above the one before it`,
		string(repeated):       `digest 1 of the set is not above the one before it`,
		string(enc[:1]) + "\n": `a digest set of 1 bytes .*`,
	} {
		_, err := itemdigest.Decode([]byte(bad))
		c.Check(err, ErrorMatches, want, Commentf("%q", bad))
	}
}

// TestBound: 60,000 digests fit a ConfigMap (binaryData under 1 MiB); one
// more is refused, by NewSet as by Decode.
func (s *DigestSuite) TestBound(c *C) {
	ds := make([]itemdigest.Digest, 0, itemdigest.MaxDigests+1)
	for i := 0; i < itemdigest.MaxDigests; i++ {
		ds = append(ds, digest(i))
	}
	set, err := itemdigest.NewSet(append([]itemdigest.Digest{}, ds...))
	c.Assert(err, IsNil)
	c.Check(set.Len(), Equals, itemdigest.MaxDigests)
	enc := set.Encode()
	c.Check(len(enc) < 1<<20, Equals, true, Commentf("%d bytes", len(enc)))
	// Repeats do not count.
	_, err = itemdigest.NewSet(append(append([]itemdigest.Digest{}, ds...), ds[:10]...))
	c.Check(err, IsNil)

	ds = append(ds, digest(itemdigest.MaxDigests))
	_, err = itemdigest.NewSet(ds)
	c.Check(err, Equals, itemdigest.ErrTooMany)
	c.Check(err, ErrorMatches, "more than 60000 distinct items")
	over := append(enc, make([]byte, itemdigest.Size)...)
	_, err = itemdigest.Decode(over)
	c.Check(err, Equals, itemdigest.ErrTooMany)
}

// TestName: the ConfigMap is named after the Backup, a valid ConfigMap
// name whatever the Backup's length, and two long names stay apart.
func (s *DigestSuite) TestName(c *C) {
	c.Check(itemdigest.Name("team-nightly-0f1e2d"), Equals, "team-nightly-0f1e2d-verified-items")
	long := strings.Repeat("a", 240) + "." + strings.Repeat("b", 12)
	n := itemdigest.Name(long)
	c.Check(len(n) <= 253, Equals, true, Commentf("%d", len(n)))
	c.Check(validation.IsDNS1123Subdomain(n), HasLen, 0, Commentf("%s", n))
	c.Check(strings.HasSuffix(n, "-verified-items"), Equals, true)
	c.Check(itemdigest.Name(long+"c"), Not(Equals), n)
	// Valid Backup names (a DNS subdomain, as Velero's are) with a dot
	// wherever the cut may fall.
	for i := 225; i < 254; i++ {
		backup := strings.Repeat("x", i-2) + ".y"
		c.Assert(validation.IsDNS1123Subdomain(backup), HasLen, 0)
		n := itemdigest.Name(backup)
		c.Check(validation.IsDNS1123Subdomain(n), HasLen, 0, Commentf("%d %s", i, n))
	}
}

// TestManifest: a ConfigMap written reads back the same; one without the
// Backup's UID or a set is refused; a reason stands for the set.
func (s *DigestSuite) TestManifest(c *C) {
	set, err := itemdigest.NewSet([]itemdigest.Digest{digest(1), digest(2)})
	c.Assert(err, IsNil)
	m := itemdigest.Manifest{Backup: "b", BackupUID: "uid-1", Set: set}
	cm := m.ConfigMap(metav1.ObjectMeta{Name: itemdigest.Name("b"), Namespace: "oadp", Annotations: map[string]string{"keep": "me"}})
	c.Check(*cm.Immutable, Equals, true)
	c.Check(cm.Annotations, DeepEquals, map[string]string{"keep": "me", itemdigest.BackupAnnotation: "b", itemdigest.BackupUIDAnnotation: "uid-1"})
	back, err := itemdigest.FromConfigMap(cm)
	c.Assert(err, IsNil)
	c.Check(back.Backup, Equals, "b")
	c.Check(string(back.BackupUID), Equals, "uid-1")
	c.Check(back.Set.Len(), Equals, 2)
	c.Check(back.Set.Contains(digest(2)), Equals, true)

	none := itemdigest.Manifest{Backup: "b", BackupUID: "uid-1", Unrecorded: "more than 60000 distinct items"}.ConfigMap(metav1.ObjectMeta{Name: "n"})
	c.Check(none.BinaryData, IsNil)
	back, err = itemdigest.FromConfigMap(none)
	c.Assert(err, IsNil)
	c.Check(back.Unrecorded, Equals, "more than 60000 distinct items")

	delete(cm.Annotations, itemdigest.BackupUIDAnnotation)
	_, err = itemdigest.FromConfigMap(cm)
	c.Check(err, ErrorMatches, `ConfigMap oadp/b-verified-items has no annotation nacflow.io/verified-backup-uid`)
	cm = m.ConfigMap(metav1.ObjectMeta{Name: "x", Namespace: "oadp"})
	cm.BinaryData = nil
	_, err = itemdigest.FromConfigMap(cm)
	c.Check(err, ErrorMatches, `ConfigMap oadp/x has no binaryData digests`)
	cm.BinaryData = map[string][]byte{itemdigest.DataKey: {9}}
	_, err = itemdigest.FromConfigMap(cm)
	c.Check(err, ErrorMatches, `ConfigMap oadp/x: digest set version 9 .*`)
}
