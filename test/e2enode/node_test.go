// Package e2enode deploys nacflow the way a cluster runs it — the image of
// `make image` as a Deployment from config/default — onto the local node of
// bin/localcp (containerd, kubelet, kube-scheduler next to kube-apiserver,
// etcd, kube-controller-manager, the object store and a real Velero
// server), with `make deploy-local` and `make undeploy-local`, and checks
// that the Pod runs as the manifest says and serves tenants. It is its own
// package so that go test's per-package time limit is not shared with
// test/e2e. Where the machine cannot run a node (not Linux, not root, no
// containerd, runc or CNI plugins) every test is skipped with one line
// saying why; everything else must pass.
package e2enode

import (
	"compress/gzip"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	. "gopkg.in/check.v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/nacflow/nacflow/test/e2estack"
)

func Test(t *testing.T) { TestingT(t) }

// NodeSuite runs one localcp stack with a node for all its tests, and the
// controller deployed on it.
type NodeSuite struct {
	root, bin, dir    string
	skip              string // why the machine cannot run a node ("" when it can)
	st                *e2estack.Stack
	nodeStart, deploy time.Duration
}

var _ = Suite(&NodeSuite{})

const (
	ns         = "openshift-adp"
	deployment = "nacflow-controller"
	selector   = "app.kubernetes.io/name=nacflow,app.kubernetes.io/component=controller"
	leaseName  = "nacflow.oadp.openshift.io"
)

// cannotRunNode returns why this machine cannot run the local node, or "":
// the same requirements as localcp's --node (Linux, root, containerd, ctr,
// runc, containerd-shim-runc-v2, the CNI loopback plugin).
func cannotRunNode() string {
	if runtime.GOOS != "linux" {
		return "not Linux"
	}
	if os.Geteuid() != 0 {
		return "not root"
	}
	for _, b := range []string{"containerd", "ctr", "runc", "containerd-shim-runc-v2"} {
		if _, err := exec.LookPath(b); err != nil {
			return b + " is not installed (make node-runtime)"
		}
	}
	for _, d := range []string{"/usr/lib/cni", "/opt/cni/bin"} {
		if _, err := os.Stat(filepath.Join(d, "loopback")); err == nil {
			return ""
		}
	}
	return "the CNI plugins are not installed (make node-runtime)"
}

func (s *NodeSuite) SetUpSuite(c *C) {
	if s.skip = cannotRunNode(); s.skip != "" {
		// One line, also without -check.vv (which alone shows skip reasons).
		fmt.Println("e2enode: skipped: this machine cannot run a node:", s.skip)
		c.Skip("this machine cannot run a node: " + s.skip)
	}
	if _, err := exec.LookPath("kubectl"); err != nil {
		c.Fatalf("kubectl is not on PATH: %v", err)
	}
	root := e2estack.RepoRoot(c)
	s.root, s.bin, s.dir = root, e2estack.BuildBinaries(c, root), c.MkDir()
	assets := e2estack.Assets(root)
	for _, b := range []string{"kubelet", "kube-scheduler", "pause"} {
		if _, err := os.Stat(filepath.Join(assets, b)); err != nil {
			c.Fatalf("%s: %v (make test builds it)", filepath.Join(assets, b), err)
		}
	}
	s.start(c)
	start := time.Now()
	s.make(c, "deploy-local")
	s.deploy = time.Since(start)
	fmt.Printf("e2enode: node Ready in %s; make deploy-local (image build, import, apply) to Available in %s\n",
		s.nodeStart.Round(100*time.Millisecond), s.deploy.Round(100*time.Millisecond))
}

// start runs localcp with its node, Velero and no controller command, and
// returns once the stack is ready.
func (s *NodeSuite) start(c *C) {
	s.st = e2estack.Launch(c, s.root, s.bin, s.dir, ">> no controller command", "--node=true", "--velero-store-validation-frequency", "5s")
	out := s.st.Drain()
	m := regexp.MustCompile(`\) Ready in ([0-9.]+)s;`).FindStringSubmatch(out)
	c.Assert(m, HasLen, 2, Commentf("localcp should report the node Ready:\n%s", out))
	secs, err := strconv.ParseFloat(m[1], 64)
	c.Assert(err, IsNil)
	s.nodeStart = time.Duration(secs * float64(time.Second))
}

func (s *NodeSuite) TearDownSuite(c *C) {
	if s.st == nil {
		return
	}
	s.st.InterruptWithin(c, 25*time.Second)
	if m := regexp.MustCompile(`>> stopped [0-9.]+s after SIGINT`).FindString(s.st.Drain()); m != "" {
		fmt.Println("e2enode: localcp", m[3:])
	}
	// Nothing of the node is left: no mount under its directory, no
	// container process, no shim.
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	c.Assert(err, IsNil)
	c.Check(strings.Contains(string(mounts), filepath.Join(s.dir, "node")), Equals, false, Commentf("mounts left:\n%s", mounts))
	c.Check(procsMentioning(filepath.Join(s.dir, "node")), HasLen, 0)
}

// procsMentioning lists the processes whose command line contains str.
func procsMentioning(str string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(raw), str) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(raw), "\x00", " "))
		}
	}
	return out
}

// make runs a Makefile target from the repository root on the suite's
// stack (LOCAL=its directory) and fails the test when it fails.
func (s *NodeSuite) make(c *C, target string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", target, "LOCAL="+s.dir)
	cmd.Dir = s.root
	out, err := cmd.CombinedOutput()
	c.Assert(err, IsNil, Commentf("make %s: %s\nlocalcp:\n%s", target, out, s.st.Drain()))
	return string(out)
}

// manifest returns the Deployment of config/manager/manager.yaml.
func (s *NodeSuite) manifest(c *C) *appsv1.Deployment {
	raw, err := os.ReadFile(filepath.Join(s.root, "config", "manager", "manager.yaml"))
	c.Assert(err, IsNil)
	d := &appsv1.Deployment{}
	c.Assert(yaml.Unmarshal(raw, d), IsNil)
	return d
}

// pod returns the controller's one running Pod.
func (s *NodeSuite) pod(c *C) *corev1.Pod {
	var pods corev1.PodList
	c.Assert(json.Unmarshal([]byte(s.st.Kubectl(c, "get", "pods", "-n", ns, "-l", selector, "-o", "json")), &pods), IsNil)
	c.Assert(pods.Items, HasLen, 1, Commentf("one controller Pod"))
	return &pods.Items[0]
}

// containerPID returns the host pid of the Pod's manager container, from
// the node's containerd.
func (s *NodeSuite) containerPID(c *C, pod *corev1.Pod) int {
	c.Assert(pod.Status.ContainerStatuses, HasLen, 1)
	id := strings.TrimPrefix(pod.Status.ContainerStatuses[0].ContainerID, "containerd://")
	out, err := exec.Command("ctr", "--address", filepath.Join(s.dir, "node", "containerd.sock"), "--namespace", "k8s.io", "tasks", "ls").CombinedOutput()
	c.Assert(err, IsNil, Commentf("%s", out))
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) >= 3 && f[0] == id && f[2] == "RUNNING" {
			pid, err := strconv.Atoi(f[1])
			c.Assert(err, IsNil)
			return pid
		}
	}
	c.Fatalf("container %s is not a running task of the node's containerd:\n%s", id, out)
	return 0
}

// procStatus returns field (e.g. "Uid") of /proc/PID/status.
func procStatus(c *C, pid int, field string) string {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	c.Assert(err, IsNil)
	for _, l := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && k == field {
			return strings.TrimSpace(v)
		}
	}
	c.Fatalf("no %s in /proc/%d/status", field, pid)
	return ""
}

// The Deployment is Available and its Pod runs as config/manager says.
func (s *NodeSuite) TestDeploymentAsManifest(c *C) {
	c.Check(s.st.Kubectl(c, "get", "deployment", "-n", ns, deployment, "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}|{.status.availableReplicas}`), Equals, "True|1")
	want := s.manifest(c).Spec.Template.Spec
	pod := s.pod(c)
	c.Check(pod.Spec.SecurityContext, DeepEquals, want.SecurityContext)
	c.Assert(pod.Spec.Containers, HasLen, 1)
	c.Check(pod.Spec.Containers[0].SecurityContext, DeepEquals, want.Containers[0].SecurityContext)
	c.Check(pod.Spec.Containers[0].Resources, DeepEquals, want.Containers[0].Resources)
	c.Check(pod.Spec.Containers[0].Image, Matches, `ghcr\.io/nacflow/nacflow:.+`)
	c.Check(pod.Status.ContainerStatuses[0].Ready, Equals, true)

	// The process: uid 65532 (the image's user), no capabilities, no new
	// privileges, seccomp filtering (RuntimeDefault), a read-only root, and
	// GOMEMLIMIT from limits.memory in bytes.
	pid := s.containerPID(c, pod)
	c.Check(strings.Fields(procStatus(c, pid, "Uid")), DeepEquals, []string{"65532", "65532", "65532", "65532"})
	c.Check(procStatus(c, pid, "CapEff"), Equals, "0000000000000000")
	c.Check(procStatus(c, pid, "NoNewPrivs"), Equals, "1")
	c.Check(procStatus(c, pid, "Seccomp"), Equals, "2")
	mountinfo, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
	c.Assert(err, IsNil)
	rootRO := false
	for _, l := range strings.Split(string(mountinfo), "\n") {
		if f := strings.Fields(l); len(f) > 5 && f[4] == "/" {
			rootRO = strings.HasPrefix(f[5], "ro")
		}
	}
	c.Check(rootRO, Equals, true, Commentf("%s", mountinfo))
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	c.Assert(err, IsNil)
	limit := want.Containers[0].Resources.Limits.Memory().Value()
	c.Check(strings.Contains("\x00"+string(environ), "\x00GOMEMLIMIT="+strconv.FormatInt(limit, 10)+"\x00"), Equals, true, Commentf("limit %d, environment %q", limit, environ))

	// No shell in the image.
	out, err := s.st.Run("", "exec", "-n", ns, pod.Name, "--", "/bin/sh", "-c", "true")
	c.Check(err, NotNil)
	c.Check(out, Matches, `(?s).*/bin/sh: no such file or directory.*`)

	// Probes answered: the kubelet marks the Pod Ready only after /readyz
	// answered; /healthz answers on the Pod's address too.
	resp, err := http.Get("http://" + pod.Status.PodIP + ":18091/healthz")
	c.Assert(err, IsNil)
	resp.Body.Close()
	c.Check(resp.StatusCode, Equals, http.StatusOK)

	// The metrics Service has the Pod's address as a ready endpoint, and
	// serves the metrics over HTTPS to the scraper's token.
	c.Check(s.st.Kubectl(c, "get", "endpointslices", "-n", ns, "-l", "kubernetes.io/service-name=nacflow-metrics",
		"-o", `jsonpath={.items[0].endpoints[0].addresses[0]}|{.items[0].endpoints[0].conditions.ready}|{.items[0].ports[0].port}`),
		Equals, pod.Status.PodIP+"|true|18090")
	token := strings.TrimSpace(s.st.Kubectl(c, "create", "token", "metrics-scraper", "-n", ns))
	req, err := http.NewRequest(http.MethodGet, "https://"+pod.Status.PodIP+":18090/metrics", nil)
	c.Assert(err, IsNil)
	req.Header.Set("Authorization", "Bearer "+token)
	insecure := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // nac's self-signed serving certificate
	resp, err = insecure.Do(req)
	c.Assert(err, IsNil)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	c.Check(resp.StatusCode, Equals, http.StatusOK)
	c.Check(string(body), Matches, `(?s).*controller_runtime_reconcile_total.*`)
}

// The leader-election Lease is held and renewed by the Pod's process: its
// log says it acquired the Lease, and the holder (controller-runtime's
// "hostname_uuid"; a hostNetwork Pod has the node's hostname) renews it.
func (s *NodeSuite) TestLeaseHeldByPod(c *C) {
	pod := s.pod(c)
	e2estack.Eventually(c, time.Minute, func() (bool, string) {
		log := s.st.Kubectl(c, "logs", "-n", ns, pod.Name)
		return strings.Contains(log, "successfully acquired lease "+ns+"/"+leaseName), log
	})
	holder := s.st.Kubectl(c, "get", "lease", "-n", ns, leaseName, "-o", "jsonpath={.spec.holderIdentity}")
	c.Check(holder, Matches, pod.Name+`_[0-9a-f-]{36}`, Commentf("the Lease names the Pod ($POD_NAME), not the node's hostname"))
	first := s.st.Kubectl(c, "get", "lease", "-n", ns, leaseName, "-o", "jsonpath={.spec.renewTime}")
	e2estack.Eventually(c, 15*time.Second, func() (bool, string) {
		now := s.st.Kubectl(c, "get", "lease", "-n", ns, leaseName, "-o", "jsonpath={.spec.holderIdentity}|{.spec.renewTime}")
		return now != holder+"|"+first && strings.HasPrefix(now, holder+"|"), now
	})
}

// A tenant bound only to the admin ClusterRole in its namespace backs up,
// restores and downloads its backup's log through the deployed controller
// and the real Velero; the controller's log is the Pod's.
func (s *NodeSuite) TestTenantWithRealVelero(c *C) {
	const tenant, user = "tenant-node", "alice"
	s.st.Kubectl(c, "create", "namespace", tenant)
	s.st.Kubectl(c, "create", "rolebinding", "alice-admin", "-n", tenant, "--clusterrole=admin", "--user="+user)
	as := func(args ...string) string { return s.st.Kubectl(c, append(args, "--as="+user)...) }
	asIn := func(stdin string, args ...string) string {
		return s.st.KubectlIn(c, stdin, append(args, "--as="+user)...)
	}
	// The tenant can do nothing outside its namespace.
	out, err := s.st.Run("", "get", "nab", "-n", "demo", "--as="+user)
	c.Check(err, NotNil)
	c.Check(out, Matches, `(?s).*forbidden.*`)

	as("create", "configmap", "-n", tenant, "app-config", "--from-literal=greeting=hello-from-the-node")
	asIn("apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminBackup\nmetadata:\n  name: full\n  namespace: "+tenant+"\nspec:\n  backupSpec:\n    snapshotVolumes: false\n", "apply", "-f", "-")
	var nab string
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		nab = as("get", "nab", "-n", tenant, "full", "-o", "jsonpath={.status.veleroBackup.status.phase}|{.status.plan.state}|{.status.veleroBackup.name}")
		return strings.HasPrefix(nab, "Completed|complete|"), nab
	})
	veleroBackup := strings.Split(nab, "|")[2]
	c.Check(veleroBackup, Matches, tenant+`-full-[0-9a-f-]{36}`)

	as("delete", "configmap", "-n", tenant, "app-config")
	asIn("apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminRestore\nmetadata:\n  name: back\n  namespace: "+tenant+"\nspec:\n  restoreSpec:\n    backupName: full\n", "apply", "-f", "-")
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out := as("get", "nar", "-n", tenant, "back", "-o", "jsonpath={.status.veleroRestore.status.phase}|{.status.plan.state}")
		return out == "Completed|complete", out
	})
	c.Check(as("get", "configmap", "-n", tenant, "app-config", "-o", "jsonpath={.data.greeting}"), Equals, "hello-from-the-node")

	asIn("apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminDownloadRequest\nmetadata:\n  name: log\n  namespace: "+tenant+"\nspec:\n  target:\n    kind: BackupLog\n    name: full\n", "apply", "-f", "-")
	var url string
	e2estack.Eventually(c, time.Minute, func() (bool, string) {
		out := as("get", "nadr", "-n", tenant, "log", "-o", `jsonpath={.status.phase}|{.status.velero.status.downloadURL}`)
		url = strings.TrimPrefix(out, "Created|")
		return strings.HasPrefix(url, "http"), out
	})
	resp, err := http.Get(url)
	c.Assert(err, IsNil)
	defer resp.Body.Close()
	c.Assert(resp.StatusCode, Equals, http.StatusOK)
	gz, err := gzip.NewReader(resp.Body)
	c.Assert(err, IsNil)
	log, err := io.ReadAll(gz)
	c.Assert(err, IsNil)
	c.Check(strings.Contains(string(log), "backup="+ns+"/"+veleroBackup), Equals, true, Commentf("%.300s", log))

	// The controller's log is the Pod's, as kubectl logs reads it through
	// the kubelet: the start line of the image's own version (its tag),
	// the Lease, the controllers' workers (nac logs nothing per object at
	// its default level).
	pod := s.pod(c)
	tag := pod.Spec.Containers[0].Image[strings.LastIndex(pod.Spec.Containers[0].Image, ":")+1:]
	podLog := s.st.Kubectl(c, "logs", "-n", ns, pod.Name)
	c.Check(strings.Contains(podLog, `"msg":"starting nac","version":"`+tag+`"`), Equals, true, Commentf("tag %s: %.1000s", tag, podLog))
	c.Check(strings.Contains(podLog, "successfully acquired lease "+ns+"/"+leaseName), Equals, true)
	c.Check(strings.Contains(podLog, `"msg":"Starting workers","controller":"nonadminbackup"`), Equals, true, Commentf("%.3000s", podLog))
}

// make undeploy-local removes the controller (Deployment, Pod, RBAC) and
// keeps the CRDs and the tenants' objects; make deploy-local brings it back.
func (s *NodeSuite) TestUndeployKeepsTenants(c *C) {
	const tenant = "tenant-undeploy"
	s.st.Kubectl(c, "create", "namespace", tenant)
	s.st.KubectlIn(c, "apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminBackup\nmetadata:\n  name: kept\n  namespace: "+tenant+"\nspec:\n  backupSpec:\n    snapshotVolumes: false\n", "apply", "-f", "-")
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out := s.st.Kubectl(c, "get", "nab", "-n", tenant, "kept", "-o", "jsonpath={.status.veleroBackup.status.phase}")
		return out == "Completed", out
	})
	s.make(c, "undeploy-local")
	e2estack.Eventually(c, time.Minute, func() (bool, string) {
		out, _ := s.st.Run("", "get", "pods,deployment", "-n", ns, "-l", selector, "-o", "name")
		return out == "", out
	})
	out, err := s.st.Run("", "get", "clusterrole", "nacflow-manager")
	c.Check(err, NotNil, Commentf("%s", out))
	c.Check(s.st.Kubectl(c, "get", "nab", "-n", tenant, "kept", "-o", "jsonpath={.status.veleroBackup.status.phase}"), Equals, "Completed")
	c.Check(s.st.Kubectl(c, "get", "crd", "nonadminbackups.oadp.openshift.io", "-o", "name"), Equals, "customresourcedefinition.apiextensions.k8s.io/nonadminbackups.oadp.openshift.io\n")

	s.make(c, "deploy-local")
	c.Check(s.st.Kubectl(c, "get", "deployment", "-n", ns, deployment, "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`), Equals, "True")
}

// helm runs bin/helm against the stack and fails the test when it fails.
func (s *NodeSuite) helm(c *C, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(e2estack.Assets(s.root), "helm"), args...)
	cmd.Dir = s.root
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.st.Kubeconfig)
	out, err := cmd.CombinedOutput()
	c.Assert(err, IsNil, Commentf("helm %s: %s\nlocalcp:\n%s", strings.Join(args, " "), out, s.st.Drain()))
	return string(out)
}

// The Helm chart installs on the node as admins outside OpenShift install
// it: helm install (the node's needs added by the post-renderer that
// applies config/local-node, as make deploy-local does) → the Deployment
// Available with the image of the values, managed by Helm; helm uninstall
// removes the controller and keeps the CRDs and tenants' objects. make
// deploy-local then brings the kustomize install back for the other tests.
func (s *NodeSuite) TestHelmChartOnNode(c *C) {
	image := s.st.Kubectl(c, "get", "deployment", "-n", ns, deployment, "-o", "jsonpath={.spec.template.spec.containers[0].image}")
	repo, tag, ok := strings.Cut(image, ":")
	c.Assert(ok, Equals, true, Commentf("image %q", image))
	s.make(c, "undeploy-local")
	e2estack.Eventually(c, time.Minute, func() (bool, string) {
		out, _ := s.st.Run("", "get", "pods,deployment", "-n", ns, "-l", selector, "-o", "name")
		return out == "", out
	})

	start := time.Now()
	s.helm(c, "install", "nacflow", "charts/nacflow", "-n", ns, "--set", "image.repository="+repo, "--set-string", "image.tag="+tag,
		"--post-renderer", filepath.Join(s.root, "hack", "localcp", "helm-post-render"), "--wait", "--timeout", "3m")
	fmt.Printf("e2enode: helm install to Available in %s\n", time.Since(start).Round(100*time.Millisecond))
	c.Check(s.st.Kubectl(c, "get", "deployment", "-n", ns, deployment, "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`), Equals, "True")
	c.Check(s.st.Kubectl(c, "get", "deployment", "-n", ns, deployment, "-o", `jsonpath={.metadata.labels.app\.kubernetes\.io/managed-by}|{.spec.template.spec.containers[0].image}`),
		Equals, "Helm|"+image)
	pod := s.pod(c)
	c.Check(pod.Status.Phase, Equals, corev1.PodRunning)
	c.Check(*pod.Spec.SecurityContext.RunAsNonRoot, Equals, true)
	c.Check(s.helm(c, "status", "nacflow", "-n", ns), Matches, `(?s).*STATUS: deployed.*`)

	s.helm(c, "uninstall", "nacflow", "-n", ns, "--wait", "--timeout", "2m")
	e2estack.Eventually(c, time.Minute, func() (bool, string) {
		out, _ := s.st.Run("", "get", "pods,deployment", "-n", ns, "-l", selector, "-o", "name")
		return out == "", out
	})
	out, err := s.st.Run("", "get", "serviceaccount", "-n", ns, "nacflow")
	c.Check(err, NotNil, Commentf("helm uninstall leaves %s", out))
	out, err = s.st.Run("", "get", "clusterrole", "nacflow-manager")
	c.Check(err, NotNil, Commentf("helm uninstall leaves %s", out))
	c.Check(s.st.Kubectl(c, "get", "crd", "nonadminbackups.oadp.openshift.io", "-o", "name"), Equals, "customresourcedefinition.apiextensions.k8s.io/nonadminbackups.oadp.openshift.io\n",
		Commentf("Helm keeps the CRDs"))

	s.make(c, "deploy-local")
}
