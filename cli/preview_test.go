package cli

import (
	"bytes"
	"strings"
	"time"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

type PreviewSuite struct{}

var _ = Suite(&PreviewSuite{})

// The table shows the counts and one line per item, the reason and the
// fields; yaml and json print status.preview alone.
func (s *PreviewSuite) TestPrintPreview(c *C) {
	pv := &v1alpha1.RestorePreview{BackupName: "vb", Total: 3, Create: 1, Skip: 1, Update: 1,
		Message: "3 items of Velero Backup vb for namespace demo: 1 create, 1 skip, 1 update, 0 excluded",
		Items: []v1alpha1.RestorePreviewItem{
			{Resource: "configmaps", Name: "changed", Outcome: "update", Fields: []string{"data.k", "metadata.labels.a"}},
			{Resource: "configmaps", Name: "gone", Outcome: "create"},
		}}
	var out bytes.Buffer
	c.Assert(printPreview(&out, pv, ""), IsNil)
	c.Check(out.String(), Equals, `Preview of Velero Backup vb: 3 items of Velero Backup vb for namespace demo: 1 create, 1 skip, 1 update, 0 excluded.
create 1, skip 1, update 1, excluded 0

OUTCOME  RESOURCE    NAME     DETAILS
update   configmaps  changed  fields: data.k, metadata.labels.a
create   configmaps  gone     
(2 of 3 items listed)
`)
	out.Reset()
	c.Assert(printPreview(&out, pv, "yaml"), IsNil)
	c.Check(strings.HasPrefix(out.String(), "backupName: vb\ncreate: 1\n"), Equals, true, Commentf("%s", out.String()))
	out.Reset()
	c.Assert(printPreview(&out, pv, "json"), IsNil)
	c.Check(out.String(), Matches, `(?s)\{\n  "backupName": "vb",.*"outcome": "update".*\}\n`)
}

// A preview's name prefix stays a DNS label's length.
func (s *PreviewSuite) TestPreviewPrefix(c *C) {
	c.Check(previewPrefix("b1"), Equals, "b1-preview-")
	long := previewPrefix(strings.Repeat("a", 40) + "-" + strings.Repeat("b", 40))
	c.Check(len(long) <= 50, Equals, true, Commentf("%s", long))
	c.Check(strings.HasSuffix(long, "a-preview-") || strings.HasSuffix(long, "b-preview-"), Equals, true, Commentf("%s", long))
}

// describe tells a preview's result, not a Velero Restore's.
func (s *PreviewSuite) TestDescribePreview(c *C) {
	nar := &v1alpha1.NonAdminRestore{Spec: v1alpha1.NonAdminRestoreSpec{Preview: true}}
	nar.Name, nar.Namespace = "p", "demo"
	var out bytes.Buffer
	DescribeRestore(&out, nar, nil, time.Now())
	c.Check(out.String(), Matches, `(?s).*Preview:\s+<not yet>\n.*`)
	nar.Status.Preview = &v1alpha1.RestorePreview{BackupName: "vb", Total: 1, Create: 1, Message: "1 items",
		Items: []v1alpha1.RestorePreviewItem{{Resource: "configmaps", Name: "gone", Outcome: "create"}}}
	out.Reset()
	DescribeRestore(&out, nar, nil, time.Now())
	c.Check(out.String(), Matches, `(?s).*Preview:\nPreview of Velero Backup vb: 1 items\.\ncreate 1, .*\ncreate\s+configmaps\s+gone.*`)
	c.Check(strings.Contains(out.String(), "Velero Restore"), Equals, false, Commentf("%s", out.String()))
}
