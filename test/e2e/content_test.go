package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/test/e2estack"
)

// TestCredentialProcessNeverRunByVelero: a tenant location whose credential
// (credential_process = sh -c 'touch <marker>', static keys in another
// profile) Velero's
// AWS plugin would hand the AWS SDK is refused naming the key, reaches
// Velero as nothing, and the marker never appears across two of Velero's
// location validations. The control: the same kind of credential on an
// admin's Velero BSL, created at the same time, does make this Velero run
// its command — so the tenant's marker is missing because nacflow stopped
// it, not because this stack could not run it.
func (s *E2ESuite) TestCredentialProcessNeverRunByVelero(c *C) {
	dir := c.MkDir()
	tenantMarker, adminMarker := filepath.Join(dir, "tenant-ran"), filepath.Join(dir, "admin-ran")
	// The AWS SDK runs credential_process when the profile has no static
	// key pair (config/resolve_credentials.go resolveCredsFromProfile), so
	// the static keys sit in another profile of the same file.
	cred := func(marker string) string {
		return fmt.Sprintf("[default]\ncredential_process = sh -c 'touch %s'\n[other]\naws_access_key_id=k\naws_secret_access_key=s\n", marker)
	}
	s3 := s.s3URL(c)

	s.kubectl(c, "create", "namespace", "tenant-cp")
	s.kubectl(c, "create", "secret", "generic", "-n", "tenant-cp", "creds", "--from-literal=cloud="+cred(tenantMarker))
	s.kubectlIn(c, fmt.Sprintf(tenantLocation, "tenant-cp", "runs-a-command", "tenants", "cp", s3), "apply", "-f", "-")

	s.kubectl(c, "create", "secret", "generic", "-n", "openshift-adp", "control-cp", "--from-literal=cloud="+cred(adminMarker))
	defer s.kubectl(c, "delete", "secret", "-n", "openshift-adp", "control-cp")
	s.kubectlIn(c, fmt.Sprintf(`apiVersion: velero.io/v1
kind: BackupStorageLocation
metadata: {name: control-cp, namespace: openshift-adp}
spec:
  provider: aws
  objectStorage: {bucket: control-cp}
  config: {region: us-east-1, s3ForcePathStyle: "true", s3Url: %q}
  credential: {name: control-cp, key: cloud}
`, s3), "apply", "-f", "-")
	defer s.kubectl(c, "delete", "backupstoragelocations.velero.io", "-n", "openshift-adp", "control-cp")

	e2estack.Eventually(c, 30*time.Second, func() (bool, string) {
		out := s.kubectl(c, "get", "nabsl", "-n", "tenant-cp", "runs-a-command", "-o", `jsonpath={.status.phase}|{.status.conditions[?(@.type=="Accepted")].message}`)
		return strings.HasPrefix(out, "BackingOff|") &&
			strings.Contains(out, `key "credential_process" in profile default of Secret creds/cloud is not allowed: the AWS SDK runs it as a command in the Velero server`), out
	})
	describe := s.kubectl(c, "describe", "nabsl", "-n", "tenant-cp", "runs-a-command")
	c.Check(e2estack.InOrder(describe, "Warning", "PhaseFailed", `key "credential_process"`), Equals, true, Commentf(describe))
	c.Check(s.kubectl(c, "get", "backupstoragelocations.velero.io,secrets", "-n", "openshift-adp", "-l", "openshift.io/oadp-nabsl-origin-nacuuid", "-o", "name"),
		Not(Matches), `(?s).*tenant-cp.*`)

	// Velero validates every location each validation period: the admin's
	// runs its command; the tenant's never reached Velero.
	e2estack.Eventually(c, 2*validation+30*time.Second, func() (bool, string) {
		_, err := os.Stat(adminMarker)
		return err == nil, fmt.Sprintf("Velero has not run the admin location's credential_process yet: %v", err)
	})
	waitRevalidated()
	_, err := os.Stat(tenantMarker)
	c.Check(os.IsNotExist(err), Equals, true, Commentf("Velero ran the tenant's credential_process: %v", err))
}
