// Command nac is the nacflow manager: it runs the NAC controllers that let
// namespace owners back up and restore their own namespace with Velero.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/blueprints"
	"github.com/nacflow/nacflow/controllers"
	"github.com/nacflow/nacflow/dpa"
	"github.com/nacflow/nacflow/engine"
	nacmetrics "github.com/nacflow/nacflow/internal/metrics"
	"github.com/nacflow/nacflow/internal/policy/endpoint"
	"github.com/nacflow/nacflow/internal/policy/requester"
	"github.com/nacflow/nacflow/internal/policy/restorepolicy"
	"github.com/nacflow/nacflow/internal/runtime/capabilities"
	"github.com/nacflow/nacflow/internal/runtime/events"
	"github.com/nacflow/nacflow/internal/runtime/gctune"
	"github.com/nacflow/nacflow/internal/runtime/orphangc"
	"github.com/nacflow/nacflow/internal/runtime/pagedlist"
	"github.com/nacflow/nacflow/internal/runtime/periodic"
	"github.com/nacflow/nacflow/internal/runtime/planstore"
	"github.com/nacflow/nacflow/internal/runtime/restmapper"
	"github.com/nacflow/nacflow/internal/runtime/version"
	"github.com/nacflow/nacflow/internal/runtime/webhooks"
	"github.com/nacflow/nacflow/internal/velero/backupsync"
	"github.com/nacflow/nacflow/internal/velero/oadpenv"
	"github.com/nacflow/nacflow/internal/velero/tenantlocations"
	"github.com/nacflow/nacflow/internal/velero/veleroqueue"
	"github.com/nacflow/nacflow/phases"
)

// offlineTools are the subcommands of nac, aliases of kubectl nac's; any
// other first argument runs the manager.
var offlineTools = map[string]bool{"blueprint": true, "plan": true, "funcs": true}

// runKubectlNAC replaces the process with kubectl-nac and args (nac's
// offline tools are kubectl nac's commands). kubectl-nac is looked for next
// to nac first (make build puts both in bin/), then on $PATH. The manager
// does not link the command line: cli-runtime brings kustomize and Go's
// plugin package, which would make nac far larger and keep more of it
// resident (docs/performance.md). It returns only when
// kubectl-nac cannot be run, with why.
func runKubectlNAC(args []string) error {
	path := ""
	if self, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(self), "kubectl-nac"); isExecutable(p) {
			path = p
		}
	}
	if path == "" {
		p, err := exec.LookPath("kubectl-nac")
		if err != nil {
			return fmt.Errorf("nac %s is kubectl nac's command, and kubectl-nac is neither next to nac nor on $PATH (make build puts it in bin/)", args[0])
		}
		path = p
	}
	return syscall.Exec(path, append([]string{"kubectl-nac"}, args...), os.Environ())
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// namespaceEnvVar is OADP NAC's fallback for the OADP namespace (the OADP
// operator sets it on the non-admin controller it deploys).
const namespaceEnvVar = oadpenv.NamespaceVar

type options struct {
	version       bool
	listPageSize  int64
	oadpNamespace string
	waitTimeout   time.Duration
	metricsAddr   string
	metricsSecure bool
	metricsCerts  string
	probeAddr     string
	leaderElect   bool
	queueWindow   time.Duration
	bslApproval   bool

	// leaseDuration, renewDeadline and retryPeriod are the
	// --leader-elect-* timings.
	leaseDuration, renewDeadline, retryPeriod time.Duration

	// downloadsOnTenantLocations is --require-tenant-location-for-downloads.
	downloadsOnTenantLocations bool
	credCheck                  time.Duration
	minRetry                   time.Duration
	maxRetry                   time.Duration
	syncPeriod                 time.Duration
	gcPeriod                   time.Duration
	pprofAddr                  string
	qps                        float64
	burst                      int
	concurrency                int
	eventQPS                   float64
	eventBurst                 int
	eventQueue                 int
	maxInVelero                int
	maxRestores                int
	tenantRole                 string
	adminOwned                 string
	precheck                   bool
	usageRate                  float64
	usageBurst                 int
	// webhookPort, webhookHost, webhookCertDir, webhookService and
	// webhookConfiguration are the --webhook-* flags.
	webhookPort          int
	webhookHost          string
	webhookCertDir       string
	webhookService       string
	webhookConfiguration string
	// protectedNames and protectedSelector are --protected-namespaces and
	// --protected-namespace-selector.
	protectedNames    string
	protectedSelector string
	// notTenants are --non-tenant-users and --non-tenant-groups.
	notTenants phases.NotTenants
	// endpoints are the --endpoint-* flags; unchecked is
	// --unchecked-credential-providers.
	endpoints endpoint.Lists
	unchecked []string
	// given are the flags given on the command line: those yield nothing
	// to a DataProtectionApplication's settings.
	given map[string]bool
}

// givenFlags returns the names of the flags of fs given on the command line
// (fs parsed).
func givenFlags(fs *flag.FlagSet) map[string]bool {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	return given
}

// nonAdminFlags returns the settings of o a DataProtectionApplication may
// also set, nil where the flag was not given on the command line.
func (o options) nonAdminFlags() dpa.Flags {
	var f dpa.Flags
	if o.given["require-approval-for-bsl"] {
		f.RequireApprovalForBSL = &o.bslApproval
	}
	if o.given["backup-sync-period"] {
		f.BackupSyncPeriod = &o.syncPeriod
	}
	if o.given["garbage-collection-period"] {
		f.GarbageCollectionPeriod = &o.gcPeriod
	}
	return f
}

func main() {
	if len(os.Args) > 1 && offlineTools[os.Args[1]] {
		// nac blueprint|plan|funcs: aliases of kubectl nac's commands.
		err := runKubectlNAC(os.Args[1:])
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(2)
	}
	// A controller's heap is mostly short-lived reconcile garbage around a
	// live set that grows with the objects cached: GOGC is 50, and a soft
	// memory limit of what 150 MiB resident leaves beside the binary's own
	// pages (never less than 25 % above the live heap)
	// keeps a large controller small without collecting it all the time
	// (package gctune). $GOGC and $GOMEMLIMIT, when set, win.
	tuner := gctune.Tuner{}
	if os.Getenv("GOGC") != "" {
		tuner.Percent = gctune.Leave
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		tuner.Budget = gctune.Leave
	}
	go tuner.Run(context.Background())
	var o options
	zapOpts := registerFlags(flag.CommandLine, &o)
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), `Usage: nac [flags]                 run the controllers
       nac blueprint validate -f FILE  check blueprints offline (exit 1 when invalid)
       nac blueprint dump KIND         print a built-in blueprint to start customising from
       nac plan -f FILE [--builtin | --blueprint FILE]
                                       show the plan a NAC object would run, rendered, running nothing
       nac funcs                       the phase function reference (docs/functions.md)
(blueprint, plan and funcs are kubectl nac's commands: nac runs the kubectl-nac next to it, or on $PATH)

Runs the nacflow controllers (NonAdminBackup, NonAdminRestore, NonAdminBackupStorageLocation,
Blueprint, backup sync, garbage collection) against the cluster of --kubeconfig (or $KUBECONFIG,
or the in-cluster config).

Flags:
`)
		flag.PrintDefaults()
	}
	flag.Parse()
	if o.version {
		fmt.Println("nac", version.Get())
		return
	}
	o.given = givenFlags(flag.CommandLine)
	// The OADP operator runs its non-admin controller's image with no
	// arguments, its log settings in the environment: they apply where no
	// flag says otherwise.
	if err := oadpenv.ApplyLogging(zapOpts, o.given, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(2)
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(zapOpts)))
	ctrl.Log.Info("starting nac", "version", version.Get().Version, "revision", version.Get().Revision)

	if err := run(o); err != nil {
		ctrl.Log.Error(err, "nac stopped")
		os.Exit(1)
	}
}

// registerFlags registers the controller's flags, and controller-runtime's
// logging flags (--zap-encoder json|console, --zap-log-level, ...), on fs;
// docs/configuration.md documents each (a test holds it to that).
func registerFlags(fs *flag.FlagSet, o *options) *zap.Options {
	fs.BoolVar(&o.version, "version", false, "Print nac's version (release, commit, Go version, platform) and exit.")
	fs.StringVar(&o.oadpNamespace, "oadp-namespace", "",
		"Namespace where Velero runs and where nacflow creates Velero objects (the OADP namespace). Default: $"+namespaceEnvVar+".")
	fs.DurationVar(&o.waitTimeout, "wait-timeout", engine.DefaultWaitTimeout,
		"Default timeout of a blueprint wait phase that sets no timeout of its own (Go duration, e.g. 10m).")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8090",
		"Address the Prometheus metrics endpoint binds to; \"0\" disables it. Not 8080: Velero's own metrics bind :8080 wherever it runs.")
	fs.BoolVar(&o.metricsSecure, "metrics-secure", true,
		"Serve metrics over HTTPS to authenticated and authorized clients only: a bearer token the API server accepts (TokenReview) whose user may get the /metrics non-resource URL (SubjectAccessReview; ClusterRole nacflow-metrics-reader). false: plain HTTP to anyone, for local debugging only (metric labels name tenants' namespaces and objects).")
	fs.StringVar(&o.metricsCerts, "metrics-cert-dir", "",
		"Directory holding tls.crt and tls.key for the HTTPS metrics endpoint (reloaded when they change). Empty, or without those files: a self-signed certificate made at start.")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8091",
		"Address the /healthz and /readyz probes bind to.")
	fs.BoolVar(&o.leaderElect, "leader-elect", false,
		"Elect a leader (a Lease in the OADP namespace) so that only one replica reconciles.")
	fs.DurationVar(&o.leaseDuration, "leader-elect-lease-duration", defaultLeaseDuration,
		"With --leader-elect: how long the other replicas wait after the leader's last renewal before one takes the Lease over; a killed leader is replaced within it, plus a few --leader-elect-retry-period.")
	fs.DurationVar(&o.renewDeadline, "leader-elect-renew-deadline", defaultRenewDeadline,
		"With --leader-elect: how long the leader keeps trying to renew the Lease before it gives up leading (and exits); shorter than --leader-elect-lease-duration.")
	fs.DurationVar(&o.retryPeriod, "leader-elect-retry-period", defaultRetryPeriod,
		"With --leader-elect: how often the leader renews the Lease and the other replicas try to take it.")
	fs.DurationVar(&o.queueWindow, "queue-refresh-window", veleroqueue.DefaultRefreshWindow,
		"How long waiting NonAdminBackups' queue positions may lag a finished backup; all completions within it cost one status write per waiting NAB.")
	fs.BoolVar(&o.downloadsOnTenantLocations, "require-tenant-location-for-downloads", false,
		"OADP NAC's rule for NonAdminDownloadRequests: serve files only of backups kept on the namespace's own NonAdminBackupStorageLocation; one on the admin's location is refused (NonAdminBackupStorageLocationNotUsed=True). Off: a tenant reads the files of every backup of its own namespace.")
	fs.BoolVar(&o.bslApproval, "require-approval-for-bsl", false,
		"Tenants' NonAdminBackupStorageLocations wait for a cluster admin to approve their NonAdminBackupStorageLocationRequest in the OADP namespace; without it requests are approved automatically. Given, it wins over a DataProtectionApplication's spec.nonAdmin.requireApprovalForBSL.")
	fs.DurationVar(&o.syncPeriod, "backup-sync-period", backupsync.DefaultBackupSyncPeriod,
		"How often NonAdminBackups are recreated from finished Velero Backups whose NAB is missing (after a cluster rebuild); 0 disables. Not given, a DataProtectionApplication's spec.nonAdmin.backupSyncPeriod applies.")
	fs.DurationVar(&o.gcPeriod, "garbage-collection-period", orphangc.DefaultGarbageCollectionPeriod,
		"How often NAC-labelled objects in the OADP namespace whose NAC object is gone are deleted (Velero objects only, never backup data); 0 disables. Not given, a DataProtectionApplication's spec.nonAdmin.garbageCollectionPeriod applies.")
	fs.StringVar(&o.pprofAddr, "pprof-bind-address", "", "Address of the Go pprof endpoint (e.g. 127.0.0.1:6061); empty disables it.")
	fs.Float64Var(&o.qps, "kube-api-qps", 500,
		"Queries per second the controller may send to the API server. Each NonAdminBackup costs 3 writes, so client-go's default of 20 would cap nacflow near 7 NABs per second; the API server's priority and fairness still protects it from a flood.")
	fs.IntVar(&o.burst, "kube-api-burst", 1000, "Burst above --kube-api-qps.")
	fs.Int64Var(&o.listPageSize, "cache-list-page-size", pagedlist.DefaultPageSize,
		"Objects per page when the controller's cache lists a kind in full (at start, and when a watch must start over). Each page is shrunk to what the cache keeps as it arrives, so a start's memory stays near the settled controller's; pages are read from etcd, not the API server's watch cache. 0: one list of the whole kind from the watch cache (faster to ready, but held decoded in full: about twice the settled memory at 50,000 NABs).")
	fs.IntVar(&o.concurrency, "max-concurrent-reconciles", 32,
		"NAC objects reconciled at once, per kind (the same object is never reconciled twice at once). A reconcile mostly waits on the API server (3 round trips for a new NAB), so this is well above the core count.")
	fs.DurationVar(&o.minRetry, "min-retry-delay", controllers.DefaultMinRetryDelay,
		"Backoff after a NAC object's first failed reconcile (an API error, a phase error); it doubles with each failure in a row.")
	fs.DurationVar(&o.maxRetry, "max-retry-delay", controllers.DefaultMaxRetryDelay,
		"Longest backoff between failed reconciles of one NAC object: after an API server outage, operations resume within this.")
	fs.Float64Var(&o.eventQPS, "event-qps", events.DefaultQPS,
		"Events written per second at most (a bound on a flood, above what reconciles produce); under a burst of operations the rest wait in the event queue. 0: no limit.")
	fs.IntVar(&o.eventBurst, "event-burst", events.DefaultBurst, "Burst above --event-qps.")
	fs.IntVar(&o.eventQueue, "event-queue-size", events.DefaultQueueSize,
		"Events held while --event-qps paces them (about 1 KiB each). When it is full, reconciles wait for room: events are delayed, never dropped (nacflow_events_dropped_total counts the API server's refusals and what is queued at exit).")
	fs.DurationVar(&o.credCheck, "credential-check-period", controllers.DefaultCredentialCheckPeriod,
		"How often each NonAdminBackupStorageLocation rechecks its credential Secret, so that a rotation reaches the copy (Secrets are not watched).")
	fs.IntVar(&o.maxInVelero, "max-backups-in-velero-per-namespace", phases.DefaultMaxBackupsInVelero,
		"Unfinished Velero Backups one tenant namespace may have at once (its NonAdminBackups' and its schedules' runs) before its further NonAdminBackups wait for a turn (WaitForTurn, released round-robin across namespaces), where the blueprint's WaitForTurn sets no max of its own; 0: unlimited.")
	fs.IntVar(&o.maxRestores, "max-restores-in-velero-per-namespace", phases.DefaultMaxRestoresInVelero,
		"Unfinished Velero Restores one tenant namespace may have at once before its further NonAdminRestores wait for a turn (WaitForTurn: Velero runs every tenant's restores one at a time, in one queue; released round-robin across namespaces), where the blueprint's WaitForTurn sets no max of its own; 0: unlimited.")
	fs.StringVar(&o.tenantRole, "tenant-role", restorepolicy.DefaultTenantRole,
		"ClusterRole bounding what a NonAdminRestore may restore: Velero creates (or, with existingResourcePolicy: update, updates) only items a holder of this role in the tenant's namespace could, and Roles and RoleBindings only within it (Kubernetes' escalation rule). Enforced by Velero's plugin velero-plugin-nacflow; Kubernetes' aggregated namespace admin by default.")
	fs.StringVar(&o.adminOwned, "admin-owned-resources", restorepolicy.FormatAdminOwned(restorepolicy.DefaultAdminOwned),
		"Comma-separated resources[.group] the admin sets in tenant namespaces: a NonAdminRestore never updates them and creates them only where absent (and only if --tenant-role allows create), e.g. resourcequotas,limitranges,networkpolicies.networking.k8s.io.")
	fs.BoolVar(&o.precheck, "restore-precheck", true,
		"Before each NonAdminRestore's Velero Restore, check that Velero runs velero-plugin-nacflow (refused otherwise) and read the backup's items, naming those the tenant could not create (phase CheckRestoreItems of the built-in nonadminrestore blueprint). false: skip both (the plugin still enforces, if installed).")
	fs.Float64Var(&o.usageRate, "usage-measure-rate", controllers.DefaultUsageMeasureRate,
		"Finished NonAdminBackups measured per second for status.usage (what each takes in object storage: one DownloadRequest and one ranged GET each, after the backup's plan; older backups are filled in at this pace after a start). 0: no measurement (maxBytes quotas then count nothing).")
	fs.IntVar(&o.usageBurst, "usage-measure-burst", controllers.DefaultUsageMeasureBurst, "Burst above --usage-measure-rate.")
	fs.StringVar(&o.protectedNames, "protected-namespaces", strings.Join(phases.DefaultProtectedNamespaces, ","),
		"Comma-separated namespace name patterns (kube-*) no NonAdminRestore restores into with namespaceMapping, besides the OADP namespace.")
	fs.StringVar(&o.protectedSelector, "protected-namespace-selector", "",
		"Label selector of namespaces no NonAdminRestore restores into with namespaceMapping (e.g. nacflow.io/protected=true); empty: none.")
	listFlag(fs, &o.notTenants.Users, "non-tenant-users",
		"Comma-separated user names that are never a NonAdminRestore's requester (besides members of system:masters, the OADP namespace's service accounts, system identities and anyone who may create Velero Restores in the OADP namespace): their NonAdminRestores are bounded by --tenant-role alone and may not map namespaces or carry resource modifiers. May be repeated.")
	listFlag(fs, &o.notTenants.Groups, "non-tenant-groups",
		"Comma-separated groups whose members are never a NonAdminRestore's requester, as --non-tenant-users. May be repeated.")
	fs.IntVar(&o.webhookPort, "webhook-port", 0,
		"HTTPS port of the requester admission webhook, which records on each NonAdminRestore who created it (every restored item is then checked as that user too); its certificate is made and rotated in Secret "+webhooks.CertSecret+" of the OADP namespace and its CA injected into --webhook-configuration. config/webhook and make run serve it on 9443. 0: not served (a NonAdminRestore made without it is bounded by --tenant-role alone).")
	fs.StringVar(&o.webhookHost, "webhook-host", "", "Address the webhook server binds (empty: every address).")
	fs.StringVar(&o.webhookCertDir, "webhook-cert-dir", webhooks.DefaultCertDir,
		"Directory nac writes the webhook's certificate (tls.crt, tls.key) into from Secret "+webhooks.CertSecret+"; it must be writable.")
	fs.StringVar(&o.webhookService, "webhook-service", webhooks.DefaultService,
		"Service in the OADP namespace in front of the webhook: the certificate names <service>.<namespace>.svc (and localhost).")
	fs.StringVar(&o.webhookConfiguration, "webhook-configuration", webhooks.DefaultConfiguration,
		"MutatingWebhookConfiguration of the requester webhook (config/webhook installs it): nac injects its CA, and a NonAdminRestore without a record says whether it is installed. nac's ClusterRole lets it update nacflow-requester only.")
	listFlag(fs, &o.endpoints.AllowCIDRs, "endpoint-allow-cidrs",
		"Comma-separated CIDRs (or addresses) tenants' storage location endpoints (s3Url, publicUrl, ...) may resolve to although they are denied by default (loopback, link-local, metadata, unspecified, multicast). May be repeated.")
	listFlag(fs, &o.endpoints.DenyCIDRs, "endpoint-deny-cidrs",
		"Comma-separated CIDRs (or addresses) no tenant storage location endpoint may resolve to, e.g. the cluster's pod and service ranges; a deny wins over every allow. May be repeated.")
	listFlag(fs, &o.endpoints.AllowHosts, "endpoint-allow-hosts",
		"Comma-separated endpoint hosts tenants may use whatever they resolve to (except into --endpoint-deny-cidrs): name, *.domain or address, each with an optional :port (127.0.0.1:9000 allows that port only). May be repeated.")
	listFlag(fs, &o.endpoints.DenyHosts, "endpoint-deny-hosts",
		"Comma-separated endpoint hosts tenants may never use (name, *.domain or address, optional :port); a deny wins over every allow. May be repeated.")
	listFlag(fs, &o.unchecked, "unchecked-credential-providers",
		"Comma-separated storage location providers other than aws, gcp and azure whose credentials and config tenants may hand Velero unchecked (nacflow cannot parse them; their plugins may run commands or use Velero's own identity). May be repeated.")
	zapOpts := &zap.Options{}
	zapOpts.BindFlags(fs)
	return zapOpts
}

// listFlag registers a repeatable flag of comma-separated values on fs,
// appended to *dst (empty items dropped).
func listFlag(fs *flag.FlagSet, dst *[]string, name, usage string) {
	fs.Func(name, usage, func(v string) error {
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				*dst = append(*dst, item)
			}
		}
		return nil
	})
}

// oadpNamespace returns the OADP namespace: --oadp-namespace, else
// $WATCH_NAMESPACE read with getenv (what the OADP operator sets). It
// returns an error when neither names one.
func oadpNamespace(o options, getenv func(string) string) (string, error) {
	if o.oadpNamespace != "" {
		return o.oadpNamespace, nil
	}
	if ns := getenv(namespaceEnvVar); ns != "" {
		return ns, nil
	}
	return "", errors.New("the OADP namespace is not set: pass --oadp-namespace or set " + namespaceEnvVar)
}

func run(o options) error {
	ns, err := oadpNamespace(o, os.Getenv)
	if err != nil {
		return err
	}
	o.oadpNamespace = ns
	if o.queueWindow <= 0 {
		return fmt.Errorf("--queue-refresh-window must be positive, got %s", o.queueWindow)
	}
	if o.waitTimeout <= 0 {
		return fmt.Errorf("--wait-timeout must be positive, got %s", o.waitTimeout)
	}
	if o.usageRate < 0 || o.usageBurst < 1 {
		return fmt.Errorf("--usage-measure-rate must be 0 (off) or more and --usage-measure-burst at least 1, got %g and %d", o.usageRate, o.usageBurst)
	}
	if o.listPageSize < 0 {
		return fmt.Errorf("--cache-list-page-size must be 0 (whole lists) or more, got %d", o.listPageSize)
	}
	if o.maxInVelero < 0 {
		return fmt.Errorf("--max-backups-in-velero-per-namespace must be 0 (unlimited) or more, got %d", o.maxInVelero)
	}
	if o.maxRestores < 0 {
		return fmt.Errorf("--max-restores-in-velero-per-namespace must be 0 (unlimited) or more, got %d", o.maxRestores)
	}
	if o.leaderElect {
		if err := checkLeaderElection(o); err != nil {
			return err
		}
	}

	scheme, err := v1alpha1.NewScheme()
	if err != nil {
		return fmt.Errorf("building scheme: %w", err)
	}

	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	if o.qps <= 0 || o.burst <= 0 || o.concurrency <= 0 {
		return fmt.Errorf("--kube-api-qps, --kube-api-burst and --max-concurrent-reconciles must be positive")
	}
	if o.minRetry <= 0 || o.maxRetry < o.minRetry {
		return fmt.Errorf("--min-retry-delay must be positive and --max-retry-delay at least as long (got %s and %s)", o.minRetry, o.maxRetry)
	}
	cfg.QPS, cfg.Burst = float32(o.qps), o.burst
	endpoints, err := o.endpoints.Compile("")
	if err != nil {
		return fmt.Errorf("--endpoint-* flags: %w", err)
	}
	if o.eventQueue <= 0 {
		return fmt.Errorf("--event-queue-size must be positive, got %d", o.eventQueue)
	}
	// What the installed CRDs and RBAC allow: everything with nacflow's
	// own; less when the OADP operator runs nac as its non-admin
	// controller, with OADP NAC's CRDs and RBAC (docs/oadp.md).
	caps, err := detectCapabilities(cfg, scheme, o.oadpNamespace)
	if err != nil {
		return err
	}
	for _, limit := range caps.Limits() {
		ctrl.Log.Info("not available with the installed CRDs and RBAC: " + limit)
	}
	metrics.Registry.MustRegister(caps.Collector())
	if o.precheck && !caps.RestorePrecheck {
		o.precheck = false
	}
	// The manager does not stop a broadcaster it was given: run does, after
	// the manager, so that what is still queued is written (for up to 5 s).
	broadcaster := events.NewBroadcaster(float32(o.eventQPS), o.eventBurst, o.eventQueue)
	defer broadcaster.Shutdown()
	lock, err := podLeaseLock(cfg, o)
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsOptions(o),
		HealthProbeBindAddress:  o.probeAddr,
		LeaderElection:          o.leaderElect,
		LeaderElectionID:        leaderElectionID,
		LeaderElectionNamespace: o.oadpNamespace,
		// nil: controller-runtime's own lock, held as <hostname>_<uuid>.
		LeaderElectionResourceLockInterface: lock,
		LeaseDuration:                       &o.leaseDuration,
		RenewDeadline:                       &o.renewDeadline,
		RetryPeriod:                         &o.retryPeriod,
		Cache:                               caps.TrimCache(controllers.CacheOptions(o.oadpNamespace, o.listPageSize)),
		MapperProvider:                      restmapper.New,
		Controller:                          config.Controller{MaxConcurrentReconciles: o.concurrency},
		PprofBindAddress:                    o.pprofAddr,
		EventBroadcaster:                    broadcaster, //nolint:staticcheck // lives as long as the process
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}

	queue := veleroqueue.NewBackupQueue()
	metrics.Registry.MustRegister(&nacmetrics.StateCollector{Informers: mgr.GetCache(), Reader: mgr.GetClient(), Queue: queue})
	// The admin's non-admin settings: flags given on the command line, else
	// OADP's DataProtectionApplication in the OADP namespace, read live.
	adminOwned, err := restorepolicy.ParseAdminOwned(o.adminOwned)
	if err != nil {
		return fmt.Errorf("--admin-owned-resources: %w", err)
	}
	if o.tenantRole == "" {
		return errors.New("--tenant-role is empty: name the ClusterRole bounding tenants' restores (admin)")
	}
	settings := &dpa.Source{Reader: mgr.GetAPIReader(), Namespace: o.oadpNamespace, Flags: o.nonAdminFlags()}
	turns := veleroqueue.NewTurns(mgr.GetClient(), o.oadpNamespace)
	// Without the right to create Events, none is attempted (each would be
	// refused and logged as an error); the story is in the log.
	recorderFor := func(name string) record.EventRecorder {
		if !caps.Events {
			return discardEvents{}
		}
		return mgr.GetEventRecorderFor(name)
	}
	// Without the right to write the map, locations go unrecorded and the
	// admission policy refuses their PodVolumeBackups: safe, and said at
	// start (capabilities).
	var locations phases.LocationRecorder
	if caps.TenantLocations {
		m := &tenantlocations.Map{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Namespace: o.oadpNamespace}
		locations = m
		if err := mgr.Add(m); err != nil {
			return err
		}
	}
	requesters, err := setupRequesterWebhook(mgr, cfg, scheme, o, caps)
	if err != nil {
		return err
	}
	protected := phases.Protected{}
	if protected.Names, err = phases.ParseProtectedNames(o.protectedNames); err != nil {
		return fmt.Errorf("--protected-namespaces: %w", err)
	}
	if protected.Selector, err = labels.Parse(o.protectedSelector); err != nil {
		return fmt.Errorf("--protected-namespace-selector: %w", err)
	}
	registry, err := phases.NewRegistry(phases.Clients{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: recorderFor("nacflow-blueprint"), Queue: queue, Turns: turns, Locations: locations},
		phases.Options{RequireApprovalForBSL: o.bslApproval, RequireTenantLocationForDownloads: o.downloadsOnTenantLocations, Settings: settings, MaxBackupsInVelero: o.maxInVelero, MaxRestoresInVelero: o.maxRestores,
			TenantRole: o.tenantRole, AdminOwned: adminOwned, RestorePrecheck: o.precheck,
			Endpoints: endpoints, UncheckedCredentialProviders: o.unchecked,
			Requesters: requesters, Protected: protected,
			Quotas: phases.BlueprintQuotas{Resolver: &blueprints.Resolver{Reader: caps.BlueprintReader(mgr.GetClient()), Namespace: o.oadpNamespace}}})
	if err != nil {
		return err
	}
	// deps returns the dependencies of the controller of a NAC kind, its
	// events signed with its own name (the kind in lower case, as
	// controller-runtime names it, and "-controller").
	deps := func(kind string) controllers.Deps {
		recorder := recorderFor(strings.ToLower(kind) + "-controller")
		var plans *planstore.PlanStore
		if !caps.Plan[kind] {
			plans = &planstore.PlanStore{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Namespace: o.oadpNamespace}
		}
		return controllers.Deps{
			Plans:     plans,
			Client:    mgr.GetClient(),
			APIReader: mgr.GetAPIReader(),
			Runner: &engine.Runner{Registry: registry, Recorder: recorder, WaitTimeout: o.waitTimeout,
				Observer: nacmetrics.Observer{Kind: kind}},
			Recorder:      recorder,
			Blueprints:    &blueprints.Resolver{Reader: caps.BlueprintReader(mgr.GetClient()), Namespace: o.oadpNamespace},
			OADPNamespace: o.oadpNamespace,
			MinRetryDelay: o.minRetry,
			MaxRetryDelay: o.maxRetry,
		}
	}
	// Each NAC kind's reconciler, made by its kind file from the parts it
	// takes; which kinds run comes from the kind registry, and a kind
	// without a reconciler is a build defect (NewReconcilers' error).
	reconcilers, err := controllers.NewReconcilers(&controllers.Shared{Deps: deps,
		Queue: queue, Turns: turns, QueueRefreshWindow: o.queueWindow,
		Usage:                  controllers.NewUsageMeter(registry, o.oadpNamespace, o.usageRate, o.usageBurst),
		NoServerStatusRequests: !caps.RestorePrecheck,
		RequireApprovalForBSL:  o.bslApproval, Settings: settings, CredentialCheckPeriod: o.credCheck,
		EndpointRevision: phases.EndpointRevision(nil)})
	if err != nil {
		return err
	}
	var setups []setup
	for _, k := range v1alpha1.Kinds() {
		setups = append(setups, setup{k.Kind, reconcilers[k.Kind].SetupWithManager})
	}
	bpr := &controllers.BlueprintReconciler{Client: mgr.GetClient(), Registry: registry,
		Recorder: recorderFor("blueprint-controller"), OADPNamespace: o.oadpNamespace}
	setups = append(setups, setup{"Blueprint", bpr.SetupWithManager})
	for _, st := range setups {
		// A controller whose CRD is missing would keep the manager from
		// starting (its watch never syncs): it stays off, said above.
		if !caps.Runs(st.kind) {
			continue
		}
		if err := st.setup(mgr); err != nil {
			return fmt.Errorf("setting up the %s controller: %w", st.kind, err)
		}
	}
	if err := backupsync.IndexOrigin(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return fmt.Errorf("indexing Velero Backups for the backup sync: %w", err)
	}
	sync := &backupsync.BackupSync{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), OADPNamespace: o.oadpNamespace,
		TenantSpec: phases.SyncedBackupSpec, ByOrigin: true}
	gc := &orphangc.GarbageCollector{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), OADPNamespace: o.oadpNamespace, Off: caps.Off()}
	period := func(which dpa.Period, def time.Duration) func(context.Context) (time.Duration, string) {
		return func(ctx context.Context) (time.Duration, string) {
			d, source, err := settings.Period(ctx, which, def)
			if err != nil {
				ctrl.Log.Error(err, "reading the DataProtectionApplication's period; using the default")
			}
			return d, source
		}
	}
	for _, p := range []*periodic.Loop{
		{Name: "backup-sync", PeriodFunc: period(dpa.BackupSyncPeriod, o.syncPeriod),
			Pass: func(ctx context.Context) error { _, err := sync.SyncOnce(ctx); return err }},
		{Name: "garbage-collection", PeriodFunc: period(dpa.GarbageCollectionPeriod, o.gcPeriod),
			Pass: func(ctx context.Context) error { _, err := gc.CollectOnce(ctx); return err }},
	} {
		if err := mgr.Add(p); err != nil {
			return fmt.Errorf("adding the %s loop: %w", p.Name, err)
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	// Ready once the informers have synced: until then a reconcile would
	// read a partial cache (at 10,000 NABs the initial lists take seconds).
	if err := mgr.AddReadyzCheck("informers", func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return errors.New("the informers' caches have not synced yet")
		}
		return nil
	}); err != nil {
		return err
	}

	if !o.metricsSecure && o.metricsAddr != "0" {
		ctrl.Log.Info("metrics are served over plain HTTP to anyone (--metrics-secure=false): for local debugging only", "address", o.metricsAddr)
	}
	ctrl.Log.Info("starting nac", "oadpNamespace", o.oadpNamespace, "waitTimeout", o.waitTimeout.String())
	return mgr.Start(ctrl.SetupSignalHandler())
}

// setupRequesterWebhook reads (or makes) the requester signing key and,
// with --webhook-port, adds the webhook server to mgr
// (internal/runtime/webhooks). Without the RBAC for either
// (capabilities.Webhook false: OADP's role), it returns zero Requesters and
// every NonAdminRestore says so in condition RequesterVerified. Errors: the
// API server's, bounded to 30 s.
func setupRequesterWebhook(mgr ctrl.Manager, cfg *rest.Config, scheme *runtime.Scheme, o options, caps capabilities.Capabilities) (phases.Requesters, error) {
	if !caps.Webhook {
		return phases.Requesters{}, nil
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return phases.Requesters{}, fmt.Errorf("building the client: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	key, err := webhooks.SigningKey(ctx, cl, o.oadpNamespace)
	if err != nil {
		return phases.Requesters{}, err
	}
	signer, err := requester.NewSigner(key)
	if err != nil {
		return phases.Requesters{}, err
	}
	reader := mgr.GetAPIReader()
	r := phases.Requesters{Signer: signer, NotTenants: o.notTenants, Installed: func(ctx context.Context) (bool, string, error) {
		c := &admissionregistrationv1.MutatingWebhookConfiguration{}
		err := reader.Get(ctx, client.ObjectKey{Name: o.webhookConfiguration}, c)
		switch {
		case err == nil:
			return true, o.webhookConfiguration, nil
		case apierrors.IsNotFound(err):
			return false, o.webhookConfiguration, nil
		}
		return false, o.webhookConfiguration, fmt.Errorf("reading MutatingWebhookConfiguration %s: %w", o.webhookConfiguration, err)
	}}
	if o.webhookPort == 0 {
		ctrl.Log.Info("the requester webhook is not served (--webhook-port=0): NonAdminRestores made from now on record no requester")
		return r, nil
	}
	err = webhooks.Setup(ctx, mgr, cl, webhooks.Options{Namespace: o.oadpNamespace, Port: o.webhookPort, Host: o.webhookHost,
		CertDir: o.webhookCertDir, Service: o.webhookService, Configuration: o.webhookConfiguration,
		Handlers: map[string]admission.Handler{webhooks.RequesterPath: &requester.Handler{Signer: signer,
			// Read from the API server: a restore's record is of the
			// modifiers as they exist at admission.
			ConfigMaps: func(ctx context.Context, ns, name string) (*corev1.ConfigMap, error) {
				cm := &corev1.ConfigMap{}
				return cm, reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm)
			}}}})
	return r, err
}

// setup is one controller: its kind and how it joins the manager.
type setup struct {
	kind  string
	setup func(ctrl.Manager) error
}

// detectCapabilities asks the API server of cfg what its CRDs and nac's
// RBAC allow (capabilities.Detect), bounded to 30 s.
func detectCapabilities(cfg *rest.Config, scheme *runtime.Scheme, oadpNamespace string) (capabilities.Capabilities, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return capabilities.Capabilities{}, fmt.Errorf("building the discovery client: %w", err)
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return capabilities.Capabilities{}, fmt.Errorf("building the client: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	caps, err := capabilities.Detect(ctx, dc, cl, oadpNamespace)
	if err != nil {
		return caps, fmt.Errorf("asking the API server what nac may do: %w", err)
	}
	return caps, nil
}

// discardEvents is the event recorder of a nac that may not create Events
// (OADP's RBAC for its non-admin controller): every event is dropped.
type discardEvents struct{}

// Event implements record.EventRecorder: dropped.
func (discardEvents) Event(runtime.Object, string, string, string) {}

// Eventf implements record.EventRecorder: dropped.
func (discardEvents) Eventf(runtime.Object, string, string, string, ...any) {}

// AnnotatedEventf implements record.EventRecorder: dropped.
func (discardEvents) AnnotatedEventf(runtime.Object, map[string]string, string, string, string, ...any) {
}

// metricsOptions returns the metrics server's options for o, as
// kubebuilder's scaffold sets them: with --metrics-secure (the default),
// HTTPS, and controller-runtime's filter
// (filters.WithAuthenticationAndAuthorization) in front of /metrics: a
// request without a bearer token gets 401, one whose token the API server
// rejects (TokenReview) 500 (the filter's answer to the review's error),
// one whose user may not get the /metrics non-resource URL
// (SubjectAccessReview) 403. The metrics' labels name tenants' namespaces
// and objects. The certificate comes from --metrics-cert-dir (tls.crt,
// tls.key), else is self-signed at start; HTTP/2 is off, as in kubebuilder's
// scaffold (its stream-reset attacks, CVE-2023-44487). With
// --metrics-secure=false, plain HTTP to anyone.
func metricsOptions(o options) metricsserver.Options {
	opts := metricsserver.Options{BindAddress: o.metricsAddr}
	if !o.metricsSecure {
		return opts
	}
	opts.SecureServing = true
	opts.FilterProvider = filters.WithAuthenticationAndAuthorization
	opts.CertDir = o.metricsCerts
	opts.TLSOpts = []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
	return opts
}

// leaderElectionID is the name of the leader-election Lease in the OADP
// namespace.
const leaderElectionID = "nacflow.oadp.openshift.io"

// The leader election's timings by default: controller-runtime's.
const (
	defaultLeaseDuration = 15 * time.Second
	defaultRenewDeadline = 10 * time.Second
	defaultRetryPeriod   = 2 * time.Second
)

// checkLeaderElection returns an error when the --leader-elect-* timings
// cannot work: client-go's leader elector wants each positive, the renew
// deadline shorter than the lease duration and longer than the retry
// period (its own jitter of 1.2 included), and panics otherwise.
func checkLeaderElection(o options) error {
	if o.leaseDuration <= 0 || o.renewDeadline <= 0 || o.retryPeriod <= 0 {
		return fmt.Errorf("--leader-elect-lease-duration, --leader-elect-renew-deadline and --leader-elect-retry-period must be positive (got %s, %s and %s)",
			o.leaseDuration, o.renewDeadline, o.retryPeriod)
	}
	if o.leaseDuration <= o.renewDeadline {
		return fmt.Errorf("--leader-elect-lease-duration (%s) must be longer than --leader-elect-renew-deadline (%s)", o.leaseDuration, o.renewDeadline)
	}
	if float64(o.renewDeadline) <= 1.2*float64(o.retryPeriod) {
		return fmt.Errorf("--leader-elect-renew-deadline (%s) must be longer than 1.2 × --leader-elect-retry-period (%s)", o.renewDeadline, o.retryPeriod)
	}
	return nil
}

// podLeaseLock returns the leader-election lock held as
// "<$POD_NAME>_<uuid>" when leader election is on and $POD_NAME is set (the
// Deployment sets it from the Pod's name): a Pod on the host's network has
// the node's hostname, which controller-runtime's own lock would name
// instead. It returns nil otherwise (controller-runtime's lock). Errors:
// building the clients.
func podLeaseLock(cfg *rest.Config, o options) (resourcelock.Interface, error) {
	pod := os.Getenv("POD_NAME")
	if !o.leaderElect || pod == "" {
		return nil, nil
	}
	cs, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return nil, fmt.Errorf("leader election: %w", err)
	}
	return resourcelock.New(resourcelock.LeasesResourceLock, o.oadpNamespace, leaderElectionID, cs.CoreV1(), cs.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: pod + "_" + uuid.NewString()})
}
