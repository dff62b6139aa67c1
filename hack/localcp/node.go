package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nacflow/nacflow/internal/localstack/childproc"
)

// The local node: one kubelet with its own containerd, and kube-scheduler,
// so that Pods run (docs/local-node.md).
const (
	// nodeName is the Node's name (the kubelet's --hostname-override).
	nodeName = "nacflow-node"
	// defaultNodeIP is the node's address, added to the loopback interface
	// for the node's lifetime. It cannot be in 127.0.0.0/8: the API server
	// refuses loopback addresses in EndpointSlices, and the Pods of the node
	// use the host's network, so their IP is the node's. 198.51.100.0/24 is
	// TEST-NET-2 (RFC 5737), never routed on the Internet; on lo it is
	// reachable from this machine only.
	defaultNodeIP = "198.51.100.10"
	// nodeReadyTimeout bounds the wait for the Node to be Ready after the
	// kubelet's start.
	nodeReadyTimeout = 90 * time.Second
	// Stop graces of the node's processes, and how long containers get
	// between SIGTERM and SIGKILL when the node stops.
	schedulerGrace  = 1 * time.Second
	kubeletGrace    = 2 * time.Second
	containerGrace  = 3 * time.Second
	containerdGrace = 2 * time.Second
)

// cniBinDirs are where the CNI plugins are looked for: Debian's
// containernetworking-plugins, then the upstream release's place.
var cniBinDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}

// nodeMode is --node: "auto", "true" or "false".
type nodeMode string

// nodeSupport returns "" when this machine can run the local node with the
// tools in assets (Linux, root, containerd, ctr, runc and the CNI loopback
// plugin installed, kubelet, kube-scheduler and pause built), else why not,
// in one line with the fix.
func nodeSupport(assets string) string {
	if runtime.GOOS != "linux" {
		return "the local node needs Linux (this is " + runtime.GOOS + ")"
	}
	if os.Geteuid() != 0 {
		return "the local node needs root (kubelet and containerd mount and create cgroups)"
	}
	var missing []string
	for _, b := range []string{"containerd", "ctr", "runc", "containerd-shim-runc-v2"} {
		if _, err := exec.LookPath(b); err != nil {
			missing = append(missing, b)
		}
	}
	if cniBinDir() == "" {
		missing = append(missing, "the CNI plugins ("+strings.Join(cniBinDirs, " or ")+")")
	}
	if len(missing) > 0 {
		return "the local node needs " + strings.Join(missing, ", ") + ": `make node-runtime` installs them"
	}
	for _, b := range []string{"kubelet", "kube-scheduler", "pause"} {
		if !isFile(filepath.Join(assets, b)) {
			return "the local node needs " + filepath.Join(assets, b) + ": `make run` builds it"
		}
	}
	if _, err := os.Stat("/sys/fs/cgroup"); err != nil {
		return "the local node needs cgroups mounted at /sys/fs/cgroup"
	}
	if pid, ok := otherKubelet("/proc"); ok {
		return fmt.Sprintf("another kubelet runs (pid %d): one node per machine, its Pods' cgroups (kubepods) are shared", pid)
	}
	return ""
}

// otherKubelet returns the pid of a process named kubelet under procRoot
// (its comm), if one runs.
func otherKubelet(procRoot string) (int, bool) {
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return 0, false
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if comm, err := os.ReadFile(filepath.Join(procRoot, e.Name(), "comm")); err == nil && strings.TrimSpace(string(comm)) == "kubelet" {
			return pid, true
		}
	}
	return 0, false
}

// cniBinDir returns the first of cniBinDirs holding the loopback plugin,
// or "".
func cniBinDir() string {
	for _, d := range cniBinDirs {
		if isFile(filepath.Join(d, "loopback")) {
			return d
		}
	}
	return ""
}

// nodeConfig is what the node needs.
type nodeConfig struct {
	dir    string // absolute: DIR/node, the node's state (wiped at start)
	assets string // kubelet, kube-scheduler, pause
	nodeIP string
	pki    nodePKI
}

// prepareNode makes dir (DIR/node) empty, after sweeping what a node killed
// earlier left there, writes the node's PKI, and sets the flags
// kube-apiserver needs for a node before env starts it: the client
// certificate it shows the kubelet, and the ServiceAccount admission plugin
// (envtest disables it; without it Pods get no service account token).
func prepareNode(env *envtest.Environment, dir, assets, nodeIP string) (*nodeConfig, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := sweepNode(abs, false); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(abs); err != nil {
		return nil, fmt.Errorf("removing the previous node's state: %w", err)
	}
	pki, err := writeNodePKI(filepath.Join(abs, "pki"))
	if err != nil {
		return nil, err
	}
	if env.ControlPlane.APIServer == nil {
		env.ControlPlane.APIServer = &envtest.APIServer{}
	}
	args := env.ControlPlane.APIServer.Configure()
	args.Disable("disable-admission-plugins")
	args.Set("kubelet-client-certificate", pki.clientCert)
	args.Set("kubelet-client-key", pki.clientKey)
	// The node's name resolves nowhere: reach the kubelet at its address.
	args.Set("kubelet-preferred-address-types", "InternalIP")
	return &nodeConfig{dir: abs, assets: assets, nodeIP: nodeIP, pki: pki}, nil
}

// node is the running local node.
type node struct {
	cfg                            *nodeConfig
	containerd, kubelet, scheduler *proc
	ipAdded                        bool
	socket                         string
}

// startNode starts containerd (its own root, state, socket and
// configuration under cfg.dir), imports the sandbox image, starts the
// kubelet and kube-scheduler against env's API server, and returns once the
// Node is Ready. On error it has stopped what it started.
func startNode(ctx context.Context, env *envtest.Environment, restCfg *rest.Config, cfg *nodeConfig) (_ *node, err error) {
	n := &node{cfg: cfg, socket: filepath.Join(cfg.dir, "containerd.sock")}
	defer func() {
		if err != nil {
			n.stop()
		}
	}()
	if err := addLoopbackIP(cfg.nodeIP); err != nil {
		return nil, err
	}
	n.ipAdded = true

	if err := n.startContainerd(ctx); err != nil {
		return nil, err
	}
	pauseTar := filepath.Join(cfg.dir, "pause-image.tar")
	if err := writePauseImage(filepath.Join(cfg.assets, "pause"), pauseTar, runtime.GOARCH); err != nil {
		return nil, err
	}
	if err := n.ctr("images", "import", pauseTar); err != nil {
		return nil, fmt.Errorf("importing the sandbox image: %w", err)
	}

	cs, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, err
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: kubeletClientUser},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: kubeletClientUser}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:kubelet-api-admin"}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("letting kube-apiserver call the kubelet: %w", err)
	}

	if err := n.startKubelet(env); err != nil {
		return nil, err
	}
	if err := n.startScheduler(ctx, env); err != nil {
		return nil, err
	}
	if err := waitNodeReady(ctx, cs, n.kubelet, time.Now().Add(nodeReadyTimeout)); err != nil {
		return nil, err
	}
	return n, nil
}

// startContainerd writes containerd's configuration and the CNI network
// (loopback only: the node's Pods use the host's network) and starts
// containerd, waiting up to 30 s for its socket.
func (n *node) startContainerd(ctx context.Context) error {
	d := n.cfg.dir
	cniConf := filepath.Join(d, "cni", "net.d")
	if err := os.MkdirAll(cniConf, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cniConf, "10-loopback.conflist"),
		[]byte(`{"cniVersion": "0.4.0", "name": "nacflow-loopback", "plugins": [{"type": "loopback"}]}`+"\n"), 0o644); err != nil {
		return err
	}
	conf := fmt.Sprintf(`# The local node's containerd (localcp): its own root, state and socket.
version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]

[grpc]
  address = %q

[ttrpc]
  address = ""

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  # Never below containerd's own oom_score_adj: the kubelet asks -998 for
  # sandboxes, and lowering it needs CAP_SYS_RESOURCE, which sandboxed
  # machines (this Firecracker VM) lack; runc then fails with "can't get
  # final child's PID from pipe: EOF".
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = %q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
`, filepath.Join(d, "containerd", "root"), filepath.Join(d, "containerd", "state"), n.socket,
		filepath.Join(d, "containerd", "opt"), pauseImage, filepath.Join(d, "runc"), cniBinDir(), cniConf)
	confPath := filepath.Join(d, "containerd.toml")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return err
	}
	bin, _ := exec.LookPath("containerd")
	p, err := startProc("containerd", filepath.Join(filepath.Dir(d), "containerd.log"), nil, bin, "--config", confPath)
	if err != nil {
		return err
	}
	n.containerd = p
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c, err := net.Dial("unix", n.socket); err == nil {
			c.Close()
			return nil
		}
		if err, done := p.Exited(); done {
			return fmt.Errorf("containerd exited: %v (see %s)", err, p.LogPath())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("containerd did not listen on %s within 30s (see %s)", n.socket, p.LogPath())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ctr runs containerd's ctr against the node's containerd, namespace k8s.io
// (the kubelet's), and returns its output in the error when it fails.
func (n *node) ctr(args ...string) error {
	_, err := n.ctrOutput(args...)
	return err
}

// ctrOutput is ctr, returning standard output.
func (n *node) ctrOutput(args ...string) (string, error) {
	cmd := exec.Command("ctr", append([]string{"--address", n.socket, "--namespace", "k8s.io"}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// startKubelet writes the kubelet's kubeconfig (a user of groups
// system:nodes and system:masters: envtest's API server authorizes by RBAC
// only, without the Node authorizer) and configuration, and starts it.
func (n *node) startKubelet(env *envtest.Environment) error {
	d := filepath.Join(n.cfg.dir, "kubelet")
	kc, err := userKubeconfig(env, "system:node:"+nodeName, []string{"system:nodes", "system:masters"}, filepath.Join(n.cfg.dir, "kubelet.kubeconfig"))
	if err != nil {
		return err
	}
	port, err := childproc.FreePort()
	if err != nil {
		return err
	}
	healthz, err := childproc.FreePort()
	if err != nil {
		return err
	}
	conf := fmt.Sprintf(`# The local node's kubelet (localcp).
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
cgroupDriver: cgroupfs
failSwapOn: false
containerRuntimeEndpoint: unix://%s
podLogsDir: %s
volumePluginDir: %s
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %s
authorization:
  mode: Webhook
serializeImagePulls: false
evictionHard:
  memory.available: "100Mi"
  nodefs.available: "2%%"
  imagefs.available: "2%%"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
`, n.cfg.nodeIP, port, healthz, n.socket, filepath.Join(n.cfg.dir, "pod-logs"), filepath.Join(n.cfg.dir, "volume-plugins"), n.cfg.pki.caCert)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return err
	}
	confPath := filepath.Join(n.cfg.dir, "kubelet.yaml")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return err
	}
	p, err := startProc("kubelet", filepath.Join(filepath.Dir(n.cfg.dir), "kubelet.log"), nil, filepath.Join(n.cfg.assets, "kubelet"),
		"--config", confPath, "--kubeconfig", kc, "--root-dir", d, "--cert-dir", filepath.Join(d, "pki"),
		"--hostname-override", nodeName, "--node-ip", n.cfg.nodeIP, "--v", "1")
	if err != nil {
		return err
	}
	n.kubelet = p
	return nil
}

// startScheduler starts kube-scheduler (a system:masters user, no leader
// election, its secure port on a free loopback port) and waits up to a
// minute for its /healthz.
func (n *node) startScheduler(ctx context.Context, env *envtest.Environment) error {
	kc, err := userKubeconfig(env, "system:kube-scheduler", []string{"system:masters"}, filepath.Join(n.cfg.dir, "kube-scheduler.kubeconfig"))
	if err != nil {
		return err
	}
	port, err := childproc.FreePort()
	if err != nil {
		return err
	}
	p, err := startProc("kube-scheduler", filepath.Join(filepath.Dir(n.cfg.dir), "kube-scheduler.log"), nil, filepath.Join(n.cfg.assets, "kube-scheduler"),
		"--kubeconfig", kc, "--authentication-kubeconfig", kc, "--authorization-kubeconfig", kc,
		"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port))
	if err != nil {
		return err
	}
	n.scheduler = p
	return waitHealthz(ctx, p, "https://127.0.0.1:"+strconv.Itoa(port)+"/healthz", time.Minute)
}

// userKubeconfig writes, at path, a kubeconfig of a client-certificate user
// name in groups of env's API server, and returns path.
func userKubeconfig(env *envtest.Environment, name string, groups []string, path string) (string, error) {
	u, err := env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return "", fmt.Errorf("creating user %s: %w", name, err)
	}
	kc, err := u.KubeConfig()
	if err != nil {
		return "", err
	}
	return path, os.WriteFile(path, kc, 0o600)
}

// waitHealthz polls url (a self-signed HTTPS endpoint of p) until it
// answers 200, p exits, timeout passes or ctx ends.
func waitHealthz(ctx context.Context, p *proc, url string, timeout time.Duration) error {
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback, self-signed: only its liveness is read
	}}
	deadline := time.Now().Add(timeout)
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if err, done := p.Exited(); done {
			return fmt.Errorf("%s exited: %v (see %s)", p.Name, err, p.LogPath())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not healthy at %s within %s (see %s)", p.Name, url, timeout, p.LogPath())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitNodeReady polls Node nodeName every 500 ms until its Ready condition
// is True. It fails when the kubelet exits, at deadline (with the Ready
// condition's message), or when ctx ends.
func waitNodeReady(ctx context.Context, cs kubernetes.Interface, kubelet *proc, deadline time.Time) error {
	why := "not registered"
	for {
		if nd, err := cs.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{}); err == nil {
			why = "no Ready condition"
			for _, c := range nd.Status.Conditions {
				if c.Type == corev1.NodeReady {
					if c.Status == corev1.ConditionTrue {
						return nil
					}
					why = c.Reason + ": " + c.Message
				}
			}
		}
		if err, done := kubelet.Exited(); done {
			return fmt.Errorf("kubelet exited: %v (see %s)", err, kubelet.LogPath())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s not Ready within %s: %s (see %s)", nodeName, nodeReadyTimeout, why, kubelet.LogPath())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// stop stops the node: kube-scheduler and the kubelet, then every container
// of the node (SIGTERM, SIGKILL after containerGrace), their tasks and
// containers, containerd, and then unmounts what is still mounted under the
// node's directory, removes the kubelet's cgroups and the node's address.
// It reports what it could not undo on stdout. A nil n is a no-op.
func (n *node) stop() {
	if n == nil {
		return
	}
	fmt.Println(">> stopping the node (kube-scheduler, kubelet, containers, containerd)")
	n.scheduler.stop(schedulerGrace)
	n.kubelet.stop(kubeletGrace)
	if n.containerd != nil {
		if _, done := n.containerd.Exited(); !done {
			n.removeContainers()
		}
		n.containerd.stop(containerdGrace)
	}
	if err := sweepNode(n.cfg.dir, true); err != nil {
		fmt.Println("  ", err)
	}
	if n.ipAdded {
		if err := removeLoopbackIP(n.cfg.nodeIP); err != nil {
			fmt.Println("  ", err)
		}
	}
}

// removeContainers stops every task of the node's containerd (SIGTERM,
// then SIGKILL after containerGrace), deletes the tasks, which ends their
// shims, and the containers, which removes their snapshots. The kubelet
// must be stopped first, or it starts them again.
func (n *node) removeContainers() {
	out, err := n.ctrOutput("tasks", "ls", "-q")
	if err != nil {
		fmt.Println("  ", err)
		return
	}
	tasks := strings.Fields(out)
	for _, t := range tasks {
		_ = n.ctr("tasks", "kill", "--signal", "SIGTERM", t)
	}
	// containerd's CRI plugin deletes the task of a container that exited
	// by itself: a task is gone once delete succeeds or it is not listed.
	deadline := time.Now().Add(containerGrace)
	for len(tasks) > 0 && time.Now().Before(deadline) {
		for _, t := range tasks {
			_ = n.ctr("tasks", "delete", t)
		}
		if out, err = n.ctrOutput("tasks", "ls", "-q"); err != nil {
			fmt.Println("  ", err)
			return
		}
		if tasks = strings.Fields(out); len(tasks) > 0 {
			time.Sleep(200 * time.Millisecond)
		}
	}
	if len(tasks) > 0 {
		fmt.Printf("   %d containers did not stop within %s: killed\n", len(tasks), containerGrace)
		for _, t := range tasks {
			_ = n.ctr("tasks", "kill", "--signal", "SIGKILL", t)
			if err := n.ctr("tasks", "delete", "--force", t); err != nil && !strings.Contains(err.Error(), "not found") {
				fmt.Println("  ", err)
			}
		}
	}
	if out, err = n.ctrOutput("containers", "ls", "-q"); err == nil {
		for _, c := range strings.Fields(out) {
			if err := n.ctr("containers", "delete", c); err != nil {
				fmt.Println("  ", err)
			}
		}
	}
}

// sweepNode undoes what a node left behind in dir, whether it stopped or
// was killed: it kills the processes started with dir in their command line
// (containerd's shims, a kubelet or containerd of a killed localcp) and the
// processes of the kubelet's cgroups, unmounts every mount under dir
// (deepest first) and removes the kubelet's cgroups (kubepods). Errors name
// what is left.
//
// The kubelet's cgroups are swept only when stopping is true or when the
// node in dir left processes or mounts behind (a killed localcp): a node
// not started by localcp may own kubepods otherwise.
func sweepNode(dir string, stopping bool) error {
	killed := killProcsMentioning(dir)
	if killed > 0 {
		time.Sleep(200 * time.Millisecond)
	}
	var errs []error
	mounts, err := mountsUnder("/proc/self/mountinfo", dir)
	if err != nil {
		errs = append(errs, err)
	}
	if !stopping && killed == 0 && len(mounts) == 0 {
		return errors.Join(errs...)
	}
	killCgroupProcs("kubepods")
	for _, m := range mounts {
		if err := syscall.Unmount(m, 0); err != nil {
			if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
				errs = append(errs, fmt.Errorf("unmounting %s: %w", m, err))
			}
		}
	}
	if err := removeCgroups("kubepods"); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// mountsUnder returns the mount points in mountinfo (the format of
// /proc/PID/mountinfo: the fifth field is the mount point, octal-escaped)
// that lie under dir, deepest first.
func mountsUnder(mountinfo, dir string) ([]string, error) {
	f, err := os.Open(mountinfo)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	// Deeper mounts first; the same mount point twice (mounted over) is
	// unmounted twice.
	slices.SortStableFunc(out, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return out, sc.Err()
}

// unescapeMount decodes the octal escapes (\040 for a space) of a
// mountinfo path.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// killProcsMentioning sends SIGKILL to every process whose command line
// contains s (but this one) and returns how many.
func killProcsMentioning(s string) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(strings.ReplaceAll(string(raw), "\x00", " "), s) {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// cgroupRoots returns the cgroup hierarchies' mount points under
// /sys/fs/cgroup: each v1 controller's directory, or /sys/fs/cgroup itself
// on a v2-only machine.
func cgroupRoots() []string {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return []string{"/sys/fs/cgroup"}
	}
	entries, _ := os.ReadDir("/sys/fs/cgroup")
	var roots []string
	for _, e := range entries {
		if e.IsDir() {
			roots = append(roots, filepath.Join("/sys/fs/cgroup", e.Name()))
		}
	}
	return roots
}

// killCgroupProcs sends SIGKILL to the processes in the cgroup trees
// named name below each hierarchy's root.
func killCgroupProcs(name string) {
	for _, root := range cgroupRoots() {
		_ = filepath.WalkDir(filepath.Join(root, name), func(path string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			raw, err := os.ReadFile(filepath.Join(path, "cgroup.procs"))
			if err != nil {
				return nil
			}
			for _, f := range strings.Fields(string(raw)) {
				if pid, err := strconv.Atoi(f); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			return nil
		})
	}
}

// removeCgroups removes the cgroup trees named name below each hierarchy's
// root, deepest first (a cgroup directory is removed with rmdir once it has
// no children and no processes); it retries for up to 2 s while killed
// processes exit.
func removeCgroups(name string) error {
	deadline := time.Now().Add(2 * time.Second)
	for {
		var left []string
		for _, root := range cgroupRoots() {
			top := filepath.Join(root, name)
			var dirs []string
			_ = filepath.WalkDir(top, func(path string, d os.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs = append(dirs, path)
				}
				return nil
			})
			for i := len(dirs) - 1; i >= 0; i-- {
				if err := syscall.Rmdir(dirs[i]); err != nil && !errors.Is(err, syscall.ENOENT) {
					left = append(left, dirs[i])
				}
			}
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroups left: %s", strings.Join(left, " "))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// addLoopbackIP adds ip/32 to the loopback interface (ip(8)); an address
// already there is kept.
func addLoopbackIP(ip string) error {
	out, err := exec.Command("ip", "addr", "replace", ip+"/32", "dev", "lo").CombinedOutput()
	if err != nil {
		return fmt.Errorf("adding the node's address %s to lo: %w: %s", ip, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// removeLoopbackIP removes ip/32 from the loopback interface.
func removeLoopbackIP(ip string) error {
	out, err := exec.Command("ip", "addr", "del", ip+"/32", "dev", "lo").CombinedOutput()
	if err != nil {
		return fmt.Errorf("removing the node's address %s from lo: %w: %s", ip, err, strings.TrimSpace(string(out)))
	}
	return nil
}
