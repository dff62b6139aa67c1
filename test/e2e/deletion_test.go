package e2e

import (
	"strings"
	"time"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/test/e2estack"
)

// TestDeleteDuringDeleteBackupWithRealVelero: kubectl delete right after
// spec.deleteBackup: true lets the permanent deletion finish with the real
// Velero server: no data left in the bucket, no Velero Backup or
// DeleteBackupRequest left, the NAB gone.
func (s *E2ESuite) TestDeleteDuringDeleteBackupWithRealVelero(c *C) {
	s.tenant(c, "tenant-k")
	name := s.nabCompletes(c, "tenant-k", "doomed", "")
	c.Assert(s.bucketKeys(c, "backups/"+name+"/"), Not(HasLen), 0)
	s.kubectl(c, "patch", "nab", "-n", "tenant-k", "doomed", "--type", "merge", "-p", `{"spec":{"deleteBackup":true}}`)
	s.kubectl(c, "delete", "nab", "-n", "tenant-k", "doomed", "--wait=false")
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out := s.kubectlAllowFail("get", "nab", "-n", "tenant-k", "doomed", "-o", "jsonpath={.status.plan.action}|{.status.plan.current}")
		return strings.Contains(out, "NotFound"), out
	})
	c.Check(s.bucketKeys(c, "backups/"+name+"/"), HasLen, 0, Commentf("the backup's data is deleted"))
	c.Check(s.kubectlAllowFail("get", "backups.velero.io", "-n", "openshift-adp", name), Matches, `(?s).*NotFound.*`)
	c.Check(s.kubectl(c, "get", "deletebackuprequests.velero.io", "-n", "openshift-adp", "-l", "velero.io/backup-name="+name, "-o", "name"), Equals, "")
}
