package e2e

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/test/e2estack"
)

// s3URL returns the object store's URL from the default BSL.
func (s *E2ESuite) s3URL(c *C) string {
	u := s.kubectl(c, "get", "backupstoragelocations.velero.io", "-n", "openshift-adp", "default", "-o", "jsonpath={.spec.config.s3Url}")
	c.Assert(u, Matches, `http://127\.0\.0\.1:[0-9]+`)
	return u
}

// bucketKeys lists the keys under prefix in the velero bucket.
func (s *E2ESuite) bucketKeys(c *C, prefix string) []string {
	return keysIn(c, s.s3URL(c), "velero", prefix)
}

// resourceList reads Velero's <backup>-resource-list.json.gz from the bucket:
// group-resource → ["namespace/name", ...].
func (s *E2ESuite) resourceList(c *C, backup string) map[string][]string {
	resp, err := http.Get(fmt.Sprintf("%s/velero/backups/%s/%s-resource-list.json.gz", s.s3URL(c), backup, backup))
	c.Assert(err, IsNil)
	defer resp.Body.Close()
	c.Assert(resp.StatusCode, Equals, http.StatusOK)
	gz, err := gzip.NewReader(resp.Body)
	c.Assert(err, IsNil)
	raw, err := io.ReadAll(gz)
	c.Assert(err, IsNil)
	list := map[string][]string{}
	c.Assert(json.Unmarshal(raw, &list), IsNil)
	return list
}

// backupItem returns the file at path inside the backup's tarball.
func (s *E2ESuite) backupItem(c *C, backup, path string) string {
	resp, err := http.Get(fmt.Sprintf("%s/velero/backups/%s/%s.tar.gz", s.s3URL(c), backup, backup))
	c.Assert(err, IsNil)
	defer resp.Body.Close()
	c.Assert(resp.StatusCode, Equals, http.StatusOK)
	gz, err := gzip.NewReader(resp.Body)
	c.Assert(err, IsNil)
	tr := tar.NewReader(gz)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		c.Assert(err, IsNil)
		names = append(names, h.Name)
		if h.Name == path {
			data, err := io.ReadAll(tr)
			c.Assert(err, IsNil)
			return string(data)
		}
	}
	c.Fatalf("%s not in backup %s: %v", path, backup, names)
	return ""
}

// veleroLogMentions reports whether the Velero server's log names backup.
func (s *E2ESuite) veleroLogMentions(backup string) bool {
	data, err := os.ReadFile(filepath.Join(s.dir, "velero.log"))
	return err == nil && strings.Contains(string(data), backup)
}

const tenantResources = `apiVersion: v1
kind: ConfigMap
metadata: {name: app-config, namespace: %[1]s}
data: {greeting: hello-from-%[1]s}
---
apiVersion: v1
kind: Secret
metadata: {name: app-secret, namespace: %[1]s}
stringData: {password: s3cr3t-%[1]s}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: app, namespace: %[1]s}
spec:
  replicas: 1
  selector: {matchLabels: {app: app}}
  template:
    metadata: {labels: {app: app}}
    spec:
      containers: [{name: app, image: registry.example/app:1}]
---
apiVersion: v1
kind: Service
metadata: {name: app, namespace: %[1]s}
spec:
  selector: {app: app}
  ports: [{port: 80}]
`

// TestTenantBackupWithRealVelero backs up a tenant namespace holding a
// ConfigMap, a Secret, a Deployment and a Service with the real Velero
// server, and checks what reached the bucket: the tenant's resources, and
// nothing of a second tenant's.
func (s *E2ESuite) TestTenantBackupWithRealVelero(c *C) {
	for _, ns := range []string{"tenant-a", "tenant-b"} {
		s.kubectl(c, "create", "namespace", ns)
		s.kubectlIn(c, fmt.Sprintf(tenantResources, ns), "apply", "-f", "-")
	}
	s.kubectlIn(c, "apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminBackup\nmetadata:\n  name: full\n  namespace: tenant-a\nspec:\n  backupSpec:\n    snapshotVolumes: false\n",
		"apply", "-f", "-")

	var out string
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out = s.kubectl(c, "get", "nab", "-n", "tenant-a", "full", "-o",
			"jsonpath={.status.veleroBackup.status.phase}|{.status.plan.state}|{.status.veleroBackup.status.progress.itemsBackedUp}|{.status.veleroBackup.status.progress.totalItems}|{.status.veleroBackup.name}")
		return strings.HasPrefix(out, "Completed|complete|"), out
	})
	f := strings.Split(out, "|")
	backedUp, _ := strconv.Atoi(f[2])
	total, _ := strconv.Atoi(f[3])
	c.Check(backedUp > 0, Equals, true, Commentf(out))
	c.Check(backedUp, Equals, total, Commentf("the NAB mirrors Velero's progress: %s", out))
	name := f[4]

	keys := s.bucketKeys(c, "backups/"+name+"/")
	for _, want := range []string{name + ".tar.gz", "velero-backup.json", name + "-resource-list.json.gz", name + "-logs.gz"} {
		c.Check(contains(keys, "backups/"+name+"/"+want), Equals, true, Commentf("%s in %v", want, keys))
	}

	// The data, not only the names: the ConfigMap as Velero stored it.
	cm := s.backupItem(c, name, "resources/configmaps/namespaces/tenant-a/app-config.json")
	c.Check(cm, Matches, `(?s).*"greeting":\s*"hello-from-tenant-a".*`)

	// Velero's own log tells of the backup.
	c.Check(s.veleroLogMentions(name), Equals, true, Commentf("velero.log should mention %s", name))

	list := s.resourceList(c, name)
	for gr, item := range map[string]string{
		"v1/ConfigMap": "tenant-a/app-config", "v1/Secret": "tenant-a/app-secret",
		"apps/v1/Deployment": "tenant-a/app", "v1/Service": "tenant-a/app",
	} {
		c.Check(contains(list[gr], item), Equals, true, Commentf("%s %s in %v", gr, item, list[gr]))
	}
	for gr, items := range list {
		for _, item := range items {
			c.Check(strings.HasPrefix(item, "tenant-b/") || item == "tenant-b", Equals, false, Commentf("%s %s of another tenant in the backup", gr, item))
			c.Check(strings.Contains(gr, "oadp.openshift.io"), Equals, false, Commentf("NAC kind %s in the backup", gr))
		}
	}

	// Restore: the tenant's resources are deleted, a NonAdminRestore brings
	// them back with the same data, through the real Velero server.
	s.kubectl(c, "delete", "-n", "tenant-a", "configmap/app-config", "secret/app-secret", "deployment/app", "service/app")
	s.kubectlIn(c, "apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminRestore\nmetadata:\n  name: back\n  namespace: tenant-a\nspec:\n  restoreSpec:\n    backupName: full\n",
		"apply", "-f", "-")
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out := s.kubectl(c, "get", "nar", "-n", "tenant-a", "back", "-o", "jsonpath={.status.veleroRestore.status.phase}|{.status.plan.state}")
		return out == "Completed|complete", out
	})
	c.Check(s.kubectl(c, "get", "configmap", "-n", "tenant-a", "app-config", "-o", "jsonpath={.data.greeting}"), Equals, "hello-from-tenant-a")
	c.Check(s.kubectl(c, "get", "secret", "-n", "tenant-a", "app-secret", "-o", "jsonpath={.data.password}"), Equals, "czNjcjN0LXRlbmFudC1h") // base64 of s3cr3t-tenant-a
	s.kubectl(c, "get", "deployment", "-n", "tenant-a", "app")
	s.kubectl(c, "get", "service", "-n", "tenant-a", "app")
	d := s.kubectl(c, "describe", "nar", "-n", "tenant-a", "back")
	c.Check(e2estack.InOrder(d, "Started action restore", "validate", "waitForBackup", "waitForTurn", "createRestore", "waitForRestore", "syncStatus", "Ended action restore"), Equals, true, Commentf(d))
	// Tenant B was never touched.
	c.Check(s.kubectl(c, "get", "configmap", "-n", "tenant-b", "app-config", "-o", "jsonpath={.data.greeting}"), Equals, "hello-from-tenant-b")

	// Permanent deletion: Velero processes the DeleteBackupRequest, the
	// files leave the bucket, the Velero Backup and the NAB go.
	s.kubectl(c, "patch", "nab", "-n", "tenant-a", "full", "--type", "merge", "-p", `{"spec":{"deleteBackup":true}}`)
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out := s.kubectlAllowFail("get", "nab", "-n", "tenant-a", "full", "-o", "jsonpath={.status.plan.current}")
		return strings.Contains(out, "NotFound"), out
	})
	c.Check(s.bucketKeys(c, "backups/"+name+"/"), HasLen, 0)
	c.Check(s.kubectlAllowFail("get", "backups.velero.io", "-n", "openshift-adp", name), Matches, `(?s).*NotFound.*`)
	c.Check(s.veleroLogMentions("deletebackuprequest"), Equals, true)
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// TestTenantBucketWithRealVelero: a tenant brings its own location (the same
// store, the bucket make run makes for tenants, its own credentials); Velero
// validates it, a NAB backs up into it, and the files land under the prefix
// forced to the tenant's namespace.
func (s *E2ESuite) TestTenantBucketWithRealVelero(c *C) {
	s.kubectl(c, "create", "namespace", "tenant-c")
	s.kubectl(c, "create", "secret", "generic", "-n", "tenant-c", "creds",
		"--from-literal=cloud=[default]\naws_access_key_id=tenant-c\naws_secret_access_key=tenant-c-secret\n")
	s.kubectl(c, "create", "configmap", "-n", "tenant-c", "c-config", "--from-literal=k=v")
	s.kubectlIn(c, fmt.Sprintf(`apiVersion: oadp.openshift.io/v1alpha1
kind: NonAdminBackupStorageLocation
metadata: {name: own, namespace: tenant-c}
spec:
  backupStorageLocationSpec:
    provider: aws
    objectStorage: {bucket: tenants, prefix: mine}
    config: {region: us-east-1, s3ForcePathStyle: "true", s3Url: %q}
    credential: {name: creds, key: cloud}
`, s.s3URL(c)), "apply", "-f", "-")
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out := s.kubectl(c, "get", "nabsl", "-n", "tenant-c", "own", "-o", "jsonpath={.status.phase}|{.status.veleroBackupStorageLocation.status.phase}")
		return out == "Created|Available", out
	})
	s.kubectlIn(c, "apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminBackup\nmetadata: {name: into-own, namespace: tenant-c}\nspec:\n  backupSpec: {storageLocation: own}\n",
		"apply", "-f", "-")
	var name string
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out := s.kubectl(c, "get", "nab", "-n", "tenant-c", "into-own", "-o", "jsonpath={.status.veleroBackup.status.phase}|{.status.veleroBackup.name}")
		parts := strings.Split(out, "|")
		name = parts[len(parts)-1]
		return strings.HasPrefix(out, "Completed|"), out
	})
	c.Check(keysIn(c, s.s3URL(c), "tenants", "tenant-c/mine/backups/"+name+"/"), Not(HasLen), 0)
	c.Check(s.bucketKeys(c, "backups/"+name+"/"), HasLen, 0, Commentf("not in the default location's bucket"))
	c.Check(s.bucketKeys(c, "tenant-c/"), HasLen, 0, Commentf("nothing of the tenant in the admin's bucket"))
}

// TestSyncAfterRebuildWithRealVelero: the NAB and its Velero Backup object
// are gone (as after a cluster rebuild) but the data is in the bucket;
// Velero's own BSL sync brings the Backup object back and nacflow's backup
// sync brings the NAB back, adopting the backup without making a new one.
func (s *E2ESuite) TestSyncAfterRebuildWithRealVelero(c *C) {
	s.kubectl(c, "create", "namespace", "tenant-d")
	s.kubectl(c, "label", "namespace", "tenant-d", "purpose=e2e")
	s.kubectlIn(c, "apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminBackup\nmetadata: {name: precious, namespace: tenant-d, labels: {team: red}}\nspec:\n  backupSpec: {}\n",
		"apply", "-f", "-")
	var name string
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out := s.kubectl(c, "get", "nab", "-n", "tenant-d", "precious", "-o", "jsonpath={.status.veleroBackup.status.phase}|{.status.veleroBackup.name}")
		parts := strings.Split(out, "|")
		name = parts[len(parts)-1]
		return strings.HasPrefix(out, "Completed|"), out
	})
	// "Rebuild": kubectl delete removes the NAB and the Velero Backup object;
	// the data stays in the bucket.
	s.kubectl(c, "delete", "nab", "-n", "tenant-d", "precious")
	c.Check(s.bucketKeys(c, "backups/"+name+"/"), Not(HasLen), 0)
	// Velero resyncs a location whose bucket revision did not change only
	// about once a minute: allow for that.
	e2estack.Eventually(c, 3*time.Minute, func() (bool, string) {
		out := s.kubectlAllowFail("get", "nab", "-n", "tenant-d", "precious", "-o",
			`jsonpath={.metadata.labels.team}|{.metadata.labels.openshift\.io/oadp-nab-synced-from-nacuuid}|{.status.plan.action}|{.status.plan.state}|{.status.veleroBackup.name}|{.status.veleroBackup.status.phase}`)
		return strings.HasPrefix(out, "red|") && strings.HasSuffix(out, "|adopt|complete|"+name+"|Completed"), out
	})
	out := s.kubectl(c, "get", "backups.velero.io", "-n", "openshift-adp", "-o", "name")
	c.Check(strings.Count(out, "tenant-d-precious-"), Equals, 1, Commentf("one Velero Backup, adopted: %s", out))
}
