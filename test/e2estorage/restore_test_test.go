// Package e2estorage runs end to end, on the make-run stack with a real
// Velero server and object store, what tenants' backups take and give back:
// restore tests (a backup restored into a sandbox namespace, compared, timed
// and deleted), usage per tenant and quotas. It is its own package so that
// go test's per-package time limit is not shared with test/e2e; it starts
// its own stack, so it must not run at the same time as another package
// that does (Velero's fixed ports): the Makefile runs it on its own.
package e2estorage

import (
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	. "gopkg.in/check.v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/blueprints"
	"github.com/nacflow/nacflow/test/e2estack"
)

func Test(t *testing.T) { TestingT(t) }

// StorageSuite runs one make-run stack for its tests, the controller's
// metrics served.
type StorageSuite struct {
	st      *e2estack.Stack
	bin     string // nac, kubectl-nac, localcp and the plugin, built for the suite
	metrics string // the controller's metrics URL
}

var _ = Suite(&StorageSuite{})

func (s *StorageSuite) SetUpSuite(c *C) {
	root := e2estack.RepoRoot(c)
	l, err := net.Listen("tcp", "127.0.0.1:0") // a free port for the metrics endpoint
	c.Assert(err, IsNil)
	addr := l.Addr().String()
	c.Assert(l.Close(), IsNil)
	s.metrics = "https://" + addr + "/metrics"
	s.bin = e2estack.BuildBinaries(c, root)
	s.st = e2estack.Start(c, root, s.bin, c.MkDir(), nil,
		[]string{"--metrics-bind-address", addr, "--health-probe-bind-address", "0"})
	s.st.Kubectl(c, "apply", "-f", "config/rbac/tenant_roles.yaml")
	s.st.Kubectl(c, "apply", "-f", "config/rbac/metrics_reader_role.yaml")
	s.startRetentionSchedule(c)
	s.startCLISchedule(c)
}

func (s *StorageSuite) TearDownSuite(c *C) {
	if s.st != nil {
		s.st.Interrupt(c)
	}
}

// restoreTestBlueprint returns a per-tenant Blueprint (YAML) named name for
// the Namespaces labelled restore-tests=<name>: the built-in backup action
// with its restoreTest phase's args.every 1 and the args of extra.
func restoreTestBlueprint(c *C, name string, extra map[string]any) string {
	args := map[string]any{"every": 1}
	for k, v := range extra {
		args[k] = v
	}
	return blueprintWith(c, name, "restore-tests", "TestRestore", args)
}

// blueprintWith returns a per-tenant Blueprint (YAML) named name, in the
// OADP namespace, for the Namespaces labelled label=<name>: the built-in
// backup action with args set on its phase of function fn.
func blueprintWith(c *C, name, label, fn string, args map[string]any) string {
	return blueprintYAML(c, name, label, func(a *v1alpha1.BlueprintAction) {
		found := false
		for i := range a.Phases {
			p := &a.Phases[i]
			if p.Func != fn {
				continue
			}
			found = true
			if p.Args == nil {
				p.Args = map[string]apiextensionsv1.JSON{}
			}
			for k, v := range jsonArgs(c, args) {
				p.Args[k] = v
			}
		}
		c.Assert(found, Equals, true, Commentf("the built-in backup action has a %s phase", fn))
	})
}

// blueprintYAML returns a per-tenant Blueprint (YAML) named name, in the
// OADP namespace, for the Namespaces labelled label=<name>: the built-in
// backup action as edit leaves it.
func blueprintYAML(c *C, name, label string, edit func(*v1alpha1.BlueprintAction)) string {
	builtin, err := blueprints.BuiltIn(blueprints.BuiltInFor("NonAdminBackup"))
	c.Assert(err, IsNil)
	backup := builtin.Spec.Actions["backup"]
	edit(&backup)
	bp := v1alpha1.Blueprint{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Blueprint"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "openshift-adp"},
		Spec: v1alpha1.BlueprintSpec{Kind: "NonAdminBackup",
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{label: name}},
			Actions:           map[string]v1alpha1.BlueprintAction{"backup": backup}},
	}
	out, err := yaml.Marshal(bp)
	c.Assert(err, IsNil)
	return string(out)
}

// jsonArgs returns args as a phase's args.
func jsonArgs(c *C, args map[string]any) map[string]apiextensionsv1.JSON {
	out := map[string]apiextensionsv1.JSON{}
	for k, v := range args {
		raw, err := json.Marshal(v)
		c.Assert(err, IsNil)
		out[k] = apiextensionsv1.JSON{Raw: raw}
	}
	return out
}

// waitValid waits until Blueprint name is Valid.
func (s *StorageSuite) waitValid(c *C, name string) {
	e2estack.Eventually(c, 30*time.Second, func() (bool, string) {
		out, _ := s.st.Run("", "get", "blueprint", "-n", "openshift-adp", name, "-o", `jsonpath={.status.conditions[?(@.type=="Valid")].status}`)
		return out == "True", "Blueprint " + name + " Valid: " + out
	})
}

// tenant makes namespace ns, labelled for blueprint, with user bound to the
// built-in admin role in it, and applies the blueprint.
func (s *StorageSuite) tenant(c *C, ns, user, blueprint string) {
	s.st.KubectlIn(c, blueprint, "apply", "-f", "-")
	name := ns + "-tests"
	s.waitValid(c, name)
	s.st.Kubectl(c, "create", "namespace", ns)
	s.st.Kubectl(c, "label", "namespace", ns, "restore-tests="+name)
	s.st.Kubectl(c, "create", "rolebinding", user, "-n", ns, "--clusterrole=admin", "--user="+user)
	e2estack.Eventually(c, 30*time.Second, func() (bool, string) {
		out, _ := s.st.Run("", "auth", "can-i", "create", "nonadminbackups.oadp.openshift.io", "-n", ns, "--as", user)
		return strings.TrimSpace(out) == "yes", user + " may create NABs: " + out
	})
}

// backup has user create NonAdminBackup name in ns.
func (s *StorageSuite) backup(c *C, ns, name, user string) {
	s.st.KubectlIn(c, `apiVersion: oadp.openshift.io/v1alpha1
kind: NonAdminBackup
metadata:
  name: `+name+`
spec:
  backupSpec: {}
`, "apply", "-n", ns, "--as", user, "-f", "-")
}

// restoreTest waits for the restore test of NonAdminBackup ns/name to be
// recorded and returns it.
func (s *StorageSuite) restoreTest(c *C, ns, name string) *v1alpha1.RestoreTest {
	var nab v1alpha1.NonAdminBackup
	e2estack.Eventually(c, 3*time.Minute, func() (bool, string) {
		out, err := s.st.Run("", "get", "nab", "-n", ns, name, "-o", "json")
		if err != nil {
			return false, out
		}
		nab = v1alpha1.NonAdminBackup{}
		c.Assert(json.Unmarshal([]byte(out), &nab), IsNil)
		return nab.Status.RestoreTest != nil, "status.restoreTest of " + ns + "/" + name + ": " + out
	})
	return nab.Status.RestoreTest
}

// sandboxGone waits until the sandbox namespace and every Velero Restore
// of restore tests are gone.
func (s *StorageSuite) sandboxGone(c *C, sandbox string) {
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out, _ := s.st.Run("", "get", "namespace", sandbox, "-o", "name")
		restores := s.st.Kubectl(c, "get", "restores.velero.io", "-n", "openshift-adp", "-l", v1alpha1.RestoreTestLabel, "-o", "name")
		return strings.Contains(out, "NotFound") && strings.TrimSpace(restores) == "", "sandbox: " + out + " restores: " + restores
	})
}

// TestRestoreTestSucceeds: with restore tests on for one tenant, its
// backup is restored into the sandbox, where the tenant (admin in its own
// namespace) can read nothing and no Pod runs; status.restoreTest says
// Succeeded with an RTO and every expected item restored, RestoreTested is
// True, and the sandbox and its Velero Restore are gone after. Another
// tenant's backup, without the opt-in, is not tested.
func (s *StorageSuite) TestRestoreTestSucceeds(c *C) {
	const ns, user = "rt-a", "erin"
	s.tenant(c, ns, user, restoreTestBlueprint(c, ns+"-tests", nil))
	for _, cm := range []string{"one", "two", "three"} {
		s.st.Kubectl(c, "create", "configmap", "-n", ns, cm, "--from-literal=k="+cm)
	}
	s.st.Kubectl(c, "create", "secret", "generic", "-n", ns, "creds", "--from-literal=password=s3cret")
	s.st.Kubectl(c, "create", "deployment", "-n", ns, "web", "--image=registry.invalid/web:1", "--replicas=2")
	s.st.Kubectl(c, "create", "rolebinding", "viewer", "-n", ns, "--clusterrole=view", "--user="+user)
	// Another tenant, not opted in.
	s.st.Kubectl(c, "create", "namespace", "rt-other")
	s.st.Kubectl(c, "create", "configmap", "-n", "rt-other", "x", "--from-literal=k=x")

	sandbox := v1alpha1.RestoreTestSandbox(ns)
	s.backup(c, ns, "b1", user)
	s.backup(c, "rt-other", "b1", "")

	// While the sandbox exists, the tenant can read nothing in it, and the
	// quota lets no Pod of the restored Deployment run.
	e2estack.Eventually(c, 3*time.Minute, func() (bool, string) {
		out, err := s.st.Run("", "get", "configmaps", "-n", sandbox, "-o", "name")
		return err == nil && strings.Contains(out, "configmap/one"), "restored ConfigMaps in the sandbox: " + out
	})
	for _, args := range [][]string{{"get", "configmap", "one"}, {"get", "configmaps"}, {"get", "secrets"}, {"get", "deployments"}, {"get", "rolebindings"}} {
		out, err := s.st.Run("", append(args, "-n", sandbox, "--as", user)...)
		c.Check(err, NotNil, Commentf("%s as %s in the sandbox: %s", args, user, out))
		c.Check(out, Matches, `(?s).*forbidden.*`, Commentf("%s", args))
	}
	out, _ := s.st.Run("", "get", "rolebindings", "-n", sandbox, "-o", "name")
	c.Check(strings.Contains(out, "erin") || strings.Contains(out, "viewer"), Equals, false, Commentf("no tenant binding is restored: %s", out))
	out, _ = s.st.Run("", "get", "pods", "-n", sandbox, "-o", "name")
	c.Check(strings.TrimSpace(out), Equals, "", Commentf("no Pod runs in the sandbox"))
	out, _ = s.st.Run("", "get", "resourcequota", "-n", sandbox, "nacflow-restore-test", "-o", "jsonpath={.spec.hard}")
	if !strings.Contains(out, "NotFound") { // the sandbox may be going already
		c.Check(out, Matches, `.*"pods":"0".*`)
	}

	rt := s.restoreTest(c, ns, "b1")
	c.Logf("restore test of %s/b1: %s, rto %v, %d of %d items: %s", ns, rt.Result, rt.RTO, rt.ItemsRestored, rt.ItemsExpected, rt.Message)
	c.Check(rt.Result, Equals, v1alpha1.RestoreTestSucceeded, Commentf("%+v", rt))
	c.Assert(rt.RTO, NotNil, Commentf("%+v", rt))
	c.Check(rt.RTO.Duration >= 0 && rt.RTO.Duration < 3*time.Minute, Equals, true, Commentf("rto %s", rt.RTO.Duration))
	c.Check(rt.ItemsRestored, Equals, rt.ItemsExpected, Commentf("%+v", rt))
	// three ConfigMaps, kube-root-ca.crt and the default ServiceAccount
	// (made in the sandbox by Kubernetes first), the Secret, the Deployment
	// and its ReplicaSet
	c.Check(rt.ItemsExpected >= 8, Equals, true, Commentf("%+v", rt))
	c.Check(rt.Sandbox, Equals, sandbox)
	cond := s.st.Kubectl(c, "get", "nab", "-n", ns, "b1", "-o", `jsonpath={.status.conditions[?(@.type=="RestoreTested")].status}`)
	c.Check(cond, Equals, "True")
	s.sandboxGone(c, sandbox)

	// The tenant without the opt-in: its backup completed, no test.
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out := s.st.Kubectl(c, "get", "nab", "-n", "rt-other", "b1", "-o", "jsonpath={.status.plan.state}")
		return out == "complete", "plan of rt-other/b1: " + out
	})
	out = s.st.Kubectl(c, "get", "nab", "-n", "rt-other", "b1", "-o", "jsonpath={.status.restoreTest}")
	c.Check(out, Equals, "", Commentf("restore tests are off for rt-other"))
	out, _ = s.st.Run("", "get", "namespace", v1alpha1.RestoreTestSandbox("rt-other"))
	c.Check(out, Matches, `(?s).*NotFound.*`)
	out = s.st.Kubectl(c, "describe", "nab", "-n", ns, "b1")
	c.Check(out, Matches, `(?s).*Restore Test:.*Result:\s+Succeeded.*`)
}

// TestRestoreTestFailure: a backup whose restore fails in the sandbox (a
// PersistentVolumeClaim, restored because the admin's blueprint includes
// claims, is refused by the sandbox's quota) gives result Failed naming what
// is missing, RestoreTested=False and a Warning event; the backup itself
// stays Completed, and the sandbox goes.
func (s *StorageSuite) TestRestoreTestFailure(c *C) {
	const ns, user = "rt-b", "frank"
	s.tenant(c, ns, user, restoreTestBlueprint(c, ns+"-tests", map[string]any{"includedResources": []string{"configmaps", "persistentvolumeclaims"}}))
	s.st.Kubectl(c, "create", "configmap", "-n", ns, "settings", "--from-literal=k=v")
	s.st.KubectlIn(c, `apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: none
  resources:
    requests:
      storage: 1Gi
`, "apply", "-n", ns, "-f", "-")
	s.backup(c, ns, "b1", user)
	rt := s.restoreTest(c, ns, "b1")
	c.Logf("restore test of %s/b1: %s, rto %v, %d of %d items: %s", ns, rt.Result, rt.RTO, rt.ItemsRestored, rt.ItemsExpected, rt.Message)
	c.Check(rt.Result, Equals, v1alpha1.RestoreTestFailed, Commentf("%+v", rt))
	// settings, kube-root-ca.crt (in the sandbox already) and the claim
	c.Check(rt.ItemsExpected, Equals, int32(3), Commentf("%+v", rt))
	c.Check(rt.ItemsRestored, Equals, int32(2), Commentf("%+v", rt))
	c.Check(rt.Message, Matches, `.*missing: 1 v1/PersistentVolumeClaim.*`)
	cond := s.st.Kubectl(c, "get", "nab", "-n", ns, "b1", "-o", `jsonpath={.status.conditions[?(@.type=="RestoreTested")].status}`)
	c.Check(cond, Equals, "False")
	e2estack.Eventually(c, 30*time.Second, func() (bool, string) {
		out := s.st.Kubectl(c, "get", "events", "-n", ns, "--field-selector", "reason=RestoreTestFailed,type=Warning", "-o", "jsonpath={.items[*].message}")
		return strings.Contains(out, "PersistentVolumeClaim"), "Warning events RestoreTestFailed: " + out
	})
	c.Check(s.st.Kubectl(c, "get", "nab", "-n", ns, "b1", "-o", "jsonpath={.status.veleroBackup.status.phase}"), Equals, "Completed")
	e2estack.Eventually(c, time.Minute, func() (bool, string) {
		out := s.st.Kubectl(c, "get", "nab", "-n", ns, "b1", "-o", "jsonpath={.status.plan.state}")
		return out == "complete", "a failed restore test never fails the backup's plan: " + out
	})
	s.sandboxGone(c, v1alpha1.RestoreTestSandbox(ns))
}
