// Package e2eoadp takes over, on the make-run stack with a real Velero
// server and object store, what OADP's own Non-Admin Controller made: OADP
// NAC's manager, built from the copy of its source in ../shared/peers, runs
// on its own CRDs while nacflow is stopped; then it stops and nacflow starts
// on the same objects; then OADP NAC runs again, on nacflow's CRDs. It is
// its own package (go test's per-package time
// limit) and starts its own stack, so it must not run at the same time as
// another package that does (Velero's fixed ports): the Makefile runs it on
// its own.
package e2eoadp

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/internal/localstack/childproc"
	"github.com/nacflow/nacflow/test/e2estack"
)

func Test(t *testing.T) { TestingT(t) }

// OADPSuite runs one stack without a controller: OADP NAC, then nacflow.
type OADPSuite struct {
	root, bin string
	oadpNAC   string // OADP NAC's manager, built for the suite
	st        *e2estack.Stack
	// controller is the controller running now (OADP NAC's or nacflow's).
	controller *exec.Cmd
	logs       string
}

var _ = Suite(&OADPSuite{})

// peersDir is the copy of OADP NAC's source (../shared/peers, beside the
// repository, or $NACFLOW_PEERS).
func peersDir(root string) string {
	if d := os.Getenv("NACFLOW_PEERS"); d != "" {
		return d
	}
	return filepath.Join(root, "..", "shared", "peers", "oadp-non-admin")
}

// oadpManager returns OADP NAC's manager: $NACFLOW_OADP_NAC when it is set
// (make test builds it into bin/ before any test runs), else one built
// into a directory of the test's from a writable copy of peersDir (go build
// writes go.sum updates next to go.mod).
func oadpManager(c *C, root string) string {
	if bin := os.Getenv("NACFLOW_OADP_NAC"); bin != "" {
		_, err := os.Stat(bin)
		c.Assert(err, IsNil, Commentf("$NACFLOW_OADP_NAC: make test builds it"))
		return bin
	}
	src := peersDir(root)
	if _, err := os.Stat(filepath.Join(src, "go.mod")); err != nil {
		c.Fatalf("OADP NAC's source is not at %s (set $NACFLOW_PEERS): %v", src, err)
	}
	work := c.MkDir()
	out, err := exec.Command("cp", "-r", src, filepath.Join(work, "oadp")).CombinedOutput()
	c.Assert(err, IsNil, Commentf("%s", out))
	bin := filepath.Join(work, "oadp-manager")
	build := exec.Command("go", "build", "-o", bin, "./cmd")
	build.Dir = filepath.Join(work, "oadp")
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	out, err = build.CombinedOutput()
	c.Assert(err, IsNil, Commentf("building OADP NAC's manager: %s", out))
	return bin
}

func (s *OADPSuite) SetUpSuite(c *C) {
	s.root = e2estack.RepoRoot(c)
	s.bin = e2estack.BuildBinaries(c, s.root)
	s.oadpNAC = oadpManager(c, s.root)
	s.logs = c.MkDir()
	// The stack's "controller" only sleeps: the test starts OADP NAC, then
	// nacflow, itself.
	s.st = e2estack.Launch(c, s.root, s.bin, c.MkDir(), ">> running the controller", "--allow-store-endpoint=false", "--", "sleep", "86400")
}

func (s *OADPSuite) TearDownSuite(c *C) {
	s.stopController(c)
	if s.st != nil {
		s.st.Interrupt(c)
	}
}

// freeAddr returns a free 127.0.0.1 port.
func freeAddr(c *C) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	c.Assert(err, IsNil)
	defer l.Close()
	return l.Addr().String()
}

// startController runs name (a log file name) with args and env against the
// stack, logging to a file of the suite's.
func (s *OADPSuite) startController(c *C, name string, env []string, args ...string) {
	f, err := os.Create(filepath.Join(s.logs, name+".log"))
	c.Assert(err, IsNil)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = s.root
	cmd.SysProcAttr = childproc.SysProcAttr() // killed with the test binary
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+s.st.Kubeconfig), env...)
	cmd.Stdout, cmd.Stderr = f, f
	c.Assert(cmd.Start(), IsNil)
	s.controller = cmd
}

// stopController stops the running controller (SIGTERM, then SIGKILL after
// 20 s) and waits for it.
func (s *OADPSuite) stopController(c *C) {
	if s.controller == nil || s.controller.Process == nil {
		return
	}
	_ = s.controller.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- s.controller.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = s.controller.Process.Kill()
		<-done
	}
	s.controller = nil
}

// log returns the log of controller name.
func (s *OADPSuite) log(name string) string {
	b, _ := os.ReadFile(filepath.Join(s.logs, name+".log"))
	return string(b)
}

// get returns kubectl get's jsonpath of kind/name in ns.
func (s *OADPSuite) get(c *C, kind, ns, name, jsonpath string) string {
	return s.st.Kubectl(c, "get", kind, "-n", ns, name, "-o", "jsonpath="+jsonpath)
}

// originsOf returns, for every object of kind in the OADP namespace, its
// origin namespace/name annotation pair under prefix
// (openshift.io/oadp-<nab|nar|nabsl>-origin-), a line each.
func (s *OADPSuite) originsOf(c *C, kind, prefix string) []string {
	p := strings.ReplaceAll(prefix, ".", `\.`)
	out := s.st.Kubectl(c, "get", kind, "-n", "openshift-adp", "-o",
		`jsonpath={range .items[*]}{.metadata.annotations.`+p+`namespace}/{.metadata.annotations.`+p+`name}{"\n"}{end}`)
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l != "" && l != "/" {
			lines = append(lines, l)
		}
	}
	return lines
}

// count returns how many times want is in lines.
func count(lines []string, want string) int {
	n := 0
	for _, l := range lines {
		if l == want {
			n++
		}
	}
	return n
}

const tenant = "mig-a"

func nabYAML(name string) string {
	return fmt.Sprintf("apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminBackup\nmetadata: {name: %s, namespace: %s}\nspec:\n  backupSpec: {snapshotVolumes: false}\n", name, tenant)
}

// nabslYAML is a location of the tenant's in bucket "tenants" under
// prefix, with the tenant's Secret "creds".
func nabslYAML(name, prefix, s3 string) string {
	return fmt.Sprintf(`apiVersion: oadp.openshift.io/v1alpha1
kind: NonAdminBackupStorageLocation
metadata: {name: %s, namespace: %s}
spec:
  backupStorageLocationSpec:
    provider: aws
    objectStorage: {bucket: tenants, prefix: %s}
    config: {region: us-east-1, s3ForcePathStyle: "true", s3Url: %q}
    credential: {name: creds, key: cloud}
`, name, tenant, prefix, s3)
}

// approve approves the request made for the tenant's location nabsl, once
// there is one, and waits for the location to be Available.
func (s *OADPSuite) approve(c *C, nabsl string) {
	var request string
	e2estack.Eventually(c, time.Minute, func() (bool, string) {
		out := s.st.Kubectl(c, "get", "nonadminbackupstoragelocationrequests", "-n", "openshift-adp", "-o",
			`jsonpath={range .items[*]}{.metadata.name} {.metadata.annotations.openshift\.io/oadp-nabsl-origin-name}{"\n"}{end}`)
		for _, l := range strings.Split(out, "\n") {
			if name, origin, _ := strings.Cut(l, " "); origin == nabsl {
				request = name
			}
		}
		return request != "", "no request yet: " + out
	})
	s.st.Kubectl(c, "patch", "nonadminbackupstoragelocationrequests", "-n", "openshift-adp", request, "--type", "merge", "-p", `{"spec":{"approvalDecision":"approve"}}`)
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out := s.get(c, "nabsl", tenant, nabsl, "{.status.veleroBackupStorageLocation.status.phase}")
		return out == "Available", out
	})
}

func narYAML(name, backup string) string {
	return fmt.Sprintf("apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminRestore\nmetadata: {name: %s, namespace: %s}\nspec:\n  restoreSpec: {backupName: %s}\n", name, tenant, backup)
}

// TestTakeOverFromOADPNAC: what OADP NAC made — two completed backups, one
// whose Velero Backup exists but has not run, a completed restore, a storage
// location with an approved request — is taken over by nacflow with exactly
// one Velero object per NAC object, status links unchanged and phases equal
// to Velero's; deleteBackup on an OADP-made backup deletes OADP's Backup
// and its data for good; a new backup works. Then the way back (handBack).
func (s *OADPSuite) TestTakeOverFromOADPNAC(c *C) {
	peers := peersDir(s.root)
	// OADP NAC's CRDs, its DataProtectionApplication (approval required).
	s.st.Kubectl(c, "apply", "--server-side", "--force-conflicts", "-f", filepath.Join(peers, "config", "crd", "bases"))
	s.st.ApplyApprovalDPA(c)
	s.startController(c, "oadp-nac", []string{"WATCH_NAMESPACE=openshift-adp"}, s.oadpNAC,
		"--metrics-bind-address", freeAddr(c), "--health-probe-bind-address", freeAddr(c))

	s.st.Kubectl(c, "create", "namespace", tenant)
	s.st.Kubectl(c, "create", "configmap", "-n", tenant, "app-config", "--from-literal=greeting=hello")
	completed := func(name string) {
		e2estack.Eventually(c, 3*time.Minute, func() (bool, string) {
			out := s.get(c, "nab", tenant, name, "{.status.veleroBackup.status.phase}|{.status.phase}")
			return strings.HasPrefix(out, "Completed|"), fmt.Sprintf("%s: %s\n%.3000s", name, out, s.log("oadp-nac"))
		})
	}
	for _, name := range []string{"b1", "b2"} {
		s.st.KubectlIn(c, nabYAML(name), "apply", "-f", "-")
		completed(name)
	}
	s.st.KubectlIn(c, narYAML("r1", "b1"), "apply", "-f", "-")
	e2estack.Eventually(c, 3*time.Minute, func() (bool, string) {
		out := s.get(c, "nar", tenant, "r1", "{.status.veleroRestore.status.phase}")
		return out == "Completed", out
	})
	// A location of the tenant's, approved by the admin.
	s3 := s.get(c, "backupstoragelocations.velero.io", "openshift-adp", "default", "{.spec.config.s3Url}")
	s.st.Kubectl(c, "create", "secret", "generic", "-n", tenant, "creds",
		"--from-literal=cloud=[default]\naws_access_key_id=mig\naws_secret_access_key=mig-secret\n")
	s.st.KubectlIn(c, nabslYAML("mine", "mig", s3), "apply", "-f", "-")
	s.approve(c, "mine")
	// A backup on that location, and a download request of its resource
	// list (OADP NAC serves those only for a tenant's own location).
	s.st.KubectlIn(c, fmt.Sprintf("apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminBackup\nmetadata: {name: bl, namespace: %s}\nspec:\n  backupSpec: {snapshotVolumes: false, storageLocation: mine}\n", tenant), "apply", "-f", "-")
	completed("bl")
	s.st.KubectlIn(c, fmt.Sprintf("apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminDownloadRequest\nmetadata: {name: d1, namespace: %s}\nspec:\n  target: {kind: BackupResourceList, name: bl}\n", tenant), "apply", "-f", "-")
	e2estack.Eventually(c, time.Minute, func() (bool, string) {
		out := s.get(c, "nadr", tenant, "d1", "{.status.velero.status.phase}")
		return out == "Processed", out + " " + s.get(c, "nadr", tenant, "d1", "{.status.conditions}")
	})
	// b3: OADP NAC made its Velero Backup; Velero has not run it when
	// OADP NAC stops.
	s.st.KubectlIn(c, nabYAML("b3"), "apply", "-f", "-")
	e2estack.Eventually(c, time.Minute, func() (bool, string) {
		out := s.get(c, "nab", tenant, "b3", "{.status.veleroBackup.name}")
		if out == "" {
			return false, "no Velero Backup yet"
		}
		_, err := s.st.Run("", "get", "backups.velero.io", "-n", "openshift-adp", out)
		return err == nil, out
	})
	s.stopController(c)

	// What OADP NAC recorded.
	links := map[string]string{}
	for _, n := range []string{"b1", "b2", "b3", "bl"} {
		links["nab/"+n] = s.get(c, "nab", tenant, n, "{.status.veleroBackup.nacuuid}|{.status.veleroBackup.name}")
	}
	links["nar/r1"] = s.get(c, "nar", tenant, "r1", "{.status.veleroRestore.nacuuid}|{.status.veleroRestore.name}")
	links["nabsl/mine"] = s.get(c, "nabsl", tenant, "mine", "{.status.veleroBackupStorageLocation.nacuuid}|{.status.veleroBackupStorageLocation.name}")
	for k, v := range links {
		c.Assert(strings.HasPrefix(v, tenant+"-"), Equals, true, Commentf("%s: OADP NAC's NACUUID is <namespace>-<name>-<uuid>: %s", k, v))
	}

	// nacflow starts on its own CRDs.
	s.st.Kubectl(c, "apply", "--server-side", "--force-conflicts", "-f", "config/crd/bases")
	s.startController(c, "nacflow", nil, filepath.Join(s.bin, "nac"), "--oadp-namespace", "openshift-adp",
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--backup-sync-period", "10s",
		"--endpoint-allow-hosts", strings.TrimPrefix(s3, "http://"))
	for _, n := range []string{"b1", "b2", "b3", "bl"} {
		e2estack.Eventually(c, 3*time.Minute, func() (bool, string) {
			out := s.get(c, "nab", tenant, n, "{.status.plan.state}|{.status.veleroBackup.status.phase}")
			return out == "complete|Completed", fmt.Sprintf("%s: %s\n%.3000s", n, out, s.log("nacflow"))
		})
	}
	e2estack.Eventually(c, time.Minute, func() (bool, string) {
		out := s.get(c, "nar", tenant, "r1", "{.status.plan.state}|{.status.veleroRestore.status.phase}")
		return out == "complete|Completed", out + " " + s.get(c, "nar", tenant, "r1", "{.status.plan.current}")
	})
	e2estack.Eventually(c, time.Minute, func() (bool, string) {
		out := s.get(c, "nabsl", tenant, "mine", "{.status.plan.state}|{.status.veleroBackupStorageLocation.status.phase}")
		return out == "complete|Available", out + " " + s.get(c, "nabsl", tenant, "mine", "{.status.plan.current}: {.status.conditions}")
	})
	d1 := "nadr-" + s.get(c, "nadr", tenant, "d1", "{.metadata.uid}")
	e2estack.Eventually(c, time.Minute, func() (bool, string) {
		out := s.get(c, "nadr", tenant, "d1", "{.status.plan.state}|{.status.velero.name}|{.status.velero.status.phase}")
		return out == "complete|"+d1+"|Processed", out + " " + s.get(c, "nadr", tenant, "d1", "{.status.plan.current}")
	})
	time.Sleep(15 * time.Second) // a backup sync period and then some: nothing more may come

	// Exactly one Velero object per NAC object, under OADP NAC's names.
	backups := s.originsOf(c, "backups.velero.io", "openshift.io/oadp-nab-origin-")
	for _, n := range []string{"b1", "b2", "b3", "bl"} {
		c.Check(count(backups, tenant+"/"+n), Equals, 1, Commentf("Velero Backups of %s: %v", n, backups))
		c.Check(s.get(c, "nab", tenant, n, "{.status.veleroBackup.nacuuid}|{.status.veleroBackup.name}"), Equals, links["nab/"+n], Commentf("status link of %s", n))
	}
	restores := s.originsOf(c, "restores.velero.io", "openshift.io/oadp-nar-origin-")
	c.Check(count(restores, tenant+"/r1"), Equals, 1, Commentf("Velero Restores: %v", restores))
	c.Check(s.get(c, "nar", tenant, "r1", "{.status.veleroRestore.nacuuid}|{.status.veleroRestore.name}"), Equals, links["nar/r1"])
	for _, kind := range []string{"backupstoragelocations.velero.io", "secrets", "nonadminbackupstoragelocationrequests"} {
		got := s.originsOf(c, kind, "openshift.io/oadp-nabsl-origin-")
		c.Check(count(got, tenant+"/mine"), Equals, 1, Commentf("%s: %v", kind, got))
	}
	c.Check(s.get(c, "nabsl", tenant, "mine", "{.status.veleroBackupStorageLocation.nacuuid}|{.status.veleroBackupStorageLocation.name}"), Equals, links["nabsl/mine"])
	downloads := s.originsOf(c, "downloadrequests.velero.io", "openshift.io/oadp-nadr-origin-")
	c.Check(count(downloads, tenant+"/d1"), Equals, 1, Commentf("Velero DownloadRequests: %v", downloads))

	// deleteBackup on an OADP-made backup: OADP's Backup and its data go,
	// and backup sync does not bring it back.
	b1 := strings.Split(links["nab/b1"], "|")[1]
	c.Assert(e2estack.KeysIn(c, s3, "velero", "backups/"+b1+"/"), Not(HasLen), 0)
	s.st.Kubectl(c, "patch", "nab", "-n", tenant, "b1", "--type", "merge", "-p", `{"spec":{"deleteBackup":true}}`)
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out, _ := s.st.Run("", "get", "nab", "-n", tenant, "b1")
		return strings.Contains(out, "NotFound"), out
	})
	e2estack.Eventually(c, time.Minute, func() (bool, string) {
		keys := e2estack.KeysIn(c, s3, "velero", "backups/"+b1+"/")
		_, err := s.st.Run("", "get", "backups.velero.io", "-n", "openshift-adp", b1)
		return len(keys) == 0 && err != nil, fmt.Sprintf("keys %v, Backup: %v", keys, err)
	})
	time.Sleep(25 * time.Second) // two backup sync periods
	out, _ := s.st.Run("", "get", "nab", "-n", tenant, "b1")
	c.Check(out, Matches, `(?s).*NotFound.*`, Commentf("the deleted backup came back"))
	// r1 restored b1 and went with it (OADP NAC's rule): its finalizer
	// removed the Velero Restore OADP NAC made.
	out, _ = s.st.Run("", "get", "nar", "-n", tenant, "r1")
	c.Check(out, Matches, `(?s).*NotFound.*`)
	restores = s.originsOf(c, "restores.velero.io", "openshift.io/oadp-nar-origin-")
	c.Check(count(restores, tenant+"/r1"), Equals, 0, Commentf("Velero Restores: %v", restores))

	// A new backup works, and a restore of it.
	s.st.KubectlIn(c, nabYAML("b4"), "apply", "-f", "-")
	e2estack.Eventually(c, 3*time.Minute, func() (bool, string) {
		out := s.get(c, "nab", tenant, "b4", "{.status.plan.state}|{.status.veleroBackup.status.phase}")
		return out == "complete|Completed", out
	})
	s.st.KubectlIn(c, narYAML("r2", "b4"), "apply", "-f", "-")
	e2estack.Eventually(c, 3*time.Minute, func() (bool, string) {
		out := s.get(c, "nar", tenant, "r2", "{.status.plan.state}|{.status.veleroRestore.status.phase}")
		return out == "complete|Completed", out
	})

	// A location nacflow makes, approved under nacflow.
	s.st.KubectlIn(c, nabslYAML("ours", "ours", s3), "apply", "-f", "-")
	s.approve(c, "ours")

	s.handBack(c, s3)
}

// handBack stops nacflow and starts OADP NAC again, on nacflow's CRDs:
// OADP NAC takes over what both controllers made — nacflow's own backup
// and restore included — with no second Velero object and its status links
// unchanged; it runs a new backup (its first update of a new
// NonAdminBackup is not refused), and deletes a backup nacflow made, data
// included.
func (s *OADPSuite) handBack(c *C, s3 string) {
	// r1 went with b1 (a backup deleted for good takes its restores along).
	nabs, nars := []string{"b2", "b3", "b4", "bl"}, []string{"r2"}
	links := map[string]string{}
	for _, n := range nabs {
		links["nab/"+n] = s.get(c, "nab", tenant, n, "{.status.veleroBackup.nacuuid}|{.status.veleroBackup.name}")
	}
	for _, n := range nars {
		links["nar/"+n] = s.get(c, "nar", tenant, n, "{.status.veleroRestore.nacuuid}|{.status.veleroRestore.name}")
	}
	links["nabsl/mine"] = s.get(c, "nabsl", tenant, "mine", "{.status.veleroBackupStorageLocation.nacuuid}|{.status.veleroBackupStorageLocation.name}")
	s.stopController(c)
	s.startController(c, "oadp-nac-again", []string{"WATCH_NAMESPACE=openshift-adp"}, s.oadpNAC,
		"--metrics-bind-address", freeAddr(c), "--health-probe-bind-address", freeAddr(c))

	s.st.KubectlIn(c, nabYAML("b5"), "apply", "-f", "-")
	e2estack.Eventually(c, 3*time.Minute, func() (bool, string) {
		out := s.get(c, "nab", tenant, "b5", "{.status.veleroBackup.status.phase}|{.status.phase}")
		return out == "Completed|Created", fmt.Sprintf("b5: %s\n%.3000s", out, s.log("oadp-nac-again"))
	})
	time.Sleep(15 * time.Second) // OADP NAC has gone over every object by now: nothing more may come

	backups := s.originsOf(c, "backups.velero.io", "openshift.io/oadp-nab-origin-")
	for _, n := range append(nabs, "b5") {
		c.Check(count(backups, tenant+"/"+n), Equals, 1, Commentf("Velero Backups of %s under OADP NAC again: %v", n, backups))
		c.Check(s.get(c, "nab", tenant, n, "{.status.phase}|{.status.veleroBackup.status.phase}"), Equals, "Created|Completed", Commentf("%s", n))
	}
	for _, n := range nabs {
		c.Check(s.get(c, "nab", tenant, n, "{.status.veleroBackup.nacuuid}|{.status.veleroBackup.name}"), Equals, links["nab/"+n], Commentf("status link of %s", n))
	}
	restores := s.originsOf(c, "restores.velero.io", "openshift.io/oadp-nar-origin-")
	for _, n := range nars {
		c.Check(count(restores, tenant+"/"+n), Equals, 1, Commentf("Velero Restores of %s: %v", n, restores))
		c.Check(s.get(c, "nar", tenant, n, "{.status.veleroRestore.nacuuid}|{.status.veleroRestore.name}"), Equals, links["nar/"+n])
		c.Check(s.get(c, "nar", tenant, n, "{.status.veleroRestore.status.phase}"), Equals, "Completed")
	}
	for _, kind := range []string{"backupstoragelocations.velero.io", "secrets", "nonadminbackupstoragelocationrequests"} {
		got := s.originsOf(c, kind, "openshift.io/oadp-nabsl-origin-")
		c.Check(count(got, tenant+"/mine"), Equals, 1, Commentf("%s under OADP NAC again: %v", kind, got))
	}
	c.Check(s.get(c, "nabsl", tenant, "mine", "{.status.veleroBackupStorageLocation.nacuuid}|{.status.veleroBackupStorageLocation.name}"), Equals, links["nabsl/mine"])
	c.Check(s.get(c, "nabsl", tenant, "mine", "{.status.veleroBackupStorageLocation.status.phase}"), Equals, "Available")
	// The location nacflow made: one of each, still Available. Its request
	// records the prefix in force ("<namespace>/ours"), OADP NAC's the
	// prefix as written: OADP NAC reports a spec update it does not allow
	// and keeps the location (docs/migrating-from-oadp.md).
	for _, kind := range []string{"backupstoragelocations.velero.io", "secrets", "nonadminbackupstoragelocationrequests"} {
		got := s.originsOf(c, kind, "openshift.io/oadp-nabsl-origin-")
		c.Check(count(got, tenant+"/ours"), Equals, 1, Commentf("%s under OADP NAC again: %v", kind, got))
	}
	c.Check(s.get(c, "nabsl", tenant, "ours", "{.status.veleroBackupStorageLocation.status.phase}"), Equals, "Available")
	c.Check(s.get(c, "nabsl", tenant, "ours", `{.status.conditions[?(@.type=="SpecUpdateApproved")].status}`), Equals, "False",
		Commentf("%s", s.get(c, "nabsl", tenant, "ours", "{.status.conditions}")))
	// The refusal that stopped OADP NAC on nacflow's CRDs (an update of the
	// spec refused, again and again) is gone.
	c.Check(strings.Count(s.log("oadp-nac-again"), "is invalid"), Equals, 0, Commentf("%.3000s", s.log("oadp-nac-again")))

	// OADP NAC deletes a backup nacflow made, data included.
	b4 := strings.Split(links["nab/b4"], "|")[1]
	c.Assert(e2estack.KeysIn(c, s3, "velero", "backups/"+b4+"/"), Not(HasLen), 0)
	s.st.Kubectl(c, "patch", "nab", "-n", tenant, "b4", "--type", "merge", "-p", `{"spec":{"deleteBackup":true}}`)
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out, _ := s.st.Run("", "get", "nab", "-n", tenant, "b4")
		keys := e2estack.KeysIn(c, s3, "velero", "backups/"+b4+"/")
		_, err := s.st.Run("", "get", "backups.velero.io", "-n", "openshift-adp", b4)
		return strings.Contains(out, "NotFound") && len(keys) == 0 && err != nil, fmt.Sprintf("NAB: %s, keys %v, Backup: %v", out, keys, err)
	})
}
