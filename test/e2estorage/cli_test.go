package e2estorage

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/test/e2estack"
)

// The tenant of the plugin's schedule, location and download checks: ivan
// is the namespace's admin, vera may only view it.
const cliNamespace, cliTenant, cliViewer = "cli-s", "ivan", "vera"

// startCLISchedule creates, when the suite starts, the namespace of
// TestYPluginSchedulesLocationsDownloads, OADP's DataProtectionApplication
// requiring approval of tenants' locations (no other test of the suite
// makes one) and, with kubectl nac as its tenant, a NonAdminSchedule running
// every minute: its first run comes while the suite's other tests run.
func (s *StorageSuite) startCLISchedule(c *C) {
	s.st.Kubectl(c, "create", "namespace", cliNamespace)
	s.st.Kubectl(c, "create", "rolebinding", cliTenant, "-n", cliNamespace, "--clusterrole=admin", "--user="+cliTenant)
	s.st.Kubectl(c, "create", "rolebinding", cliViewer, "-n", cliNamespace, "--clusterrole=view", "--user="+cliViewer)
	s.st.Kubectl(c, "create", "configmap", "-n", cliNamespace, "app-config", "--from-literal=greeting=hello")
	// OADP's DataProtectionApplication requiring the admin's approval of
	// tenants' locations, made now: nac reads an absent DPA again only
	// every 30 s.
	s.st.ApplyApprovalDPA(c)
	e2estack.Eventually(c, 30*time.Second, func() (bool, string) {
		out, code := s.st.Nac(s.bin, cliTenant, "schedule", "create", "every-minute", "-n", cliNamespace, "--schedule", "*/1 * * * *", "--ttl", "1h")
		return code == 0, out // the tenant role aggregates within seconds
	})
}

// TestYPluginSchedulesLocationsDownloads: kubectl nac as a tenant and an
// admin would use it beyond backups and restores (TestPluginAsATenant in
// test/e2e covers those): a schedule created with the plugin runs, pauses
// (no run after) and is deleted keeping its runs; a run's contents download
// as a gzip tarball named after it; OADP's verb-first words list the same;
// --dry-run=client creates nothing; a location created with the plugin
// waits for the admin's approval (bsl request approve) and turns Available;
// a tenant who may only view gets forbidden from every create verb, exit 2,
// nothing created. Named to run late: the schedule's first run comes while
// the other tests run.
func (s *StorageSuite) TestYPluginSchedulesLocationsDownloads(c *C) {
	ns, nac := cliNamespace, func(user string, args ...string) (string, int) {
		return s.st.Nac(s.bin, user, append(args, "-n", cliNamespace)...)
	}
	// A run completes.
	var run string
	e2estack.Eventually(c, 3*time.Minute, func() (bool, string) {
		out := s.st.Kubectl(c, "get", "nas", "-n", ns, "every-minute", "-o", `jsonpath={.status.recentBackups[0].name}|{.status.recentBackups[0].phase}`)
		run = strings.Split(out, "|")[0]
		return strings.HasSuffix(out, "|Completed"), out
	})
	out, code := nac(cliTenant, "schedule", "describe", "every-minute")
	c.Assert(code, Equals, 0, Commentf(out))
	c.Check(out, Matches, `(?s)Name:\s+every-minute\n.*Schedule:\s+\*/1 \* \* \* \*\n.*Paused:\s+false\n.*Velero Schedule:\s+openshift-adp/\S+ \(Enabled\)\n`+
		`Next Run:\s+\S+ \(in [^)]+\)\n.*Recent Runs:\n.*`+run+`\s+Completed.*`)
	out, code = nac(cliTenant, "schedule", "get")
	c.Check(code, Equals, 0)
	c.Check(out, Matches, `NAME\s+SCHEDULE\s+REQUEST-PHASE\s+VELERO-PHASE\s+PAUSED\s+LAST-RUN\s+NEXT-RUN\s+.*\nevery-minute\s+\*/1 \* \* \* \*\s+Created\s+Enabled\s+false\s+.*\n`)

	// Paused: no run starts across the next minute.
	out, code = nac(cliTenant, "schedule", "pause", "every-minute")
	c.Assert(code, Equals, 0, Commentf(out))
	vs := s.st.Kubectl(c, "get", "nas", "-n", ns, "every-minute", "-o", "jsonpath={.status.veleroSchedule.name}")
	e2estack.Eventually(c, 30*time.Second, func() (bool, string) {
		out := s.st.Kubectl(c, "get", "schedules.velero.io", "-n", "openshift-adp", vs, "-o",
			`jsonpath={.spec.paused}/{.metadata.annotations.openshift\.io/oadp-nacflow-paused-by-share}`)
		return out == "true/", out
	})
	runsOf := func() string {
		return s.st.Kubectl(c, "get", "backups.velero.io", "-n", "openshift-adp", "-l", "velero.io/schedule-name="+vs, "-o", "name")
	}
	before := runsOf()
	next := time.Now().Truncate(time.Minute).Add(time.Minute + 15*time.Second)
	time.Sleep(time.Until(next))
	c.Check(runsOf(), Equals, before, Commentf("a paused schedule took a run"))
	c.Check(s.st.Kubectl(c, "get", "nas", "-n", ns, "every-minute", "-o", "jsonpath={.status.nextRun}"), Equals, "")

	// Deleted: its runs stay, each a NonAdminBackup.
	out, code = nac(cliTenant, "schedule", "delete", "every-minute", "--confirm")
	c.Assert(code, Equals, 0, Commentf(out))
	e2estack.Eventually(c, time.Minute, func() (bool, string) {
		out, _ := s.st.Run("", "get", "nas", "-n", ns, "every-minute")
		return strings.Contains(out, "NotFound"), out
	})
	c.Check(s.st.Kubectl(c, "get", "nab", "-n", ns, run, "-o", "jsonpath={.status.veleroBackup.status.phase}"), Equals, "Completed")

	// The run's contents: a gzip tarball named after it, holding the
	// namespace's ConfigMap.
	dir := c.MkDir()
	out, code = nac(cliTenant, "backup", "download", run, "-o", dir)
	c.Assert(code, Equals, 0, Commentf(out))
	file := filepath.Join(dir, run+"-data.tar.gz")
	c.Check(out, Equals, fmt.Sprintf("BackupContents of NonAdminBackup %s written to %s.\n", run, file))
	f, err := os.Open(file)
	c.Assert(err, IsNil)
	defer f.Close()
	gz, err := gzip.NewReader(f)
	c.Assert(err, IsNil, Commentf("a gzip file"))
	tr := tar.NewReader(gz)
	var entries []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		c.Assert(err, IsNil)
		entries = append(entries, h.Name)
	}
	c.Check(strings.Join(entries, "\n"), Matches, `(?s).*resources/configmaps/namespaces/`+ns+`/app-config.json.*`)
	e2estack.Eventually(c, 30*time.Second, func() (bool, string) {
		left := s.st.Kubectl(c, "get", "nadr", "-n", ns, "-o", "name")
		return strings.TrimSpace(left) == "", "NonAdminDownloadRequests left: " + left
	})

	// OADP's words list the same.
	got, code := nac(cliTenant, "backup", "get", "-o", "name")
	c.Assert(code, Equals, 0, Commentf(got))
	for _, words := range [][]string{{"nonadmin", "get", "backup"}, {"na", "backup", "get"}} {
		out, code = nac(cliTenant, append(words, "-o", "name")...)
		c.Check(code, Equals, 0, Commentf(out))
		c.Check(out, Equals, got, Commentf("%v", words))
	}

	// --dry-run=client -o yaml prints and creates nothing.
	for _, args := range [][]string{
		{"backup", "create", "dry"},
		{"restore", "create", "dry", "--from-backup", run},
		{"schedule", "create", "dry", "--schedule", "@daily"},
		{"bsl", "create", "dry", "--provider", "aws", "--bucket", "b", "--credential", "creds=cloud"},
	} {
		out, code = nac(cliTenant, append(args, "--dry-run=client", "-o", "yaml")...)
		c.Check(code, Equals, 0, Commentf("%v: %s", args, out))
		c.Check(out, Matches, `(?s)apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdmin\S+\nmetadata:\n.*name: dry\n.*`, Commentf("%v", args))
	}
	c.Check(s.st.Kubectl(c, "get", "nab,nar,nas,nabsl", "-n", ns, "--field-selector", "metadata.name=dry", "-o", "name"), Equals, "")

	// A location with the admin's approval required (the DPA made at the
	// suite's start).
	s3 := s.st.Kubectl(c, "get", "backupstoragelocations.velero.io", "-n", "openshift-adp", "default", "-o", "jsonpath={.spec.config.s3Url}")
	e2estack.CreateBucket(c, s3, "cli-tenant")
	s.st.Kubectl(c, "create", "secret", "generic", "-n", ns, "creds", "--as", cliTenant,
		"--from-literal=cloud=[default]\naws_access_key_id=ivan\naws_secret_access_key=ivan-secret\n")
	out, code = nac(cliTenant, "bsl", "create", "mine", "--provider", "aws", "--bucket", "cli-tenant", "--prefix", "team",
		"--credential", "creds=cloud", "--region", "us-east-1", "--config", "s3ForcePathStyle=true,s3Url="+s3)
	c.Assert(code, Equals, 0, Commentf(out))
	e2estack.Eventually(c, time.Minute, func() (bool, string) {
		out, _ := nac(cliTenant, "bsl", "describe", "mine")
		return strings.Contains(out, "ClusterAdminApproved") && strings.Contains(out, "Pending"), out
	})
	out, code = s.st.Nac(s.bin, "", "bsl", "request", "approve", ns+"/mine")
	c.Assert(code, Equals, 0, Commentf(out))
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out, _ := nac(cliTenant, "bsl", "get")
		return strings.Contains(out, "Available"), out
	})
	out, code = nac(cliTenant, "bsl", "get")
	c.Check(out, Matches, `(?s)NAME\s+REQUEST-PHASE\s+VELERO-PHASE\s+APPROVED.*\nmine\s+Created\s+Available\s+True.*`)

	// A viewer: forbidden from every create verb, exit 2, nothing made.
	for _, args := range [][]string{
		{"backup", "create", "viewed"},
		{"restore", "create", "viewed", "--from-backup", run},
		{"schedule", "create", "viewed", "--schedule", "@daily"},
		{"bsl", "create", "viewed", "--provider", "aws", "--bucket", "b", "--credential", "creds=cloud"},
		{"backup", "download", run, "-o", dir + "/viewed.tar.gz"},
		{"nonadmin", "create", "backup", "viewed"},
	} {
		out, code = nac(cliViewer, args...)
		c.Check(code, Equals, 2, Commentf("%v: %s", args, out))
		c.Check(out, Matches, `(?s)Error: .*forbidden.*`, Commentf("%v", args))
	}
	c.Check(s.st.Kubectl(c, "get", "nab,nar,nas,nabsl,nadr", "-n", ns, "--field-selector", "metadata.name=viewed", "-o", "name"), Equals, "")
	_, err = os.Stat(dir + "/viewed.tar.gz")
	c.Check(os.IsNotExist(err), Equals, true, Commentf("no file for a refused download"))
}
