package e2e

import (
	"fmt"
	"strings"
	"time"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/test/e2estack"
)

// keysIn lists the keys under prefix in bucket of the store at s3 (S3
// ListObjects over plain HTTP; the local store checks no signatures).
func keysIn(c *C, s3, bucket, prefix string) []string { return e2estack.KeysIn(c, s3, bucket, prefix) }

// bslPhase returns a Velero BSL's phase and message.
func (s *E2ESuite) bslPhase(c *C, name string) string {
	return s.kubectl(c, "get", "backupstoragelocations.velero.io", "-n", "openshift-adp", name, "-o", "jsonpath={.status.phase}|{.status.message}")
}

// waitRevalidated waits until Velero validated every location again after
// now (two validation periods of the suite's stack, and then some).
func waitRevalidated() { time.Sleep(2*validation + 2*time.Second) }

// nabCompletes applies a NAB of ns (into location, "" for the default) and
// waits until its Velero backup is Completed; it returns the Velero name.
func (s *E2ESuite) nabCompletes(c *C, ns, name, location string) string {
	spec := "{}"
	if location != "" {
		spec = "{storageLocation: " + location + "}"
	}
	s.kubectlIn(c, fmt.Sprintf("apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminBackup\nmetadata: {name: %s, namespace: %s}\nspec:\n  backupSpec: %s\n", name, ns, spec),
		"apply", "-f", "-")
	var veleroName string
	e2estack.Eventually(c, 3*time.Minute, func() (bool, string) {
		out := s.kubectl(c, "get", "nab", "-n", ns, name, "-o", "jsonpath={.status.veleroBackup.status.phase}|{.status.veleroBackup.name}|{.status.plan.current}")
		veleroName = strings.Split(out, "|")[1]
		return strings.HasPrefix(out, "Completed|"), out
	})
	return veleroName
}

const tenantLocation = `apiVersion: oadp.openshift.io/v1alpha1
kind: NonAdminBackupStorageLocation
metadata: {name: %[2]s, namespace: %[1]s}
spec:
  backupStorageLocationSpec:
    provider: aws
    objectStorage: {bucket: %[3]s, prefix: %[4]s}
    config: {region: us-east-1, s3ForcePathStyle: "true", s3Url: %[5]q}
    credential: {name: creds, key: cloud}
`

// tenant creates namespace ns with labels, a credential Secret and a
// ConfigMap to back up.
func (s *E2ESuite) tenant(c *C, ns string, labels ...string) {
	s.kubectl(c, "create", "namespace", ns)
	if len(labels) > 0 {
		s.kubectl(c, append([]string{"label", "namespace", ns}, labels...)...)
	}
	s.kubectl(c, "create", "secret", "generic", "-n", ns, "creds",
		"--from-literal=cloud=[default]\naws_access_key_id="+ns+"\naws_secret_access_key="+ns+"-secret\n")
	s.kubectl(c, "create", "configmap", "-n", ns, "cm", "--from-literal=k=v")
}

// TestTenantLocationOnAdminBucketRefused: a tenant location inside the
// admin's default location (bucket velero, no prefix) is refused naming the
// default location; nothing reaches Velero, the default location stays
// Available across Velero's revalidation, and other tenants' backups still
// complete.
func (s *E2ESuite) TestTenantLocationOnAdminBucketRefused(c *C) {
	s.tenant(c, "tenant-g")
	s.kubectlIn(c, fmt.Sprintf(tenantLocation, "tenant-g", "sneaky", "velero", "x", s.s3URL(c)), "apply", "-f", "-")
	e2estack.Eventually(c, 30*time.Second, func() (bool, string) {
		out := s.kubectl(c, "get", "nabsl", "-n", "tenant-g", "sneaky", "-o", `jsonpath={.status.phase}|{.status.conditions[?(@.type=="Accepted")].message}`)
		return strings.HasPrefix(out, "BackingOff|") &&
			strings.Contains(out, `bucket "velero" is used by BackupStorageLocation openshift-adp/default (admin)`), out
	})
	c.Check(s.kubectl(c, "get", "backupstoragelocations.velero.io", "-n", "openshift-adp", "-l", "openshift.io/oadp-nabsl-origin-nacuuid", "-o", "name"),
		Not(Matches), `(?s).*tenant-g.*`)
	describe := s.kubectl(c, "describe", "nabsl", "-n", "tenant-g", "sneaky")
	c.Check(e2estack.InOrder(describe, "Warning", "PhaseFailed", "BackupStorageLocation openshift-adp/default (admin)"), Equals, true, Commentf(describe))
	waitRevalidated()
	c.Check(s.bslPhase(c, "default"), Matches, `Available\|.*`)
	s.tenant(c, "tenant-g2")
	s.nabCompletes(c, "tenant-g2", "still-works", "")
	c.Check(keysIn(c, s.s3URL(c), "velero", "tenant-g/"), HasLen, 0)
}

// sharedBlueprint shares bucket "shared" with tenants labelled share=yes,
// their prefixes forced under "tenants/".
const sharedBlueprint = `apiVersion: oadp.openshift.io/v1alpha1
kind: Blueprint
metadata: {name: share-bucket, namespace: openshift-adp}
spec:
  kind: NonAdminBackupStorageLocation
  namespaceSelector: {matchLabels: {share: "yes"}}
  actions:
    create:
      phases:
      - name: validate
        func: ValidateBSLSpec
        args:
          sharedBuckets: [{bucket: shared, root: tenants}]
      - {name: approval, func: RequestApproval, timeout: 720h}
      - {name: copySecret, func: CopySecret}
      - name: createBSL
        func: CreateVeleroBSL
        args: {secretName: "{{ .Phases.copySecret.Output.name }}"}
      - name: waitForAvailable
        func: WaitFor
        timeout: 2m
        onTimeout: continue
        args: {kind: BackupStorageLocation, name: "{{ .Phases.createBSL.Output.name }}"}
      - name: syncStatus
        func: SyncStatus
        args: {kind: BackupStorageLocation, name: "{{ .Phases.createBSL.Output.name }}"}
`

// TestSharedBucketWithRealVelero: an admin shares a bucket with tenants
// (ValidateBSLSpec args.sharedBuckets) next to an admin location with a
// prefix on it; two tenants' and the admin's backups all complete in their
// own folders, and every location — the default one too — stays Available
// across Velero's revalidation.
func (s *E2ESuite) TestSharedBucketWithRealVelero(c *C) {
	s3 := s.s3URL(c)
	e2estack.CreateBucket(c, s3, "shared")
	s.kubectlIn(c, fmt.Sprintf(`apiVersion: velero.io/v1
kind: BackupStorageLocation
metadata: {name: admin-shared, namespace: openshift-adp}
spec:
  provider: aws
  objectStorage: {bucket: shared, prefix: admin}
  config: {region: us-east-1, s3ForcePathStyle: "true", s3Url: %q}
  credential: {name: cloud-credentials, key: cloud}
`, s3), "apply", "-f", "-")
	s.kubectlIn(c, sharedBlueprint, "apply", "-f", "-")
	defer s.kubectl(c, "delete", "blueprint", "-n", "openshift-adp", "share-bucket")
	e2estack.Eventually(c, 30*time.Second, func() (bool, string) {
		out := s.kubectl(c, "get", "blueprint", "-n", "openshift-adp", "share-bucket", "-o", `jsonpath={.status.conditions[?(@.type=="Valid")].status}`)
		return out == "True", out
	})
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out := s.bslPhase(c, "admin-shared")
		return strings.HasPrefix(out, "Available|"), out
	})

	names := map[string]string{}
	for _, ns := range []string{"tenant-h", "tenant-i"} {
		s.tenant(c, ns, "share=yes")
		s.kubectlIn(c, fmt.Sprintf(tenantLocation, ns, "team", "shared", "nightly", s3), "apply", "-f", "-")
		names[ns] = s.nabCompletes(c, ns, "into-shared", "team")
	}
	// The admin backs up into its own location on the shared bucket.
	s.kubectlIn(c, `apiVersion: velero.io/v1
kind: Backup
metadata: {name: admin-own, namespace: openshift-adp}
spec: {includedNamespaces: [tenant-h], storageLocation: admin-shared}
`, "apply", "-f", "-")
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out := s.kubectl(c, "get", "backups.velero.io", "-n", "openshift-adp", "admin-own", "-o", "jsonpath={.status.phase}")
		return out == "Completed", out
	})
	for ns, name := range names {
		c.Check(keysIn(c, s3, "shared", "tenants/"+ns+"/nightly/backups/"+name+"/"), Not(HasLen), 0, Commentf(ns))
	}
	c.Check(keysIn(c, s3, "shared", "admin/backups/admin-own/"), Not(HasLen), 0)

	waitRevalidated()
	c.Check(s.bslPhase(c, "default"), Matches, `Available\|.*`)
	c.Check(s.bslPhase(c, "admin-shared"), Matches, `Available\|.*`)
	for _, ns := range []string{"tenant-h", "tenant-i"} {
		out := s.kubectl(c, "get", "nabsl", "-n", ns, "team", "-o", "jsonpath={.status.veleroBackupStorageLocation.status.phase}")
		c.Check(out, Equals, "Available", Commentf(ns))
	}
	// A tenant may not take the admin's folder on the shared bucket.
	s.tenant(c, "tenant-j", "share=yes")
	s.kubectlIn(c, fmt.Sprintf(tenantLocation, "tenant-j", "grab", "shared", "", s3), "apply", "-f", "-")
	e2estack.Eventually(c, 30*time.Second, func() (bool, string) {
		out := s.kubectl(c, "get", "nabsl", "-n", "tenant-j", "grab", "-o", `jsonpath={.status.phase}|{.status.veleroBackupStorageLocation.spec.objectStorage.prefix}`)
		return strings.HasPrefix(out, "Created|tenants/tenant-j") || strings.HasPrefix(out, "BackingOff|"), out
	})
	c.Check(s.kubectl(c, "get", "nabsl", "-n", "tenant-j", "grab", "-o", "jsonpath={.status.veleroBackupStorageLocation.spec.objectStorage.prefix}"),
		Equals, "tenants/tenant-j", Commentf("forced under the shared root, never the admin's folder"))
}
