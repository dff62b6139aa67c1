// Command localcp runs nacflow's local stack for `make run` and the
// end-to-end tests: a real kube-apiserver and etcd (built into bin/ from the
// Go module proxy) started through controller-runtime's envtest package, and
// kube-controller-manager next to them (package kcm: namespace deletion,
// RBAC aggregation, garbage collection, service accounts), with
// nacflow's and Velero's CRDs, the OADP namespace and a demo tenant
// namespace; then an S3-compatible object store with the buckets "velero"
// (the default location's) and "tenants" (--tenant-bucket, for tenants' own
// locations), and a real Velero server with the default
// BackupStorageLocation. It writes an admin kubeconfig, runs the command
// after "--" (the controller) in the foreground with KUBECONFIG set — with
// --endpoint-allow-hosts=<the store's 127.0.0.1:PORT> appended (unless
// --allow-store-endpoint=false), since nac refuses tenant endpoints on
// loopback and the store is the one loopback address tenants may use — and
// stops everything, in reverse order, when that command exits or on Ctrl-C.
// Logs of kube-controller-manager, the store and Velero go to
// DIR/kube-controller-manager.log, DIR/s3.log and DIR/velero.log, the
// controller's to the terminal and DIR/nac.log; the store keeps its data in
// DIR/s3.db across runs.
//
// With --node (docs/local-node.md) it also runs a node after
// kube-controller-manager: containerd under DIR/node, a kubelet and
// kube-scheduler, so that Pods run; the controller command may then be left
// out, and the stack runs until Ctrl-C (make run-node, for make
// deploy-local).
//
// With --monitoring (make run MONITORING=1) it also runs a Prometheus server
// (ASSETS/prometheus) before the controller, scraping the controller's
// metrics with a token of ServiceAccount metrics-scraper (renewed while it
// runs) and evaluating nacflow's alert rules (internal/localstack/promstack
// writes its configuration, as for test/e2emonitoring); its URL is in the
// ready message, its TSDB in DIR/prometheus, its log DIR/prometheus.log.
//
// Stopping: SIGINT (Ctrl-C) or SIGTERM at any moment stops the controller,
// Prometheus, Velero, the store, the node and the control plane, in that
// order, within 15 s, 23 s with a node, 2 s more with --monitoring (each
// gets SIGTERM, then SIGKILL after its grace). During startup localcp then
// exits with status 1 and "interrupted"; once the controller runs, with 0. A
// second signal exits at once. On Linux every child, kube-apiserver, etcd
// and Velero's plugins included, also dies when localcp is killed with
// SIGKILL (parent-death signal; see sys_linux.go).
//
// Failing early: before anything starts, and again right before Velero and
// the controller start, localcp checks that the fixed ports of the
// controller's --metrics-bind-address and --health-probe-bind-address are
// free; a taken one is reported with the pid and command line holding it.
// Everything else listens on free ports of loopback (bin/velero serves no
// controller-runtime metrics: hack/velero), so stacks run side by side. When the default location is not Available
// 60 s after Velero's start, localcp exits with Velero's reason and the fix
// (`make clean-local` when the store holds data Velero refuses).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vmware-tanzu/velero/config/crd/v1/crds"
	v2alpha1crds "github.com/vmware-tanzu/velero/config/crd/v2alpha1/crds"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/nacflow/nacflow/internal/localstack/childproc"
	"github.com/nacflow/nacflow/internal/localstack/kcm"
)

// Stop graces: how long each process may take to exit after SIGTERM before
// it gets SIGKILL. They add up to 14 s (the control plane's grace counts
// twice: kube-apiserver, then etcd), so that a stop at any moment ends
// within 15 s.
const (
	controllerGrace   = 4 * time.Second
	veleroGrace       = 2 * time.Second
	storeGrace        = 1 * time.Second
	kcmGrace          = 1 * time.Second // kube-controller-manager keeps nothing: it exits at once on SIGTERM
	controlPlaneGrace = 3 * time.Second // envtest's StopTimeout, each of kube-apiserver and etcd
)

// startAbandon is how long an interrupted control plane start may take to
// give up after localcp killed its processes (envtest polls the API server
// for its CRDs for up to 10 s and cannot be cancelled).
const startAbandon = 10 * time.Second

// options are localcp's flags and the controller command.
type options struct {
	assets, dir, crdDir string
	plugins             string // extra Velero plugins' directory (--plugins)
	tenantRoles         string
	admissionPolicies   string
	requesterWebhook    string // --requester-webhook
	requesterURL        string // --requester-webhook-url
	requesterName       string // --requester-webhook-name
	metricsRole         string
	oadpNS, tenantNS    string
	withVelero          bool
	tenantBucket        string
	veleroSync          time.Duration // Velero's --backup-sync-period
	veleroValidation    time.Duration // Velero's --store-validation-frequency
	veleroConcurrent    int           // Velero's --concurrent-backups
	allowStore          bool          // add the store's address to the controller's --endpoint-allow-hosts
	node                string        // --node: auto, true or false
	nodeIP              string        // --node-ip
	monitoring          bool          // --monitoring: run Prometheus too
	monitoringRules     string        // --monitoring-rules
	monitoringAddr      string        // --monitoring-address
	monitoringInterval  time.Duration // --monitoring-interval
	command             []string      // the controller and its arguments
}

func main() {
	runWrapperIfCalledSo()
	var o options
	flag.StringVar(&o.assets, "assets", "bin", "Directory holding kube-apiserver, etcd, gofakes3, velero and plugins/.")
	flag.StringVar(&o.plugins, "plugins", "", "Extra directory of Velero plugin binaries, given to Velero with those of ASSETS/plugins (a plugin of the same name here wins): e.g. a freshly built velero-plugin-nacflow.")
	flag.StringVar(&o.dir, "dir", ".local", "Directory of the stack's state: kubeconfig, logs, the object store's s3.db.")
	flag.StringVar(&o.crdDir, "crds", "config/crd/bases", "Directory of nacflow's CRD YAML.")
	flag.StringVar(&o.tenantRoles, "tenant-roles", "config/rbac/tenant_roles.yaml", "nacflow's ClusterRoles aggregated into admin, edit and view (installed as make deploy does; empty: none).")
	flag.StringVar(&o.admissionPolicies, "admission-policies", "config/admission/pod_volume_backups.yaml", "nacflow's ValidatingAdmissionPolicies with their bindings (installed as make deploy does; empty: none). The default keeps the PodVolumeBackups Velero syncs from a tenant's bucket to that tenant's Pods; the status policy of config/admission is left out, everyone here being the admin.")
	flag.StringVar(&o.requesterWebhook, "requester-webhook", "", "nacflow's requester MutatingWebhookConfiguration (config/webhook/mutating_webhook_configuration.yaml), installed calling --requester-webhook-url instead of its Service (empty: none; NonAdminRestores then record no requester). make run passes it; the controller injects its CA.")
	flag.StringVar(&o.requesterName, "requester-webhook-name", "nacflow-requester-local", "Name of the configuration --requester-webhook installs: not that of make deploy's (nacflow-requester, calling its Service), so that deploying onto this stack keeps both apart; give the controller --webhook-configuration with it.")
	flag.StringVar(&o.requesterURL, "requester-webhook-url", "https://localhost:9443/mutate-nacflow-requester", "Where the API server calls the requester webhook (the controller's --webhook-port on this host).")
	flag.StringVar(&o.metricsRole, "metrics-reader-role", "config/rbac/metrics_reader_role.yaml", "The ClusterRole that may scrape the controller's /metrics, installed and bound to ServiceAccount "+scraperSA+" of the OADP namespace (empty: none).")
	flag.StringVar(&o.oadpNS, "oadp-namespace", "openshift-adp", "OADP namespace to create.")
	flag.StringVar(&o.tenantNS, "tenant-namespace", "demo", "Demo tenant namespace to create.")
	flag.BoolVar(&o.withVelero, "velero", true, "Start the object store and the Velero server (assets gofakes3, velero, plugins/).")
	flag.StringVar(&o.tenantBucket, "tenant-bucket", "tenants", "Second bucket of the object store, for tenants' own storage locations.")
	flag.DurationVar(&o.veleroSync, "velero-backup-sync-period", time.Minute, "The Velero server's --backup-sync-period.")
	flag.DurationVar(&o.veleroValidation, "velero-store-validation-frequency", time.Minute, "The Velero server's --store-validation-frequency: how often it revalidates storage locations.")
	flag.IntVar(&o.veleroConcurrent, "velero-concurrent-backups", 1, "The Velero server's --concurrent-backups: how many backups it runs at once (Velero's default, 1, queues the rest; on Velero 1.18 a queued backup may then wait up to a minute after the one before it ends).")
	flag.BoolVar(&o.allowStore, "allow-store-endpoint", true, "Append --endpoint-allow-hosts=<the object store's host:port> to the controller's arguments, so that tenants' locations may use the store on loopback (nac refuses loopback endpoints by default).")
	flag.StringVar(&o.node, "node", "false", "Run a node (containerd, kubelet, kube-scheduler; docs/local-node.md) so that Pods run: true, false, or auto (where the machine can: Linux, root, containerd, runc and the CNI plugins installed, no other kubelet running; else one line says why not). make run passes auto.")
	flag.BoolVar(&o.monitoring, "monitoring", false, "Also run a Prometheus server (ASSETS/prometheus: make bin/prometheus) that scrapes the controller's metrics as job nacflow, with a token of ServiceAccount "+scraperSA+" over HTTPS unless the controller is given --metrics-secure=false, and evaluates the alert rules of --monitoring-rules; its URL is printed (HTTP API only: the server is built without its web UI). make run MONITORING=1 passes it.")
	flag.StringVar(&o.monitoringRules, "monitoring-rules", "config/monitoring/rules/nacflow.rules.yaml", "The alert rules file --monitoring loads.")
	flag.StringVar(&o.monitoringAddr, "monitoring-address", "127.0.0.1:9090", "Where --monitoring's Prometheus listens (port 0: a free one); a fixed port is checked before anything starts.")
	flag.DurationVar(&o.monitoringInterval, "monitoring-interval", 5*time.Second, "--monitoring's scrape and rule evaluation interval.")
	flag.StringVar(&o.nodeIP, "node-ip", defaultNodeIP, "The node's address, added to lo while the node runs (not in 127.0.0.0/8: EndpointSlices refuse loopback addresses).")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: localcp [flags] -- CONTROLLER [ARGS...]\n\nFlags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	o.command = flag.Args()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "localcp:", err)
		os.Exit(1)
	}
}

// interrupted is the cause of run's context once SIGINT or SIGTERM arrived.
type interrupted struct {
	sig os.Signal
	at  time.Time
}

func (i interrupted) Error() string { return "interrupted by " + signalName(i.sig) }

// signalName returns "SIGINT" or "SIGTERM" (os.Signal's String says
// "interrupt", "terminated").
func signalName(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// notifyContext returns a context cancelled, with an interrupted cause, by
// the first SIGINT or SIGTERM. A second one makes localcp exit at once with
// status 130 (on Linux the children die with it). release stops the
// handling.
func notifyContext() (ctx context.Context, release func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig, ok := <-sigs
		if !ok {
			return
		}
		fmt.Printf("\n>> %s: stopping everything localcp started (a second Ctrl-C kills it all at once)\n", signalName(sig))
		cancel(interrupted{sig: sig, at: time.Now()})
		if sig, ok = <-sigs; ok {
			fmt.Printf("\n>> %s again: exiting now\n", signalName(sig))
			os.Exit(130)
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(sigs)
		cancel(nil)
	}
}

// run starts the stack of o, runs the controller in the foreground and
// stops everything it started before returning. It returns nil when the
// controller exited 0 or was stopped by a signal; an interrupted error
// naming the step when a signal came during startup; otherwise the first
// error (a port in use, a start that failed, the default location not
// Available, the controller's exit).
func run(o options) (err error) {
	if len(o.command) == 0 && o.node == "false" {
		return errors.New("no controller command given after -- (only a stack with a node, where `make deploy-local` runs the controller, may go without)")
	}
	switch o.node {
	case "auto", "true", "false":
	default:
		return fmt.Errorf("--node=%s: want auto, true or false", o.node)
	}
	ctx, release := notifyContext()
	defer release()
	step := "checking ports"
	defer func() {
		cause, ok := context.Cause(ctx).(interrupted)
		if !ok {
			return
		}
		fmt.Printf(">> stopped %.1fs after %s\n", time.Since(cause.at).Seconds(), signalName(cause.sig))
		if err != nil {
			err = fmt.Errorf("%w while %s (everything it started is stopped)", cause, step)
		}
	}()

	var controllerArgs []string
	if len(o.command) > 0 {
		controllerArgs = o.command[1:]
	}
	controllerPorts := controllerAddrs(controllerArgs)
	if err := checkFree(controllerPorts...); err != nil {
		return err
	}

	// --assets is the one place the binaries come from: envtest would prefer
	// these variables, and an existing cluster.
	for _, v := range []string{"KUBEBUILDER_ASSETS", "TEST_ASSET_KUBE_APISERVER", "TEST_ASSET_ETCD", "USE_EXISTING_CLUSTER"} {
		_ = os.Unsetenv(v)
	}
	assets, err := filepath.Abs(o.assets)
	if err != nil {
		return err
	}
	var mon *monitoring
	if o.monitoring {
		if mon, err = planMonitoring(o, controllerArgs, assets); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return err
	}
	extraPlugins := ""
	if o.plugins != "" {
		if extraPlugins, err = filepath.Abs(o.plugins); err != nil {
			return err
		}
	}
	binDir, pluginDir, err := setUpWrappers(o.dir, assets, extraPlugins)
	if err != nil {
		return err
	}
	useExisting := false
	env := &envtest.Environment{
		BinaryAssetsDirectory: binDir,
		CRDDirectoryPaths:     []string{o.crdDir},
		CRDs:                  append(append(crds.CRDs[:0:0], crds.CRDs...), v2alpha1crds.CRDs...),
		ErrorIfCRDPathMissing: true,
		UseExistingCluster:    &useExisting,
		// Set here rather than from envtest's environment variables: a bad
		// value there would fail env.Start before etcd is set up, and
		// env.Stop would then panic. Per try (envtest tries up to five
		// times, each from scratch): envtest's default, 20 s, is less than
		// kube-apiserver takes on two busy cores (make test runs seven
		// stacks side by side), and a try cut short never succeeds.
		ControlPlaneStartTimeout: time.Minute,
		ControlPlaneStopTimeout:  controlPlaneGrace,
	}
	var nodeCfg *nodeConfig
	if o.node != "false" {
		if why := nodeSupport(assets); why != "" {
			if o.node == "true" {
				return errors.New(why)
			}
			fmt.Println(">> no node (Pods will not run):", why)
		} else if nodeCfg, err = prepareNode(env, filepath.Join(o.dir, "node"), assets, o.nodeIP); err != nil {
			return err
		}
	}
	if len(o.command) == 0 && nodeCfg == nil {
		return errors.New("no controller command given after --, and no node to deploy it on")
	}

	step = "starting the control plane"
	fmt.Println(">> starting kube-apiserver and etcd from", assets)
	cfg, err := startControlPlane(ctx, env)
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println(">> stopping the control plane")
		if err := env.Stop(); err != nil {
			fmt.Println("  ", err)
		}
	}()

	step = "writing the kubeconfig"
	admin, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, cfg)
	if err != nil {
		return fmt.Errorf("creating the admin user: %w", err)
	}
	kubeconfig, err := admin.KubeConfig()
	if err != nil {
		return fmt.Errorf("rendering the kubeconfig: %w", err)
	}
	kcPath, err := filepath.Abs(filepath.Join(o.dir, "kubeconfig"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(kcPath, kubeconfig, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", kcPath, err)
	}

	step = "starting kube-controller-manager"
	fmt.Println(">> starting kube-controller-manager (namespace deletion, RBAC aggregation, garbage collection, service accounts)")
	kcmArgs, kcmAddr, err := kcm.Args(env, o.dir)
	if err != nil {
		return err
	}
	controllerManager, err := startProc("kube-controller-manager", filepath.Join(o.dir, "kube-controller-manager.log"), nil,
		filepath.Join(binDir, kcm.Binary), kcmArgs...)
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println(">> stopping kube-controller-manager")
		controllerManager.stop(kcmGrace)
	}()
	if err := kcm.Healthy(ctx, kcmAddr, time.Minute, controllerManager.Exited); err != nil {
		return fmt.Errorf("%w (log: %s)", err, displayPath(filepath.Join(o.dir, "kube-controller-manager.log")))
	}

	nodeLine := "none (--node=false or the machine cannot run one)"
	if nodeCfg != nil {
		step = "starting the node"
		fmt.Println(">> starting the node: containerd, kubelet, kube-scheduler")
		start := time.Now()
		n, err := startNode(ctx, env, cfg, nodeCfg)
		if err != nil {
			return err
		}
		defer n.stop()
		nodeLine = fmt.Sprintf("%s (%s) Ready in %.1fs; containerd socket %s; logs %s", nodeName, nodeCfg.nodeIP, time.Since(start).Seconds(), n.socket,
			strings.Join([]string{filepath.Join(o.dir, "containerd.log"), filepath.Join(o.dir, "kubelet.log"), filepath.Join(o.dir, "kube-scheduler.log")}, ", "))
	}

	step = "creating the namespaces"
	if err := createNamespaces(ctx, cfg, o.oadpNS, o.tenantNS); err != nil {
		return err
	}
	if o.tenantRoles != "" {
		step = "installing the tenant roles"
		if err := installClusterRoles(ctx, cfg, o.tenantRoles); err != nil {
			return err
		}
	}

	if o.admissionPolicies != "" {
		step = "installing the admission policies"
		if err := installAdmissionPolicies(ctx, cfg, o.admissionPolicies); err != nil {
			return err
		}
	}

	if o.requesterWebhook != "" {
		step = "installing the requester webhook"
		if err := installRequesterWebhook(ctx, cfg, o.requesterWebhook, o.requesterName, o.requesterURL); err != nil {
			return err
		}
	}

	if o.metricsRole != "" {
		step = "installing the metrics reader role"
		if err := installClusterRoles(ctx, cfg, o.metricsRole); err != nil {
			return err
		}
		if err := bindScraper(ctx, cfg, o.oadpNS, metricsReaderRole); err != nil {
			return err
		}
	}

	velero := "not started (--velero=false)"
	if o.withVelero {
		step = "starting the object store and Velero, and waiting for the default BackupStorageLocation"
		fmt.Println(">> starting the object store and the Velero server")
		stack, err := startVelero(ctx, cfg, veleroConfig{
			kubeconfig: kcPath, assets: assets, binDir: binDir, pluginDir: pluginDir, dir: o.dir, oadpNS: o.oadpNS,
			tenantBucket: o.tenantBucket, syncPeriod: o.veleroSync, validation: o.veleroValidation, concurrent: o.veleroConcurrent,
		})
		if err != nil {
			return err
		}
		defer stack.stop()
		velero = fmt.Sprintf(`running, BackupStorageLocation default Available
   object store:      %s, buckets %s (default location) and %s (for tenants' own locations)
   logs:              %s, %s`,
			stack.s3URL, bucket, o.tenantBucket, filepath.Join(o.dir, "velero.log"), filepath.Join(o.dir, "s3.log"))
		if o.allowStore && len(o.command) > 0 {
			arg, err := storeAllowance(stack.s3URL)
			if err != nil {
				return err
			}
			o.command = append(o.command, arg)
			velero += fmt.Sprintf(`
   tenant endpoints:  the controller refuses loopback endpoints; localcp allows exactly this store (%s)`, arg)
		}
	}

	monitoringLines := ""
	if mon != nil {
		step = "starting Prometheus"
		fmt.Println(">> starting Prometheus (--monitoring): the controller's metrics and nacflow's alert rules")
		srv, lines, err := startMonitoring(ctx, cfg, mon, o.oadpNS)
		if err != nil {
			return err
		}
		defer func() {
			fmt.Println(">> stopping Prometheus")
			if srv.Stop(prometheusGrace) {
				fmt.Printf("   prometheus did not stop within %s: killed\n", prometheusGrace)
			}
		}()
		monitoringLines = lines
	}

	step = "starting the controller"
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err := checkFree(controllerPorts...); err != nil {
		return err
	}
	fmt.Printf(`>> local control plane ready at %s
   kubeconfig:        %s
   OADP namespace:    %s
   tenant namespace:  %s
   Velero:            %s
   node:              %s
%s   all logs:          %s

   In another terminal:
     export KUBECONFIG=%s
     kubectl apply -f examples/nonadminbackup.yaml
     kubectl get nab -n %s
     kubectl describe nab -n %s sample
     kubectl get backups.velero.io -n %s
%s`, cfg.Host, kcPath, o.oadpNS, o.tenantNS, velero, nodeLine, monitoringLines, logList(o.dir, len(o.command) > 0), kcPath, o.tenantNS, o.tenantNS, o.oadpNS, scrapeHint(controllerArgs, o.oadpNS, o.metricsRole != ""))
	if len(o.command) == 0 {
		fmt.Println(">> no controller command: the stack runs until Ctrl-C (`make deploy-local` runs the controller on the node)")
		<-ctx.Done()
		return nil
	}
	fmt.Println(">> running the controller (Ctrl-C stops it, Velero, the object store and the control plane)")
	return runController(ctx, o.command, kcPath, filepath.Join(o.dir, "nac.log"))
}

// logList names every log the stack writes in dir, comma-separated: those
// its processes have opened by now (kube-controller-manager, Velero, the
// store, the node's), and nac.log, the controller's output, when there is
// a controller.
func logList(dir string, controller bool) string {
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if controller {
		logs = append(logs, filepath.Join(dir, "nac.log"))
	}
	slices.Sort(logs)
	logs = slices.Compact(logs)
	for i, l := range logs {
		logs[i] = displayPath(l)
	}
	return strings.Join(logs, ", ")
}

// storeAllowance returns the controller flag that allows tenants' locations
// to use the object store at storeURL, and only it: its host and port
// (--endpoint-allow-hosts=127.0.0.1:PORT), not all of loopback, where the
// controller's own probe and metrics ports listen.
func storeAllowance(storeURL string) (string, error) {
	u, err := url.Parse(storeURL)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("the object store's URL %q has no host: %v", storeURL, err)
	}
	return "--endpoint-allow-hosts=" + u.Host, nil
}

// startControlPlane starts env's kube-apiserver and etcd and installs the
// CRDs (env.Start, which takes no context) and returns the admin
// rest.Config; when env.Start fails it stops what env.Start left running.
// When ctx ends first, it kills both with SIGKILL (a half-started control
// plane holds nothing to save: etcd's data is a temporary directory), makes
// envtest's retries fail at once (refuseStarts), waits up to startAbandon
// for env.Start to give up, cleans up after it (env.Stop) and returns ctx's
// cause.
func startControlPlane(ctx context.Context, env *envtest.Environment) (*rest.Config, error) {
	type result struct {
		cfg *rest.Config
		err error
	}
	done := make(chan result, 1)
	go func() {
		cfg, err := env.Start()
		done <- result{cfg, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			_ = env.Stop()
			return nil, fmt.Errorf("starting the control plane: %w", r.err)
		}
		return r.cfg, nil
	case <-ctx.Done():
	}
	refuseStarts()
	fmt.Printf(">> stopping the control plane (SIGKILL to the %d processes started so far)\n", killChildren())
	select {
	case <-done:
		_ = env.Stop()
	case <-time.After(startAbandon):
		fmt.Printf("   envtest did not give up within %s; leaving its temporary directories\n", startAbandon)
	}
	return nil, context.Cause(ctx)
}

// installClusterRoles creates the ClusterRoles of the YAML file path
// (documents separated by "---"), or updates them when they exist: nacflow's
// tenant roles, which kube-controller-manager aggregates into the built-in
// admin, edit and view roles.
func installClusterRoles(ctx context.Context, cfg *rest.Config, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		role := &rbacv1.ClusterRole{}
		if err := yaml.UnmarshalStrict([]byte(doc), role); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		_, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			_, err = cs.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{})
		}
		if err != nil {
			return fmt.Errorf("installing ClusterRole %s from %s: %w", role.Name, path, err)
		}
	}
	return nil
}

// installAdmissionPolicies creates (or updates) every
// ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding of the
// YAML file path ("---"-separated documents of those two kinds only).
// Errors: an unreadable file, another kind, API errors.
func installAdmissionPolicies(ctx context.Context, cfg *rest.Config, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	api := cs.AdmissionregistrationV1()
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		switch meta.Kind {
		case "ValidatingAdmissionPolicy":
			p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
			if err := yaml.UnmarshalStrict([]byte(doc), p); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			err = createOrReplace(ctx, api.ValidatingAdmissionPolicies(), p)
		case "ValidatingAdmissionPolicyBinding":
			b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
			if err := yaml.UnmarshalStrict([]byte(doc), b); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			err = createOrReplace(ctx, api.ValidatingAdmissionPolicyBindings(), b)
		default:
			return fmt.Errorf("%s: a %q document; only ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding are installed", path, meta.Kind)
		}
		if err != nil {
			return fmt.Errorf("installing %s from %s: %w", meta.Kind, path, err)
		}
	}
	return nil
}

// objectAPI is the part of a typed client-go client createOrReplace uses.
type objectAPI[T metav1.Object] interface {
	Create(context.Context, T, metav1.CreateOptions) (T, error)
	Get(context.Context, string, metav1.GetOptions) (T, error)
	Update(context.Context, T, metav1.UpdateOptions) (T, error)
}

// createOrReplace creates obj through api or, when an object of its name
// exists, replaces that one with obj (at the existing resourceVersion).
// Errors: the API server's.
func createOrReplace[T metav1.Object](ctx context.Context, api objectAPI[T], obj T) error {
	_, err := api.Create(ctx, obj, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	cur, err := api.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	obj.SetResourceVersion(cur.GetResourceVersion())
	_, err = api.Update(ctx, obj, metav1.UpdateOptions{})
	return err
}

// installRequesterWebhook creates (or updates) the MutatingWebhookConfiguration
// of the YAML file path, named name, with every webhook calling url instead
// of a Service (nothing routes Services to this host). An existing caBundle is
// kept: the controller injected it, and a make run after a Ctrl-C finds it
// still valid. Errors: an unreadable file, another kind, API errors.
func installRequesterWebhook(ctx context.Context, cfg *rest.Config, path, name, url string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	w := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := yaml.UnmarshalStrict(data, w); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if w.Kind != "MutatingWebhookConfiguration" {
		return fmt.Errorf("%s: a %q document, not a MutatingWebhookConfiguration", path, w.Kind)
	}
	w.Name = name
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	api := cs.AdmissionregistrationV1().MutatingWebhookConfigurations()
	cur, err := api.Get(ctx, w.Name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	for i := range w.Webhooks {
		w.Webhooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url}
		if cur != nil && i < len(cur.Webhooks) {
			w.Webhooks[i].ClientConfig.CABundle = cur.Webhooks[i].ClientConfig.CABundle
		}
	}
	if apierrors.IsNotFound(err) {
		_, err = api.Create(ctx, w, metav1.CreateOptions{})
	} else {
		w.ResourceVersion = cur.ResourceVersion
		_, err = api.Update(ctx, w, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("installing MutatingWebhookConfiguration %s from %s: %w", w.Name, path, err)
	}
	return nil
}

// The metrics scraper of the local stack: a ServiceAccount of the OADP
// namespace bound to the metrics reader ClusterRole, whose tokens
// (`kubectl create token`) the controller's HTTPS metrics endpoint accepts.
const (
	scraperSA         = "metrics-scraper"
	metricsReaderRole = "nacflow-metrics-reader"
)

// bindScraper creates ServiceAccount scraperSA in ns and a
// ClusterRoleBinding of it to role (both kept when they exist).
func bindScraper(ctx context.Context, cfg *rest.Config, ns, role string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: scraperSA}}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ServiceAccount %s/%s: %w", ns, scraperSA, err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role + "-" + scraperSA},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: scraperSA}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("binding ClusterRole %s to %s/%s: %w", role, ns, scraperSA, err)
	}
	return nil
}

// scrapeHint returns the lines of the ready message that tell how to
// scrape the controller's metrics, from its arguments: its
// --metrics-bind-address (nac's default :8090 when not given; "0": off)
// and --metrics-secure (HTTPS with a token unless given false). bound says
// whether the scraper ServiceAccount was set up.
func scrapeHint(args []string, ns string, bound bool) string {
	target, ok := metricsTarget(args)
	if !ok {
		return ""
	}
	url := "://" + target + "/metrics"
	if !metricsSecure(args) {
		return "     curl -s http" + url + "      # the controller's metrics (plain HTTP: --metrics-secure=false)\n"
	}
	if !bound {
		return "     # the controller's metrics: https" + url + ", with a bearer token of a user bound to ClusterRole " + metricsReaderRole + "\n"
	}
	return fmt.Sprintf("     curl -sk -H \"Authorization: Bearer $(kubectl create token %s -n %s)\" https%s   # the controller's metrics\n", scraperSA, ns, url)
}

// metricsTarget returns where the controller's metrics are served, as
// host:port to scrape, from its arguments: its --metrics-bind-address (nac's
// default :8090 when not given), a wildcard or empty host made 127.0.0.1.
// ok is false when metrics are off ("0", "") or the address is not
// host:port.
func metricsTarget(args []string) (target string, ok bool) {
	addr, given := flagValue(args, "metrics-bind-address")
	if !given {
		addr = ":8090"
	}
	if addr == "0" || addr == "" {
		return "", false
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", false
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), true
}

// metricsSecure reports whether the controller's arguments leave
// --metrics-secure at its default, true (a boolean flag is given false
// only as --metrics-secure=false).
func metricsSecure(args []string) bool {
	secure := true
	for _, a := range args {
		if a == "--" {
			break
		}
		n, v, ok := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if n != "metrics-secure" || !strings.HasPrefix(a, "-") {
			continue
		}
		secure = true
		if ok {
			if b, err := strconv.ParseBool(v); err == nil {
				secure = b
			}
		}
	}
	return secure
}

// createNamespaces creates the namespaces, giving up after 30s or when ctx
// ends.
func createNamespaces(ctx context.Context, cfg *rest.Config, names ...string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, ns := range names {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating namespace %s: %w", ns, err)
		}
	}
	return nil
}

// runController runs command with KUBECONFIG=kubeconfig, its output to the
// terminal and to logPath, in its own process group (childproc.SysProcAttr) until it
// exits or ctx ends; then it gets SIGTERM and, after controllerGrace,
// SIGKILL. It returns nil when the controller exited 0 or ctx ended, else
// the controller's exit error.
func runController(ctx context.Context, command []string, kubeconfig, logPath string) error {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stdout, cmd.Stderr = io.MultiWriter(os.Stdout, log), io.MultiWriter(os.Stderr, log)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.SysProcAttr = childproc.SysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", command[0], err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("controller exited: %w", err)
		}
		return nil
	case <-ctx.Done():
	}
	fmt.Println(">> stopping the controller")
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(controllerGrace):
		fmt.Printf("   the controller did not stop within %s: killed\n", controllerGrace)
		_ = cmd.Process.Kill()
		<-done
	}
	return nil
}
