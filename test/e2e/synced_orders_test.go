package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/internal/localstack/childproc"
	"github.com/nacflow/nacflow/test/e2estack"
)

// plantedOrder is a PodVolumeBackup as Velero keeps it in a backup's
// <backup>-podvolumebackups.json.gz: an order for node's agent to copy
// volume "data" of Pod podNS/pod into the location's repository, new (no
// phase).
func plantedOrder(name, backup, node, podNS, pod string) map[string]any {
	return map[string]any{
		"apiVersion": "velero.io/v1", "kind": "PodVolumeBackup",
		"metadata": map[string]any{
			"name": name, "namespace": "openshift-adp",
			"labels": map[string]string{"velero.io/backup-name": backup},
			"ownerReferences": []map[string]any{{
				"apiVersion": "velero.io/v1", "kind": "Backup", "name": backup, "uid": "00000000-0000-0000-0000-000000000000", "controller": true,
			}},
		},
		"spec": map[string]any{
			"node": node, "volume": "data", "uploaderType": "kopia", "backupStorageLocation": "anything", "repoIdentifier": "",
			"pod":  map[string]any{"kind": "Pod", "namespace": podNS, "name": pod},
			"tags": map[string]string{"backup": backup, "ns": podNS, "pod": pod, "volume": "data"},
		},
		// No phase: a new order, as Velero writes one ("" in Go).
		"status": map[string]any{},
	}
}

// gzipJSON returns v as gzipped JSON.
func gzipJSON(c *C, v any) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	c.Assert(json.NewEncoder(zw).Encode(v), IsNil)
	c.Assert(zw.Close(), IsNil)
	return b.Bytes()
}

// startNodeAgent starts Velero's node agent (`velero node-agent server`,
// the binary of the stack) for node, as a process beside the stack, and
// returns its log's path and a function that stops it.
func (s *E2ESuite) startNodeAgent(c *C, node string) (string, func()) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	c.Assert(err, IsNil)
	metrics := l.Addr().String()
	c.Assert(l.Close(), IsNil)
	dir := c.MkDir()
	logPath := filepath.Join(dir, "node-agent.log")
	logFile, err := os.Create(logPath)
	c.Assert(err, IsNil)
	cmd := exec.Command(filepath.Join(e2estack.Assets(s.root), "velero"), "node-agent", "server",
		"--kubeconfig", s.kubeconfig, "--namespace", "openshift-adp", "--metrics-address", metrics, "--log-level", "debug")
	cmd.Env = append(os.Environ(), "NODE_NAME="+node, "TMPDIR="+dir)
	cmd.SysProcAttr = childproc.SysProcAttr() // killed with the test binary
	cmd.Stdout, cmd.Stderr = logFile, logFile
	c.Assert(cmd.Start(), IsNil)
	return logPath, func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logFile.Close()
	}
}

// veleroLogLines returns the last lines of the stack's velero.log that
// mention what (at most 10).
func (s *E2ESuite) veleroLogLines(what string) string {
	data, _ := os.ReadFile(filepath.Join(s.dir, "velero.log"))
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, what) {
			lines = append(lines, l)
		}
	}
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return strings.Join(lines, "\n")
}

// TestSyncedOrdersStayInTheTenant: the PodVolumeBackups Velero's backup sync
// copies from a tenant's bucket may name the tenant's own Pods only, with
// the real Velero and a real node agent. The tenant plants, beside a real
// backup in its own bucket, a backup whose pod volume backup list holds two
// new orders for the node agent's node: one for a Pod of another namespace,
// one for its own Pod. Velero syncs the backup; the admission policy
// nacflow-pod-volume-backups refuses the first order (Velero's log says
// why) and admits the second, which the node agent takes — so an order that
// reached the OADP namespace would have been taken too.
func (s *E2ESuite) TestSyncedOrdersStayInTheTenant(c *C) {
	const ns, victim, node = "tenant-pvb", "victim-pvb", "e2e-node-pvb"
	s3 := s.s3URL(c)
	s.tenant(c, ns)
	s.kubectl(c, "create", "namespace", victim)
	for _, p := range []struct{ ns, name string }{{victim, "db"}, {ns, "app"}} {
		s.kubectlIn(c, fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: %s}\nspec:\n  nodeName: %s\n"+
			"  containers: [{name: c, image: busybox, volumeMounts: [{name: data, mountPath: /data}]}]\n  volumes: [{name: data, emptyDir: {}}]\n",
			p.name, p.ns, node), "apply", "-f", "-")
	}
	// make run installs the policy, which reads the map nacflow keeps.
	c.Check(s.kubectlAllowFail("get", "validatingadmissionpolicybinding", "nacflow-pod-volume-backups", "-o", "jsonpath={.spec.paramRef.name}"),
		Equals, "nacflow")

	s.kubectlIn(c, fmt.Sprintf(tenantLocation, ns, "own", "tenants", "orders", s3), "apply", "-f", "-")
	var location string
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out := s.kubectl(c, "get", "nabsl", "-n", ns, "own", "-o", "jsonpath={.status.phase}|{.status.veleroBackupStorageLocation.status.phase}|{.status.veleroBackupStorageLocation.name}")
		location = out[strings.LastIndex(out, "|")+1:]
		return strings.HasPrefix(out, "Created|Available|"), out
	})
	c.Check(s.kubectl(c, "get", "tenantlocations", "-n", "openshift-adp", "nacflow", "-o", "jsonpath={.spec.locations."+location+"}"), Equals, ns,
		Commentf("the location's namespace is recorded"))
	real := s.nabCompletes(c, ns, "real", "own")

	agentLog, stop := s.startNodeAgent(c, node)
	defer stop()

	// The tenant copies its real backup's metadata under a new name and adds
	// the orders.
	const planted = "planted-orders"
	prefix := ns + "/orders/backups/"
	var meta map[string]any
	c.Assert(json.Unmarshal(getObject(c, s3, "tenants", prefix+real+"/velero-backup.json"), &meta), IsNil)
	// Only the name: nacflow's labels of the real backup are not what this
	// test is about.
	meta["metadata"] = map[string]any{"name": planted, "namespace": "openshift-adp"}
	body, err := json.Marshal(meta)
	c.Assert(err, IsNil)
	putObject(c, s3, "tenants", prefix+planted+"/"+planted+".tar.gz", getObject(c, s3, "tenants", prefix+real+"/"+real+".tar.gz"))
	putObject(c, s3, "tenants", prefix+planted+"/"+planted+"-podvolumebackups.json.gz", gzipJSON(c, []any{
		plantedOrder("steal", planted, node, victim, "db"),
		plantedOrder("mine", planted, node, ns, "app"),
	}))
	putObject(c, s3, "tenants", prefix+planted+"/velero-backup.json", body)

	// Velero syncs the backup and its tenant's own order.
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out := s.kubectlAllowFail("get", "podvolumebackups.velero.io", "-n", "openshift-adp", "mine", "-o", "jsonpath={.spec.pod.namespace}/{.spec.pod.name}|{.spec.backupStorageLocation}")
		return out == ns+"/app|"+location, out + "\nVelero's log of it:\n" + s.veleroLogLines(planted) +
			"\nthe map: " + s.kubectlAllowFail("get", "tenantlocations", "-n", "openshift-adp", "nacflow", "-o", "jsonpath={.spec.locations}")
	})
	// The node agent takes an order that reached the OADP namespace: only
	// it moves a new order's phase (to Accepted; here, with no node-agent
	// DaemonSet to expose the volume with, then to Failed).
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out := s.kubectl(c, "get", "podvolumebackups.velero.io", "-n", "openshift-adp", "mine", "-o", "jsonpath={.status.phase}")
		return out != "" && out != "New", out
	})
	// The order for another namespace's Pod never did; Velero's log says
	// why.
	c.Check(s.kubectlAllowFail("get", "podvolumebackups.velero.io", "-n", "openshift-adp", "steal"), Matches, `(?s).*NotFound.*`)
	c.Check(s.kubectl(c, "get", "podvolumebackups.velero.io", "-n", "openshift-adp", "-o", "jsonpath={range .items[*]}{.spec.pod.namespace} {end}"),
		Not(Matches), `(?s).*`+victim+`.*`)
	velero, err := os.ReadFile(filepath.Join(s.dir, "velero.log"))
	c.Assert(err, IsNil)
	c.Check(string(velero), Matches, `(?s).*Error syncing pod volume backup into cluster.*PodVolumeBackup steal names Pod `+victim+`/db, but its BackupStorageLocation `+location+` belongs to namespace `+ns+`.*`)
	agent, err := os.ReadFile(agentLog)
	c.Assert(err, IsNil)
	c.Check(string(agent), Matches, `(?s).*Accepting PVB.*`)
	c.Check(strings.Contains(string(agent), "steal"), Equals, false, Commentf("the node agent never saw the order for %s:\n%s", victim, agent))

	// An order on a location named like a tenant's that nacflow never
	// recorded is refused too, whatever Pod it names (here the admin's own
	// create, as Velero's sync would make it).
	unrecorded := plantedOrder("unrecorded", planted, node, ns, "app")
	unrecorded["spec"].(map[string]any)["backupStorageLocation"] = ns + "-gone-0b8f6a9e-1d2c-4e5f-8a7b-6c5d4e3f2a1b"
	doc, err := json.Marshal(unrecorded)
	c.Assert(err, IsNil)
	out, err := s.runKubectl(string(doc), "create", "-f", "-")
	c.Check(err, NotNil)
	c.Check(out, Matches, `(?s).*nacflow-pod-volume-backups.*named like a tenant location but not recorded.*`)
	// The admin's own location is not concerned.
	admins := plantedOrder("admins", planted, "no-such-node", victim, "db")
	admins["spec"].(map[string]any)["backupStorageLocation"] = "default"
	doc, err = json.Marshal(admins)
	c.Assert(err, IsNil)
	s.kubectlIn(c, string(doc), "create", "-f", "-")

	// Clean up what the node agent and Velero keep of the planted backup.
	stop()
	// (The garbage collector may have taken it already: its owner's UID is
	// made up.)
	s.kubectl(c, "delete", "podvolumebackups.velero.io", "-n", "openshift-adp", "admins", "--wait=false", "--ignore-not-found")
	s.kubectl(c, "patch", "podvolumebackups.velero.io", "-n", "openshift-adp", "mine", "--type", "merge", "-p", `{"metadata":{"finalizers":null}}`)
	s.kubectl(c, "delete", "namespace", victim, "--wait=false")
}
