package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/test/e2estack"
)

// getObject reads key of bucket from the store at s3 (plain HTTP; the local
// store checks no signatures), as anyone holding the bucket's keys can.
func getObject(c *C, s3, bucket, key string) []byte {
	resp, err := http.Get(s3 + "/" + bucket + "/" + key)
	c.Assert(err, IsNil)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	c.Assert(err, IsNil)
	c.Assert(resp.StatusCode, Equals, http.StatusOK, Commentf("GET %s/%s: %s", bucket, key, body))
	return body
}

// putObject writes key of bucket.
func putObject(c *C, s3, bucket, key string, data []byte) {
	req, err := http.NewRequest(http.MethodPut, s3+"/"+bucket+"/"+key, bytes.NewReader(data))
	c.Assert(err, IsNil)
	resp, err := http.DefaultClient.Do(req)
	c.Assert(err, IsNil)
	resp.Body.Close()
	c.Assert(resp.StatusCode, Equals, http.StatusOK, Commentf("PUT %s/%s: %s", bucket, key, resp.Status))
}

// rewriteTarball returns the Velero backup tarball tgz with the files of
// add added (path → content; both Velero's plain and v1-preferredversion
// layouts are the caller's to give).
func rewriteTarball(c *C, tgz []byte, add map[string]string) []byte {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	c.Assert(err, IsNil)
	tr := tar.NewReader(zr)
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	tw := tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		c.Assert(err, IsNil)
		if _, replaced := add[h.Name]; replaced {
			continue
		}
		c.Assert(tw.WriteHeader(h), IsNil)
		_, err = io.Copy(tw, tr)
		c.Assert(err, IsNil)
	}
	for name, content := range add {
		c.Assert(tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg, ModTime: time.Now()}), IsNil)
		_, err := tw.Write([]byte(content))
		c.Assert(err, IsNil)
	}
	c.Assert(tw.Close(), IsNil)
	c.Assert(zw.Close(), IsNil)
	return out.Bytes()
}

// gunzip returns the uncompressed data.
func gunzip(c *C, data []byte) string {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	c.Assert(err, IsNil)
	b, err := io.ReadAll(zr)
	c.Assert(err, IsNil)
	return string(b)
}

// The claim and the volume a hostile tenant adds to its own backup: a claim
// bound to a PV of the node's root filesystem (Retain, so that Velero does
// not re-provision it).
const (
	forgedClaim = `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data","namespace":"tenant-r"},` +
		`"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}},"storageClassName":"","volumeName":"tenant-r-root"},` +
		`"status":{"phase":"Bound"}}`
	forgedVolume = `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"tenant-r-root"},` +
		`"spec":{"accessModes":["ReadWriteOnce"],"capacity":{"storage":"1Gi"},"hostPath":{"path":"/"},"persistentVolumeReclaimPolicy":"Retain","storageClassName":"",` +
		`"claimRef":{"apiVersion":"v1","kind":"PersistentVolumeClaim","name":"data","namespace":"tenant-r"}},"status":{"phase":"Bound"}}`
	// forgedSnapClaim and forgedSnapVolume: a claim bound to a CSI volume
	// (a source a restore may create) that the backup's volume snapshot
	// list, rewritten too (forgedSnapshots), says Velero snapshotted
	// natively: Velero would create a new volume from the snapshot ID of
	// the tenant's choosing, with the admin's snapshot location. The claim
	// also asks Velero to restore its additional items (its volume) past
	// the restore's exclusions, as only a restore item action may ask.
	forgedSnapClaim = `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"snap","namespace":"tenant-r","annotations":{"pv.kubernetes.io/bind-completed":"yes","restore.velero.io/must-include-additional-items":"true"}},` +
		`"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}},"storageClassName":"","volumeName":"tenant-r-snap"},` +
		`"status":{"phase":"Bound"}}`
	forgedSnapVolume = `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"tenant-r-snap"},` +
		`"spec":{"accessModes":["ReadWriteOnce"],"capacity":{"storage":"1Gi"},"csi":{"driver":"ebs.csi.aws.com","volumeHandle":"vol-0tenant"},"persistentVolumeReclaimPolicy":"Delete","storageClassName":"",` +
		`"claimRef":{"apiVersion":"v1","kind":"PersistentVolumeClaim","name":"snap","namespace":"tenant-r"}},"status":{"phase":"Bound"}}`
	forgedSnapshots = `[{"spec":{"backupName":"%s","location":"admin-snapshots","persistentVolumeName":"tenant-r-snap","providerVolumeID":"vol-0tenant","volumeType":"gp3","volumeAZ":"us-east-1a"},` +
		`"status":{"providerSnapshotID":"snap-0another0tenants","phase":"Completed"}}]`
	// forgedService asks Velero to restore its status: a LoadBalancer
	// ingress address of the tenant's choosing, which kube-proxy would
	// route (the CVE-2020-8554 class); a namespace admin may not write it.
	forgedService = `{"apiVersion":"v1","kind":"Service","metadata":{"name":"lb","namespace":"tenant-r","annotations":{"velero.io/restore-status":"true"}},` +
		`"spec":{"type":"LoadBalancer","ports":[{"port":80,"protocol":"TCP"}]},"status":{"loadBalancer":{"ingress":[{"ip":"203.0.113.66"}]}}}`
)

// TestRestoreAsTenantWithRealVelero: a restore made for a tenant does only
// what a namespace admin could do itself, with the real Velero and nacflow's
// Velero plugin. One backup, on the tenant's own location, holds a
// RoleBinding to edit, one to cluster-admin (which the admin revokes after
// the backup), the admin's ResourceQuota (tightened after the backup) and a
// ConfigMap (changed after the backup); the tenant then rewrites the
// tarball in its bucket to add a claim bound to a hostPath "/" volume and
// one bound to a CSI volume that its rewritten volume snapshot list says
// Velero snapshotted natively (another tenant's snapshot ID, the admin's
// snapshot location). The restore, with existingResourcePolicy update,
// brings back the binding to edit and the ConfigMap's data, and leaves out
// the binding to cluster-admin, the admin's quota as the admin set it, and
// both volumes (the claims come back unbound, for new volumes); Velero
// never tries a volume from the snapshot; the restore's log, in the
// tenant's bucket, says why of each. The same restore asked by alice, the
// namespace's admin, is refused whole: the tarball is not what nacflow
// verified after Velero wrote it.
func (s *E2ESuite) TestRestoreAsTenantWithRealVelero(c *C) {
	const ns = "tenant-r"
	s3 := s.s3URL(c)
	s.tenant(c, ns)
	// The admin's objects in the tenant's namespace.
	s.kubectl(c, "create", "rolebinding", "-n", ns, "to-edit", "--clusterrole=edit", "--user=alice")
	s.kubectl(c, "create", "rolebinding", "-n", ns, "to-root", "--clusterrole=cluster-admin", "--user=mallory")
	s.kubectl(c, "create", "quota", "-n", ns, "quota", "--hard=pods=10")
	s.kubectlIn(c, fmt.Sprintf(tenantLocation, ns, "own", "tenants", "mine", s3), "apply", "-f", "-")
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out := s.kubectl(c, "get", "nabsl", "-n", ns, "own", "-o", "jsonpath={.status.phase}|{.status.veleroBackupStorageLocation.status.phase}")
		return out == "Created|Available", out
	})
	name := s.nabCompletes(c, ns, "all", "own")
	// nacflow verified it and recorded its items (the plan's verify phase).
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out := s.kubectl(c, "get", "nab", "-n", ns, "all", "-o", "jsonpath={.status.plan.state}")
		return out == "complete", out
	})
	c.Check(s.kubectl(c, "get", "configmap", "-n", "openshift-adp", name+"-verified-items", "-o", `jsonpath={.metadata.annotations.nacflow\.io/verified-backup}`), Equals, name)

	// After the backup: the admin revokes both bindings (to-edit only to see
	// it come back) and tightens the quota; the tenant changes its ConfigMap.
	s.kubectl(c, "delete", "rolebinding", "-n", ns, "to-edit", "to-root")
	s.kubectl(c, "patch", "quota", "-n", ns, "quota", "--type", "merge", "-p", `{"spec":{"hard":{"pods":"5"}}}`)
	s.kubectl(c, "patch", "configmap", "-n", ns, "cm", "--type", "merge", "-p", `{"data":{"k":"changed"}}`)

	// The tenant rewrites its backup in its own bucket.
	key := ns + "/mine/backups/" + name + "/" + name + ".tar.gz"
	tgz := getObject(c, s3, "tenants", key)
	putObject(c, s3, "tenants", key, rewriteTarball(c, tgz, map[string]string{
		"resources/persistentvolumeclaims/namespaces/" + ns + "/data.json":                     forgedClaim,
		"resources/persistentvolumeclaims/v1-preferredversion/namespaces/" + ns + "/data.json": forgedClaim,
		"resources/persistentvolumes/cluster/tenant-r-root.json":                               forgedVolume,
		"resources/persistentvolumes/v1-preferredversion/cluster/tenant-r-root.json":           forgedVolume,
		"resources/services/namespaces/" + ns + "/lb.json":                                     forgedService,
		"resources/services/v1-preferredversion/namespaces/" + ns + "/lb.json":                 forgedService,
		"resources/persistentvolumeclaims/namespaces/" + ns + "/snap.json":                     forgedSnapClaim,
		"resources/persistentvolumeclaims/v1-preferredversion/namespaces/" + ns + "/snap.json": forgedSnapClaim,
		"resources/persistentvolumes/cluster/tenant-r-snap.json":                               forgedSnapVolume,
		"resources/persistentvolumes/v1-preferredversion/cluster/tenant-r-snap.json":           forgedSnapVolume,
	}))
	var snapshots bytes.Buffer
	zw := gzip.NewWriter(&snapshots)
	_, err := fmt.Fprintf(zw, forgedSnapshots, name)
	c.Assert(err, IsNil)
	c.Assert(zw.Close(), IsNil)
	putObject(c, s3, "tenants", ns+"/mine/backups/"+name+"/"+name+"-volumesnapshots.json.gz", snapshots.Bytes())

	// alice, the namespace's admin, restores it as herself: she holds more
	// than whoever rewrote the bucket may, so only what nacflow verified
	// after Velero wrote the backup is restored — the rewritten tarball is
	// refused whole, and nothing reaches Velero.
	s.kubectl(c, "apply", "-f", "config/rbac/tenant_roles.yaml")
	s.kubectl(c, "create", "rolebinding", "-n", ns, "alice", "--clusterrole=admin", "--user=alice")
	e2estack.Eventually(c, 30*time.Second, func() (bool, string) {
		got := s.canI("create", "nonadminrestores.oadp.openshift.io", ns, "alice")
		return got == "yes", "alice may create NARs: " + got
	})
	s.kubectlIn(c, "apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminRestore\nmetadata: {name: as-alice, namespace: "+ns+"}\n"+
		"spec:\n  restoreSpec: {backupName: all}\n", "--as", "alice", "create", "-f", "-")
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out := s.narCondition(c, ns, "as-alice", "Accepted")
		return strings.HasPrefix(out, "False|"), out
	})
	c.Check(s.narCondition(c, ns, "as-alice", "Accepted"), Matches, `False\|ItemsExcluded\|.*changed since nacflow verified it.*`)
	c.Check(s.kubectl(c, "get", "nar", "-n", ns, "as-alice", "-o", "jsonpath={.status.phase}|{.status.veleroRestore.name}"), Equals, "BackingOff|")
	s.kubectl(c, "delete", "rolebinding", "-n", ns, "alice")

	// The admin's restore (the admin is no tenant: the tenant role bounds it).
	s.kubectlIn(c, "apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminRestore\nmetadata: {name: back, namespace: "+ns+"}\n"+
		"spec:\n  restoreSpec: {backupName: all, existingResourcePolicy: update}\n", "apply", "-f", "-")
	var restore string
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out := s.kubectl(c, "get", "nar", "-n", ns, "back", "-o", "jsonpath={.status.veleroRestore.status.phase}|{.status.plan.state}|{.status.veleroRestore.name}")
		restore = out[strings.LastIndex(out, "|")+1:]
		return strings.HasPrefix(out, "Completed|complete|"), out
	})

	// nacflow read the backup before the restore and named what would be
	// left out (the PV, the binding to cluster-admin, the quota).
	cond := s.kubectl(c, "get", "nar", "-n", ns, "back", "-o", `jsonpath={.status.conditions[?(@.type=="RestoreItemsChecked")].status}|{.status.conditions[?(@.type=="RestoreItemsChecked")].reason}|{.status.conditions[?(@.type=="RestoreItemsChecked")].message}`)
	c.Check(cond, Matches, `False\|ItemsExcluded\|4 of [0-9]+ items of Velero Backup \S+ are beyond what ClusterRole admin allows in namespace tenant-r( and \S+ may do there)? and are not restored: `+
		`persistentvolumes tenant-r-root: PersistentVolume tenant-r-root: the backup is in a bucket the tenant writes, .*; `+
		`persistentvolumes tenant-r-snap: PersistentVolume tenant-r-snap: the backup is in a bucket the tenant writes, .*; `+
		`resourcequotas tenant-r/quota: .*; rolebindings.rbac.authorization.k8s.io tenant-r/to-root: RoleBinding to-root binds ClusterRole cluster-admin.*`)
	// The Velero Restore keeps every PersistentVolume out: Velero never
	// reads the snapshot list for them.
	c.Check(s.kubectl(c, "get", "restores.velero.io", "-n", "openshift-adp", restore, "-o", "jsonpath={.spec.excludedResources}"), Matches, `.*"persistentvolumes".*`)
	c.Check(s.kubectl(c, "get", "nar", "-n", ns, "back", "-o", `jsonpath={.status.plan.phases[?(@.func=="CreateVeleroRestore")].message}`),
		Matches, `Created Velero Restore .*; PersistentVolumes excluded: Velero Backup \S+ is kept in a bucket the tenant writes \(location "\S+"\), so its volumes come back only from data in that bucket \(file-system backup, data mover\), never from a snapshot it names`)
	c.Check(s.kubectl(c, "get", "events", "-n", ns, "--field-selector", "reason=ItemsExcluded,involvedObject.name=back", "-o", "jsonpath={.items[*].type}"), Equals, "Warning")

	// What the tenant could do came back.
	c.Check(s.kubectl(c, "get", "rolebinding", "-n", ns, "to-edit", "-o", "jsonpath={.roleRef.name}"), Equals, "edit")
	c.Check(s.kubectl(c, "get", "configmap", "-n", ns, "cm", "-o", "jsonpath={.data.k}"), Equals, "v")
	// The claims themselves are the tenant's to make, for new volumes: the
	// backup's volumes come back only from data in its bucket.
	for _, claim := range []string{"data", "snap"} {
		c.Check(s.kubectl(c, "get", "pvc", "-n", ns, claim, "-o", `jsonpath={.spec.volumeName}|{.metadata.annotations.pv\.kubernetes\.io/bind-completed}`), Equals, "|",
			Commentf("claim %s", claim))
	}
	// What it could not did not.
	c.Check(s.kubectlAllowFail("get", "rolebinding", "-n", ns, "to-root"), Matches, `(?s).*NotFound.*`)
	c.Check(s.kubectl(c, "get", "quota", "-n", ns, "quota", "-o", "jsonpath={.spec.hard.pods}"), Equals, "5")
	c.Check(s.kubectlAllowFail("get", "pv", "tenant-r-root"), Matches, `(?s).*NotFound.*`)
	c.Check(s.kubectlAllowFail("get", "pv", "tenant-r-snap"), Matches, `(?s).*NotFound.*`)
	// The Service is the tenant's to make; its status is not.
	c.Check(s.kubectl(c, "get", "svc", "-n", ns, "lb", "-o", `jsonpath={.spec.type}|{.status.loadBalancer.ingress}|{.metadata.annotations.velero\.io/restore-status}`),
		Equals, "LoadBalancer||false")

	log := gunzip(c, getObject(c, s3, "tenants", ns+"/mine/restores/"+restore+"/restore-"+restore+"-logs.gz"))
	for _, want := range []string{
		`nacflow: not restoring rolebindings.rbac.authorization.k8s.io tenant-r/to-root: RoleBinding to-root binds ClusterRole cluster-admin, which grants what the tenant role does not hold`,
		`nacflow: not restoring resourcequotas tenant-r/quota: the tenant role does not allow create on resourcequotas`,
		`nacflow: not restoring the status of services tenant-r/lb: the tenant role does not allow update on services/status`,
		`nacflow: claim tenant-r/snap gets a new volume: the backup is in a bucket the tenant writes`,
	} {
		c.Check(strings.Contains(log, want), Equals, true, Commentf("restore log should say %q:\n%s", want, log))
	}
	// Velero never tried a volume from the snapshot the bucket names.
	for _, never := range []string{"snap-0another0tenants", "Restoring persistent volume from snapshot", "PVAction", "admin-snapshots"} {
		c.Check(strings.Contains(log, never), Equals, false, Commentf("restore log should not mention %q:\n%s", never, log))
	}
}
