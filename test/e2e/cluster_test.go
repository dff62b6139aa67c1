package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/test/e2estack"
)

// canI is `kubectl auth can-i VERB RESOURCE -n NS --as USER` ("" ns: all
// namespaces; RESOURCE/SUB: --subresource SUB): "yes" or "no".
func (s *E2ESuite) canI(verb, resource, ns, user string) string {
	args := []string{"auth", "can-i", verb, "--as", user}
	if r, sub, ok := strings.Cut(resource, "/"); ok {
		args = append(args, r, "--subresource", sub)
	} else {
		args = append(args, resource)
	}
	if ns == "" {
		args = append(args, "--all-namespaces")
	} else {
		args = append(args, "-n", ns)
	}
	return strings.TrimSpace(s.kubectlAllowFail(args...))
}

// TestTenantRBACThroughAggregation: users bound only to Kubernetes'
// built-in roles in one namespace get nacflow's rights there through the
// cluster's own ClusterRole aggregation (kube-controller-manager), nowhere
// else, and never Velero's objects or Blueprints; view never reads
// NonAdminDownloadRequests (pre-signed URLs).
func (s *E2ESuite) TestTenantRBACThroughAggregation(c *C) {
	// As make run and make deploy install them (make undeploy, in another
	// test, removes them).
	s.kubectl(c, "apply", "-f", "config/rbac/tenant_roles.yaml")
	for _, ns := range []string{"rbac-a", "rbac-b"} {
		s.kubectl(c, "create", "namespace", ns)
	}
	for user, role := range map[string]string{"alice": "admin", "eddie": "edit", "vera": "view"} {
		s.kubectl(c, "create", "rolebinding", user, "-n", "rbac-a", "--clusterrole="+role, "--user="+user)
	}
	e2estack.Eventually(c, 30*time.Second, func() (bool, string) {
		got := s.canI("create", "nonadminbackups.oadp.openshift.io", "rbac-a", "alice")
		return got == "yes", "alice may create NABs in rbac-a: " + got
	})
	for _, tc := range []struct{ verb, resource, ns, user, want string }{
		{"create", "nonadminbackups.oadp.openshift.io", "rbac-a", "alice", "yes"},
		{"create", "nonadminrestores.oadp.openshift.io", "rbac-a", "alice", "yes"},
		{"create", "nonadminbackupstoragelocations.oadp.openshift.io", "rbac-a", "alice", "yes"},
		{"create", "nonadmindownloadrequests.oadp.openshift.io", "rbac-a", "alice", "yes"},
		{"delete", "nonadminbackups.oadp.openshift.io", "rbac-a", "alice", "yes"},
		{"create", "nonadminbackups.oadp.openshift.io", "rbac-b", "alice", "no"},
		{"get", "backups.velero.io", "openshift-adp", "alice", "no"},
		{"get", "backups.velero.io", "rbac-a", "alice", "no"},
		{"list", "blueprints.oadp.openshift.io", "openshift-adp", "alice", "no"},
		{"create", "blueprints.oadp.openshift.io", "rbac-a", "alice", "no"},
		{"patch", "tenantlocations.oadp.openshift.io", "openshift-adp", "alice", "no"},
		{"list", "nonadminbackupstoragelocationrequests.oadp.openshift.io", "openshift-adp", "alice", "no"},
		{"create", "nonadminbackups.oadp.openshift.io", "rbac-a", "eddie", "yes"},
		{"create", "nonadmindownloadrequests.oadp.openshift.io", "rbac-a", "eddie", "yes"},
		{"get", "backups.velero.io", "openshift-adp", "eddie", "no"},
		{"list", "nonadminbackups.oadp.openshift.io", "rbac-a", "vera", "yes"},
		{"get", "nonadmindownloadrequests.oadp.openshift.io", "rbac-a", "alice", "yes"},
		{"get", "nonadmindownloadrequests.oadp.openshift.io", "rbac-a", "eddie", "yes"},
		// A download request's status holds a pre-signed URL (a
		// BackupContents one opens the namespace's Secrets): view, which
		// may not read Secrets, may not read them either.
		{"get", "nonadmindownloadrequests", "rbac-a", "vera", "no"},
		{"list", "nonadmindownloadrequests.oadp.openshift.io", "rbac-a", "vera", "no"},
		{"watch", "nonadmindownloadrequests.oadp.openshift.io", "rbac-a", "vera", "no"},
		{"get", "nonadmindownloadrequests.oadp.openshift.io/status", "rbac-a", "vera", "no"},
		{"create", "nonadminbackups.oadp.openshift.io", "rbac-a", "vera", "no"},
		{"create", "nonadmindownloadrequests.oadp.openshift.io", "rbac-a", "vera", "no"},
		{"list", "nonadminbackups.oadp.openshift.io", "rbac-b", "vera", "no"},
	} {
		c.Check(s.canI(tc.verb, tc.resource, tc.ns, tc.user), Equals, tc.want, Commentf("%s %s %s -n %s", tc.user, tc.verb, tc.resource, tc.ns))
	}
	// And for real: alice's NAB is accepted and backed up.
	out, err := s.runKubectl("apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminBackup\nmetadata:\n  name: by-alice\n  namespace: rbac-a\nspec:\n  backupSpec: {}\n",
		"apply", "--as", "alice", "-f", "-")
	c.Assert(err, IsNil, Commentf(out))
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out := s.kubectl(c, "get", "nab", "-n", "rbac-a", "by-alice", "-o", "jsonpath={.status.plan.state}")
		return out == "complete", out
	})
}

// TestNamespaceDeletionWithRealVelero: a tenant deletes its namespace while
// it holds a completed NonAdminBackup, one just created, a NonAdminRestore,
// a NonAdminDownloadRequest and its own location with its Secret. The
// namespace is gone within a minute (kube-controller-manager's namespace
// controller, nacflow's finalize actions); the Restores, location, copied
// Secret, approval request and DownloadRequests of the namespace leave the
// OADP namespace; the backup data stays in the bucket; the controller logs
// one line per object; and a namespace of the same name created later gets
// its backups back (Velero's and nacflow's backup sync).
func (s *E2ESuite) TestNamespaceDeletionWithRealVelero(c *C) {
	const ns = "gone"
	s.tenant(c, ns)
	s.kubectlIn(c, fmt.Sprintf(`apiVersion: oadp.openshift.io/v1alpha1
kind: NonAdminBackupStorageLocation
metadata: {name: own, namespace: %[1]s}
spec:
  backupStorageLocationSpec:
    provider: aws
    objectStorage: {bucket: tenants, prefix: gone}
    config: {region: us-east-1, s3ForcePathStyle: "true", s3Url: %[2]q}
    credential: {name: creds, key: cloud}
---
apiVersion: oadp.openshift.io/v1alpha1
kind: NonAdminBackup
metadata: {name: done, namespace: %[1]s}
spec:
  backupSpec: {snapshotVolumes: false}
`, ns, s.s3URL(c)), "apply", "-f", "-")
	var out string
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out = s.kubectl(c, "get", "nab", "-n", ns, "done", "-o", "jsonpath={.status.veleroBackup.status.phase}|{.status.plan.state}|{.status.veleroBackup.name}")
		return strings.HasPrefix(out, "Completed|complete|"), out + "\nVelero's validation errors: " +
			s.kubectlAllowFail("get", "nab", "-n", ns, "done", "-o", "jsonpath={.status.veleroBackup.status.validationErrors}") +
			"\nlocations: " + s.kubectlAllowFail("get", "backupstoragelocations.velero.io", "-n", "openshift-adp")
	})
	backup := strings.Split(out, "|")[2]
	s.kubectlIn(c, fmt.Sprintf(`apiVersion: oadp.openshift.io/v1alpha1
kind: NonAdminRestore
metadata: {name: back, namespace: %[1]s}
spec:
  restoreSpec: {backupName: done}
`, ns), "apply", "-f", "-")
	s.nadr(c, ns, "log", "BackupLog", "done")
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out := s.kubectl(c, "get", "nar", "-n", ns, "back", "-o", "jsonpath={.status.plan.state}") + "|" +
			s.kubectl(c, "get", "nadr", "-n", ns, "log", "-o", "jsonpath={.status.plan.state}") + "|" +
			s.kubectl(c, "get", "nabsl", "-n", ns, "own", "-o", "jsonpath={.status.veleroBackupStorageLocation.status.phase}")
		return out == "complete|complete|Available", out
	})
	c.Check(s.bucketKeys(c, "backups/"+backup+"/"), Not(HasLen), 0)
	// One more backup, still new or running when the namespace goes.
	s.kubectlIn(c, "apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminBackup\nmetadata: {name: late, namespace: "+ns+"}\nspec:\n  backupSpec: {snapshotVolumes: false}\n",
		"apply", "-f", "-")

	start := time.Now()
	s.kubectl(c, "delete", "namespace", ns, "--wait=false")
	e2estack.Eventually(c, time.Minute, func() (bool, string) {
		out := s.kubectlAllowFail("get", "namespace", ns, "-o", "jsonpath={.status.phase}")
		return strings.Contains(out, "NotFound"), fmt.Sprintf("namespace %s: %s; left: %s", ns, out, s.kubectlAllowFail("get", "nac", "-n", ns))
	})
	c.Logf("namespace %s deleted in %s", ns, time.Since(start).Round(time.Millisecond))
	originOf := func(kind, annotation string) string {
		return s.kubectl(c, "get", kind, "-n", "openshift-adp", "-o",
			`jsonpath={range .items[*]}{.metadata.annotations.`+strings.ReplaceAll(annotation, ".", `\.`)+`}{" "}{end}`)
	}
	for kind, annotation := range map[string]string{
		"restores.velero.io":               "openshift.io/oadp-nar-origin-namespace",
		"backupstoragelocations.velero.io": "openshift.io/oadp-nabsl-origin-namespace",
		"downloadrequests.velero.io":       "openshift.io/oadp-nadr-origin-namespace",
		"secrets":                          "openshift.io/oadp-nabsl-origin-namespace",
		"nonadminbackupstoragelocationrequests.oadp.openshift.io": "openshift.io/oadp-nabsl-origin-namespace",
	} {
		c.Check(strings.Fields(originOf(kind, annotation)), Not(Contains), ns, Commentf("%s of %s left in openshift-adp", kind, ns))
	}
	// The data stays in the bucket, as for a plain kubectl delete nab.
	c.Check(s.bucketKeys(c, "backups/"+backup+"/"), Not(HasLen), 0)
	// One line per object in the controller's log.
	logData, err := os.ReadFile(filepath.Join(s.dir, "nac.log"))
	c.Assert(err, IsNil)
	finalized := map[string]int{}
	var lines []string
	for _, line := range strings.Split(string(logData), "\n") {
		entry := struct{ Msg, Namespace, Name, Kind string }{}
		if json.Unmarshal([]byte(line), &entry) != nil || entry.Msg != "finalized" || entry.Namespace != ns {
			continue
		}
		finalized[entry.Kind+" "+entry.Name]++
		lines = append(lines, line)
	}
	c.Check(finalized, DeepEquals, map[string]int{"NonAdminBackup done": 1, "NonAdminBackup late": 1, "NonAdminRestore back": 1,
		"NonAdminBackupStorageLocation own": 1, "NonAdminDownloadRequest log": 1}, Commentf("%s", strings.Join(lines, "\n")))

	// The namespace comes back: Velero's sync brings the Backup object back
	// from the bucket, nacflow's backup sync the NonAdminBackup.
	s.kubectl(c, "create", "namespace", ns)
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out := s.kubectlAllowFail("get", "nab", "-n", ns, "done", "-o", "jsonpath={.status.plan.action}|{.status.plan.state}|{.status.veleroBackup.name}")
		return out == "adopt|complete|"+backup, out
	})
}

// Contains checks that a []string holds a string.
var Contains Checker = containsChecker{&CheckerInfo{Name: "Contains", Params: []string{"obtained", "expected"}}}

type containsChecker struct{ *CheckerInfo }

func (containsChecker) Check(params []any, _ []string) (bool, string) {
	list, ok := params[0].([]string)
	if !ok {
		return false, "obtained is not a []string"
	}
	return contains(list, fmt.Sprint(params[1])), ""
}
