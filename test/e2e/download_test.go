package e2e

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/test/e2estack"
)

// downloadURL GETs a pre-signed URL Velero made and returns the gunzipped
// body.
func downloadURL(c *C, url string) string {
	resp, err := http.Get(url)
	c.Assert(err, IsNil)
	defer resp.Body.Close()
	c.Assert(resp.StatusCode, Equals, http.StatusOK, Commentf("GET %s", url))
	gz, err := gzip.NewReader(resp.Body)
	c.Assert(err, IsNil)
	data, err := io.ReadAll(gz)
	c.Assert(err, IsNil)
	return string(data)
}

// nadr applies a NonAdminDownloadRequest name in ns for the file kind of
// the NonAdminBackup or NonAdminRestore target.
func (s *E2ESuite) nadr(c *C, ns, name, kind, target string) {
	s.kubectlIn(c, fmt.Sprintf("apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminDownloadRequest\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  target:\n    kind: %s\n    name: %s\n",
		name, ns, kind, target), "apply", "-f", "-")
}

// servedURL waits until the NonAdminDownloadRequest ns/name has Velero's
// URL, and returns it.
func (s *E2ESuite) servedURL(c *C, ns, name string) string {
	var out string
	e2estack.Eventually(c, time.Minute, func() (bool, string) {
		out = s.kubectl(c, "get", "nadr", "-n", ns, name, "-o",
			`jsonpath={.status.phase}|{.status.conditions[?(@.type=="Processed")].status}|{.status.velero.status.downloadURL}`)
		return strings.HasPrefix(out, "Created|True|http"), out
	})
	return strings.SplitN(out, "|", 3)[2]
}

// TestDownloadRequestWithRealVelero: a tenant asks for its own backup's log
// and resource list with NonAdminDownloadRequests; the real Velero signs URLs
// to the real store, which serve them; the backup was checked (Verified);
// another tenant naming that backup is refused and gets no Velero
// DownloadRequest.
func (s *E2ESuite) TestDownloadRequestWithRealVelero(c *C) {
	s.kubectl(c, "create", "namespace", "dl-a")
	s.kubectl(c, "create", "configmap", "-n", "dl-a", "app-config", "--from-literal=greeting=hello")
	s.kubectlIn(c, "apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminBackup\nmetadata:\n  name: dl\n  namespace: dl-a\nspec:\n  backupSpec:\n    snapshotVolumes: false\n",
		"apply", "-f", "-")
	var out string
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out = s.kubectl(c, "get", "nab", "-n", "dl-a", "dl", "-o",
			`jsonpath={.status.veleroBackup.status.phase}|{.status.plan.state}|{.status.veleroBackup.name}|{.status.conditions[?(@.type=="Verified")].status}|{.status.conditions[?(@.type=="Verified")].message}`)
		return strings.HasPrefix(out, "Completed|complete|"), out
	})
	f := strings.SplitN(out, "|", 5)
	backup := f[2]
	c.Check(f[3], Equals, "True", Commentf(out))
	c.Check(f[4], Matches, `[0-9]+ items of Velero Backup `+backup+` checked: all belong to namespace dl-a`)

	// The backup's log, through Velero's URL.
	s.nadr(c, "dl-a", "dl-log", "BackupLog", "dl")
	log := downloadURL(c, s.servedURL(c, "dl-a", "dl-log"))
	c.Check(strings.Contains(log, "backup="+"openshift-adp/"+backup), Equals, true, Commentf("the log names the backup: %.500s", log))

	// The resource list: the tenant's ConfigMap is in it.
	s.nadr(c, "dl-a", "dl-resources", "BackupResourceList", "dl")
	list := map[string][]string{}
	c.Assert(json.Unmarshal([]byte(downloadURL(c, s.servedURL(c, "dl-a", "dl-resources"))), &list), IsNil)
	c.Check(contains(list["v1/ConfigMap"], "dl-a/app-config"), Equals, true, Commentf("%v", list))

	// kubectl get shows the request and its expiry.
	c.Check(s.kubectl(c, "get", "nadr", "-n", "dl-a"), Matches, `(?s)NAME\s+REQUEST-PHASE\s+TARGET-KIND\s+TARGET\s+VELERO-PHASE\s+EXPIRES\s+AGE.*dl-log\s+Created\s+BackupLog\s+dl\s+Processed.*`)

	// Another tenant naming dl-a's backup: its own namespace has no such
	// backup, so it backs off as OADP NAC's does (NonAdminBackupNotAvailable);
	// nothing is made for it.
	s.kubectl(c, "create", "namespace", "dl-b")
	s.nadr(c, "dl-b", "steal", "BackupLog", "dl")
	e2estack.Eventually(c, 30*time.Second, func() (bool, string) {
		out = s.kubectl(c, "get", "nadr", "-n", "dl-b", "steal", "-o",
			`jsonpath={.status.phase}|{.status.conditions[?(@.type=="NonAdminBackupNotAvailable")].status}|{.status.conditions[?(@.type=="NonAdminBackupNotAvailable")].reason}|{.status.conditions[?(@.type=="NonAdminBackupNotAvailable")].message}`)
		return strings.HasPrefix(out, "BackingOff|True|"), out
	})
	c.Check(out, Equals, "BackingOff|True|Error|cannot get nonadminbackup: NonAdminBackup dl-b/dl does not exist (yet): the request waits for it")
	origins := s.kubectl(c, "get", "downloadrequests.velero.io", "-n", "openshift-adp", "-o",
		`jsonpath={range .items[*]}{.metadata.annotations.openshift\.io/oadp-nadr-origin-namespace}{" "}{end}`)
	c.Check(strings.Contains(origins, "dl-b"), Equals, false, Commentf("Velero DownloadRequests of: %s", origins))
	c.Check(strings.Contains(origins, "dl-a"), Equals, true, Commentf("Velero DownloadRequests of: %s", origins))
}
