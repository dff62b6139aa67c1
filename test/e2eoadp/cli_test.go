package e2eoadp

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "gopkg.in/check.v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nacflow/nacflow/test/e2estack"
)

// The branches of OADP's CLI (migtools/oadp-cli) the copy in
// ../shared/peers holds: oadp-dev has the tenant's backup and bsl verbs and
// the admin's nabsl-request verbs, narsupport adds the tenant's restore
// verbs.
const (
	cliDev = "oadp-dev"
	cliNar = "narsupport"
)

// oadpCLI returns the directory holding OADP's CLI of branch, as
// kubectl-oadp (a kubectl plugin): $NACFLOW_OADP_CLI/<branch> when
// $NACFLOW_OADP_CLI is set (make test builds both into bin/oadp-cli), else
// one built into a directory of the test's from a writable copy of the
// source beside OADP NAC's (peersDir's sibling oadp-cli/<branch>).
func oadpCLI(c *C, root, branch string) string {
	if d := os.Getenv("NACFLOW_OADP_CLI"); d != "" {
		_, err := os.Stat(filepath.Join(d, branch, "kubectl-oadp"))
		c.Assert(err, IsNil, Commentf("$NACFLOW_OADP_CLI: make test builds it"))
		return filepath.Join(d, branch)
	}
	src := filepath.Join(filepath.Dir(peersDir(root)), "oadp-cli", branch)
	if _, err := os.Stat(filepath.Join(src, "go.mod")); err != nil {
		c.Fatalf("OADP's CLI source is not at %s: %v", src, err)
	}
	work := c.MkDir()
	out, err := exec.Command("cp", "-r", src, filepath.Join(work, "src")).CombinedOutput()
	c.Assert(err, IsNil, Commentf("%s", out))
	build := exec.Command("go", "build", "-o", filepath.Join(work, "kubectl-oadp"), ".")
	build.Dir = filepath.Join(work, "src")
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	out, err = build.CombinedOutput()
	c.Assert(err, IsNil, Commentf("building OADP's CLI (%s): %s", branch, out))
	return work
}

// cliUser is one person running OADP's CLI: a kubeconfig of theirs (the
// stack's credentials, impersonating the user when it is not the admin;
// its context's namespace is where OADP's tenant commands act) and a home
// of theirs (OADP's CLI keeps `client config` there).
type cliUser struct {
	kubeconfig, home string
}

// newCLIUser writes a kubeconfig for user ("" the stack's cluster admin)
// whose current namespace is namespace.
func (s *OADPSuite) newCLIUser(c *C, user, namespace string) cliUser {
	cfg, err := clientcmd.LoadFromFile(s.st.Kubeconfig)
	c.Assert(err, IsNil)
	ctx := cfg.Contexts[cfg.CurrentContext]
	c.Assert(ctx, NotNil)
	ctx.Namespace = namespace
	if user != "" {
		cfg.AuthInfos[ctx.AuthInfo].Impersonate = user
	}
	u := cliUser{kubeconfig: filepath.Join(c.MkDir(), "kubeconfig"), home: c.MkDir()}
	c.Assert(clientcmd.WriteToFile(*cfg, u.kubeconfig), IsNil)
	return u
}

// oadp runs `kubectl oadp args` as u with OADP's CLI of directory cli on
// PATH (kubectl finds the plugin there), within 3 minutes, and returns its
// combined output and exit status; the test log keeps both.
func (s *OADPSuite) oadp(c *C, cli string, u cliUser, args ...string) (string, int) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"oadp"}, args...)...)
	cmd.Dir = s.root
	cmd.Env = append(os.Environ(), "KUBECONFIG="+u.kubeconfig, "HOME="+u.home,
		"PATH="+cli+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	code := e2estack.ExitCode(err)
	c.Logf("$ kubectl oadp %s   (exit %d)\n%s", strings.Join(args, " "), code, out)
	return string(out), code
}

// oadpOK is oadp that fails the test unless the command exits 0.
func (s *OADPSuite) oadpOK(c *C, cli string, u cliUser, args ...string) string {
	out, code := s.oadp(c, cli, u, args...)
	c.Assert(code, Equals, 0, Commentf("kubectl oadp %s: %s", strings.Join(args, " "), out))
	return out
}

// TestOADPCLI runs OADP's own CLI, built unchanged from both of its
// branches, against nacflow: first on nacflow's CRDs, then on OADP NAC's
// (what an OADP install whose controller image is swapped for nacflow's
// serves). A tenant (admin of its namespace, nothing more) creates, lists,
// describes and reads the logs of a backup and a restore, deletes them, and
// brings a storage location; the cluster admin lists, describes, approves
// and rejects the locations' requests.
func (s *OADPSuite) TestOADPCLI(c *C) {
	dev, nar := oadpCLI(c, s.root, cliDev), oadpCLI(c, s.root, cliNar)
	s3 := s.get(c, "backupstoragelocations.velero.io", "openshift-adp", "default", "{.spec.config.s3Url}")
	e2estack.CreateBucket(c, s3, "tenants")
	for _, crds := range []struct{ namespace, dir string }{
		{"cli-nacflow", "config/crd/bases"},
		{"cli-oadp", filepath.Join(peersDir(s.root), "config", "crd", "bases")},
	} {
		c.Logf("=== OADP's CLI on %s (CRDs from %s)", crds.namespace, crds.dir)
		s.st.Kubectl(c, "apply", "--server-side", "--force-conflicts", "-f", crds.dir)
		s.startController(c, "nacflow-"+crds.namespace, nil, filepath.Join(s.bin, "nac"), "--oadp-namespace", "openshift-adp",
			"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--require-approval-for-bsl",
			"--endpoint-allow-hosts", strings.TrimPrefix(s3, "http://"))
		s.cliWalk(c, dev, nar, crds.namespace, s3)
		s.stopController(c)
	}
}

// cliWalk is TestOADPCLI's walk in a new namespace ns, with nacflow running.
func (s *OADPSuite) cliWalk(c *C, dev, nar, ns, s3 string) {
	s.st.Kubectl(c, "create", "namespace", ns)
	s.st.Kubectl(c, "create", "rolebinding", "alice-admin", "-n", ns, "--clusterrole", "admin", "--user", "alice")
	s.st.Kubectl(c, "create", "configmap", "-n", ns, "app-config", "--from-literal=greeting=hello")
	s.st.Kubectl(c, "create", "secret", "generic", "-n", ns, "creds",
		"--from-literal=cloud=[default]\naws_access_key_id=cli\naws_secret_access_key=cli-secret\n")
	alice, admin := s.newCLIUser(c, "alice", ns), s.newCLIUser(c, "", ns)
	s.oadpOK(c, dev, admin, "client", "config", "set", "namespace=openshift-adp")

	// Backups: create, get, describe, logs.
	// Without a location of the tenant's, OADP's CLI asks for --force (the
	// admin's default location) and a yes.
	out := s.oadpOK(c, dev, alice, "nonadmin", "backup", "create", "b1", "--force", "--assume-yes")
	c.Check(out, Matches, `(?s).*b1.*`)
	e2estack.Eventually(c, 3*time.Minute, func() (bool, string) {
		out := s.get(c, "nab", ns, "b1", "{.status.phase}|{.status.veleroBackup.status.phase}")
		return out == "Created|Completed", out + "\n" + s.log("nacflow-"+ns)
	})
	veleroB1 := s.get(c, "nab", ns, "b1", "{.status.veleroBackup.name}")
	// The admin's backup commands are Velero's own, on the OADP namespace.
	out = s.oadpOK(c, dev, admin, "backup", "get")
	c.Check(out, Matches, `(?s)NAME\s+STATUS.*\n`+veleroB1+`\s+Completed\s.*`)
	out = s.oadpOK(c, dev, alice, "nonadmin", "backup", "get")
	c.Check(out, Matches, `(?s)NAME.*\nb1 .*`)
	out = s.oadpOK(c, nar, alice, "nonadmin", "backup", "get", "b1")
	c.Check(out, Matches, `(?s).*b1 .*`)
	out = s.oadpOK(c, dev, alice, "nonadmin", "backup", "describe", "b1")
	c.Check(out, Matches, `(?s)Name:\s+b1\nNamespace:\s+`+ns+`\n.*Phase:\s+Created\n.*Velero Backup:\n\s+Name:\s+`+veleroB1+`\n.*Phase:\s+Completed\n.*`)
	// narsupport's describe tells of the Velero Backup from the NAB's status
	// (its --details reads the Velero Backup itself: an admin's view).
	out = s.oadpOK(c, nar, alice, "nonadmin", "backup", "describe", "b1")
	c.Check(out, Matches, `(?s)Name:\s+b1\nNamespace:\s+`+ns+`\nPhase:\s+Created\n.*Items backed up: [1-9]\d*\n.*`)
	for _, cli := range []string{dev, nar} {
		out = s.oadpOK(c, cli, alice, "nonadmin", "backup", "logs", "b1")
		c.Check(out, Matches, `(?s).*Backed up a total of \d+ items.*`)
	}

	// Restores (narsupport): create, get, describe, logs, delete.
	s.st.Kubectl(c, "delete", "configmap", "-n", ns, "app-config")
	out = s.oadpOK(c, nar, alice, "nonadmin", "restore", "create", "r1", "--from-backup", "b1")
	c.Check(out, Matches, `(?s).*r1.*`)
	e2estack.Eventually(c, 3*time.Minute, func() (bool, string) {
		out := s.get(c, "nar", ns, "r1", "{.status.phase}|{.status.veleroRestore.status.phase}")
		return out == "Created|Completed", out
	})
	c.Check(s.get(c, "configmap", ns, "app-config", "{.data.greeting}"), Equals, "hello")
	out = s.oadpOK(c, nar, alice, "nonadmin", "restore", "get")
	c.Check(out, Matches, `(?s).*\nr1 .*`)
	out = s.oadpOK(c, nar, alice, "nonadmin", "restore", "describe", "r1")
	c.Check(out, Matches, `(?s)Name:\s+r1\nNamespace:\s+`+ns+`\nPhase:\s+Created\n.*Items restored: [1-9]\d*\n.*`)
	out = s.oadpOK(c, nar, alice, "nonadmin", "restore", "logs", "r1")
	c.Check(out, Matches, `(?s).*restore completed.*`)
	s.oadpOK(c, nar, alice, "nonadmin", "restore", "delete", "r1", "--confirm")
	e2estack.Eventually(c, time.Minute, func() (bool, string) {
		out, _ := s.st.Run("", "get", "nar", "-n", ns, "r1")
		return strings.Contains(out, "NotFound"), out
	})

	// A storage location the tenant brings; the admin approves one request
	// by the name `get` lists, rejects another by the location's name.
	for _, loc := range []string{"mine", "other"} {
		out = s.oadpOK(c, dev, alice, "nonadmin", "bsl", "create", loc, "--provider", "aws", "--bucket", "tenants",
			"--prefix", loc, "--credential", "creds=cloud", "--region", "us-east-1",
			"--config", "s3ForcePathStyle=true,s3Url="+s3)
		c.Check(out, Matches, `(?s).*`+loc+`.*`)
	}
	requests := map[string]string{}
	e2estack.Eventually(c, time.Minute, func() (bool, string) {
		for _, loc := range []string{"mine", "other"} {
			requests[loc] = s.get(c, "nabsl", ns, loc, "{.status.veleroBackupStorageLocation.nacuuid}")
		}
		return requests["mine"] != "" && requests["other"] != "", fmt.Sprint(requests)
	})
	out = s.oadpOK(c, dev, admin, "nabsl-request", "get")
	for loc, req := range requests {
		c.Check(out, Matches, `(?s).*\n`+req+`\s+openshift-adp\s+Pending\s+`+loc+`\s+`+ns+`\s.*`, Commentf("%s's request %s", loc, req))
	}
	out = s.oadpOK(c, dev, admin, "nabsl-request", "describe", "mine")
	c.Check(out, Matches, `(?s)Name:\s+`+requests["mine"]+`\n.*Phase:\s+Pending\n.*Approval Decision:\s+pending\n.*Name:\s+mine\n\s+Namespace:\s+`+ns+`\n\s+NACUUID:\s+`+requests["mine"]+`\n.*Object Storage Bucket:\s+tenants\n.*`)
	out = s.oadpOK(c, dev, admin, "nabsl-request", "get", requests["other"])
	c.Check(out, Matches, `(?s).*\n`+requests["other"]+`\s.*`)
	s.oadpOK(c, dev, admin, "nabsl-request", "approve", requests["mine"], "--reason", "team bucket")
	s.oadpOK(c, dev, admin, "nabsl-request", "reject", "other", "--reason", "not ours")
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out := s.get(c, "nabsl", ns, "mine", `{.status.conditions[?(@.type=="ClusterAdminApproved")].reason}|{.status.veleroBackupStorageLocation.status.phase}`)
		return out == "BslSpecApproved|Available", out
	})
	e2estack.Eventually(c, time.Minute, func() (bool, string) {
		out := s.get(c, "nabsl", ns, "other", `{.status.conditions[?(@.type=="ClusterAdminApproved")].reason}`)
		return out == "BslSpecRejected", out
	})
	c.Check(s.get(c, "nonadminbackupstoragelocationrequests", "openshift-adp", requests["mine"], `{.metadata.annotations.openshift\.io/oadp-approval-reason}`), Equals, "team bucket")
	c.Check(s.get(c, "backupstoragelocations.velero.io", "openshift-adp", requests["mine"], "{.metadata.name}"), Equals, requests["mine"])
	out, _ = s.st.Run("", "get", "backupstoragelocations.velero.io", "-n", "openshift-adp", requests["other"])
	c.Check(out, Matches, `(?s).*NotFound.*`, Commentf("a rejected location has no Velero BSL"))
	out = s.oadpOK(c, dev, admin, "nabsl-request", "describe", "other")
	c.Check(out, Matches, `(?s).*Phase:\s+Rejected\n.*Approval Decision:\s+reject\n.*`)

	// A backup to the approved location, then both backups deleted: the
	// Velero Backups and their data go.
	s.oadpOK(c, nar, alice, "nonadmin", "backup", "create", "b2", "--storage-location", "mine")
	e2estack.Eventually(c, 3*time.Minute, func() (bool, string) {
		out := s.get(c, "nab", ns, "b2", "{.status.phase}|{.status.veleroBackup.status.phase}")
		return out == "Created|Completed", out
	})
	out = s.oadpOK(c, dev, alice, "nonadmin", "backup", "logs", "b2")
	c.Check(out, Matches, `(?s).*Backed up a total of \d+ items.*`)
	veleroB2 := s.get(c, "nab", ns, "b2", "{.status.veleroBackup.name}")
	// The location's prefix is "<namespace>/<prefix>" (nacflow's rule).
	b2Keys := ns + "/mine/backups/" + veleroB2 + "/"
	c.Assert(e2estack.KeysIn(c, s3, "tenants", b2Keys), Not(HasLen), 0)
	c.Assert(e2estack.KeysIn(c, s3, "velero", "backups/"+veleroB1+"/"), Not(HasLen), 0)
	s.oadpOK(c, dev, alice, "nonadmin", "backup", "delete", "b1", "b2", "--confirm")
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out, _ := s.st.Run("", "get", "nab", "-n", ns, "b1", "b2", "--ignore-not-found", "-o", "name")
		keys := e2estack.KeysIn(c, s3, "velero", "backups/"+veleroB1+"/")
		return strings.TrimSpace(out) == "" && len(keys) == 0, fmt.Sprintf("NABs %q, keys of %s: %v", out, veleroB1, keys)
	})
	c.Check(e2estack.KeysIn(c, s3, "tenants", b2Keys), HasLen, 0)

	// The namespace goes with its locations (nacflow removes their Velero
	// BSLs, Secret copies and requests).
	s.st.Kubectl(c, "delete", "namespace", ns, "--wait=false")
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out, _ := s.st.Run("", "get", "namespace", ns)
		return strings.Contains(out, "NotFound"), out
	})
	for _, kind := range []string{"backupstoragelocations.velero.io", "secrets", "nonadminbackupstoragelocationrequests"} {
		c.Check(count(s.originsOf(c, kind, "openshift.io/oadp-nabsl-origin-"), ns+"/mine"), Equals, 0, Commentf("%s", kind))
	}
}

// TestOADPSamples applies OADP NAC's sample manifests (its config/samples,
// unchanged, `kubectl apply -k` into a tenant's namespace) on OADP NAC's
// CRDs with nacflow running: the backup completes; the restore of it
// completes once the backup has (OADP NAC refuses a restore of a backup
// not yet Created, so its sample restore fails when applied at once: nacflow
// waits instead); the location, whose Secret cloud-credentials is not in
// the namespace, is refused as OADP NAC refuses it (Accepted=False/
// BslSpecValidation, BackingOff); the download request, whose backup
// "non-admin-backup-name" does not exist, waits with OADP NAC's
// NonAdminBackupNotAvailable=True/Error; the approval request made in a
// tenant's namespace is no one's: no controller acts on it.
func (s *OADPSuite) TestOADPSamples(c *C) {
	const ns = "samples"
	samples := filepath.Join(peersDir(s.root), "config", "samples")
	s.st.Kubectl(c, "apply", "--server-side", "--force-conflicts", "-f", filepath.Join(peersDir(s.root), "config", "crd", "bases"))
	s.startController(c, "nacflow-samples", nil, filepath.Join(s.bin, "nac"), "--oadp-namespace", "openshift-adp",
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0")
	defer s.stopController(c)
	s.st.Kubectl(c, "create", "namespace", ns)
	s.st.Kubectl(c, "create", "configmap", "-n", ns, "app-config", "--from-literal=greeting=hello")
	out := s.st.Kubectl(c, "apply", "-k", samples, "-n", ns)
	c.Logf("$ kubectl apply -k %s -n %s\n%s", samples, ns, out)

	e2estack.Eventually(c, 3*time.Minute, func() (bool, string) {
		out := s.get(c, "nab", ns, "nonadminbackup-sample", "{.status.phase}|{.status.veleroBackup.status.phase}")
		return out == "Created|Completed", out + "\n" + s.log("nacflow-samples")
	})
	e2estack.Eventually(c, 3*time.Minute, func() (bool, string) {
		out := s.get(c, "nar", ns, "nonadminrestore-sample", "{.status.phase}|{.status.veleroRestore.status.phase}")
		return out == "Created|Completed", out + " " + s.get(c, "nar", ns, "nonadminrestore-sample", "{.status.conditions}")
	})
	e2estack.Eventually(c, time.Minute, func() (bool, string) {
		out := s.get(c, "nabsl", ns, "nonadminbackupstoragelocation-sample", `{.status.phase}|{.status.conditions[?(@.type=="Accepted")].status}|{.status.conditions[?(@.type=="Accepted")].reason}|{.status.conditions[?(@.type=="Accepted")].message}`)
		return strings.HasPrefix(out, "BackingOff|False|BslSpecValidation|"), out
	})
	c.Check(s.get(c, "nabsl", ns, "nonadminbackupstoragelocation-sample", `{.status.conditions[?(@.type=="Accepted")].message}`), Matches, `.*cloud-credentials.*`)
	e2estack.Eventually(c, time.Minute, func() (bool, string) {
		out := s.get(c, "nadr", ns, "nonadmindownloadrequest-sample", `{.status.phase}|{.status.conditions[?(@.type=="NonAdminBackupNotAvailable")].status}|{.status.conditions[?(@.type=="NonAdminBackupNotAvailable")].reason}`)
		return out == "BackingOff|True|Error", out
	})
	// Nothing in the OADP namespace for the refused location, the waiting
	// download request or the request made in the tenant's namespace.
	for _, kind := range []string{"backupstoragelocations.velero.io", "secrets", "nonadminbackupstoragelocationrequests"} {
		c.Check(count(s.originsOf(c, kind, "openshift.io/oadp-nabsl-origin-"), ns+"/nonadminbackupstoragelocation-sample"), Equals, 0, Commentf("%s", kind))
	}
	c.Check(s.originsOf(c, "downloadrequests.velero.io", "openshift.io/oadp-nadr-origin-"), HasLen, 0)
	c.Check(s.get(c, "nonadminbackupstoragelocationrequests", ns, "nonadminbackupstoragelocationrequest-sample", "{.status}"), Equals, "")

	// Clean up with nacflow running (its finalizers), the backup's data
	// included.
	s.st.Kubectl(c, "patch", "nab", "-n", ns, "nonadminbackup-sample", "--type", "merge", "-p", `{"spec":{"deleteBackup":true}}`)
	s.st.Kubectl(c, "delete", "namespace", ns, "--wait=false")
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out, _ := s.st.Run("", "get", "namespace", ns)
		return strings.Contains(out, "NotFound"), out
	})
}
