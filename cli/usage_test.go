package cli

import (
	"context"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

type UsageSuite struct{}

var _ = Suite(&UsageSuite{})

// TestUsage: kubectl nac usage sums the namespace's backups that hold data
// by location — not those being deleted or failed, not other namespaces' —
// and counts the ones not measured yet.
func (s *UsageSuite) TestUsage(c *C) {
	nab := func(ns, name, location string, bytes int64, edit func(*v1alpha1.NonAdminBackup)) client.Object {
		n := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.NonAdminBackupSpec{BackupSpec: &velerov1.BackupSpec{StorageLocation: location}}}
		if bytes > 0 {
			n.Status.Usage = &v1alpha1.BackupUsage{TotalBytes: bytes, StorageLocation: v1alpha1.LocationName(location)}
		}
		if edit != nil {
			edit(n)
		}
		return n
	}
	o, out, _ := testOptions(c,
		nab("demo", "a", "", 3<<20, nil),
		nab("demo", "b", "", 1<<20, nil),
		nab("demo", "c", "mine", 512<<10, nil),
		nab("demo", "running", "mine", 0, nil),
		nab("demo", "going", "", 1<<30, func(n *v1alpha1.NonAdminBackup) { n.Spec.DeleteBackup = true }),
		nab("demo", "failed", "", 1<<30, func(n *v1alpha1.NonAdminBackup) {
			n.Status.VeleroBackup = &v1alpha1.VeleroBackup{Name: "f", Status: &velerov1.BackupStatus{Phase: velerov1.BackupPhaseFailed}}
		}),
		nab("other", "x", "", 1<<30, nil),
	)
	root := NewRootCommand(o)
	root.SetArgs([]string{"usage", "-n", "demo"})
	c.Assert(root.ExecuteContext(context.Background()), IsNil)
	c.Check(out.String(), Equals, "LOCATION  BACKUPS  BYTES   NOT MEASURED\n"+
		"default   2        4Mi     0\n"+
		"mine      2        512Ki   1\n"+
		"total     4        4608Ki  1\n")
}
