// Package e2e drives nacflow the way README.md and docs/getting-started.md
// tell a newcomer to: the whole stack of `make run` (bin/localcp:
// kube-apiserver, etcd, an S3-compatible object store and a real Velero
// server) running the real nac binary, with kubectl acting as a tenant would.
package e2e

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/test/e2estack"
)

func Test(t *testing.T) { TestingT(t) }

type E2ESuite struct {
	root       string
	bin        string // nac and localcp, built for the suite
	dir        string // localcp's --dir: kubeconfig and logs
	kubeconfig string
	metrics    string // the controller's metrics URL
	webhookURL string // where the API server calls the requester webhook
	st         *e2estack.Stack
}

var _ = Suite(&E2ESuite{})

// validation is Velero's --store-validation-frequency in this package's
// stacks: how often it revalidates every location (the default is 1m).
const validation = 5 * time.Second

func (s *E2ESuite) SetUpSuite(c *C) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		c.Fatalf("kubectl is not on PATH: %v", err)
	}
	root := e2estack.RepoRoot(c)
	s.root, s.bin, s.dir = root, e2estack.BuildBinaries(c, root), c.MkDir()
	s.kubeconfig = filepath.Join(s.dir, "kubeconfig")
	l, err := net.Listen("tcp", "127.0.0.1:0") // a free port for the metrics endpoint
	c.Assert(err, IsNil)
	metricsAddr := l.Addr().String()
	c.Assert(l.Close(), IsNil)
	s.metrics = "https://" + metricsAddr + "/metrics"
	// Short sync periods so that the rebuild test sees Velero's BSL sync and
	// nacflow's backup sync within seconds; Velero revalidates locations
	// every few seconds so that the storage tests see its verdict.
	// The requester webhook as make run installs it: every NonAdminRestore
	// records who created it (TestRestoreBoundedByTheRequester).
	hookCP, hookNac := e2estack.RequesterWebhook(c, s.dir)
	s.st = e2estack.Start(c, root, s.bin, s.dir,
		append([]string{"--velero-backup-sync-period", "3s", "--velero-store-validation-frequency", validation.String()}, hookCP...),
		append([]string{"--metrics-bind-address", metricsAddr, "--health-probe-bind-address", "127.0.0.1:0", "--backup-sync-period", "2s"}, hookNac...))
	s.webhookURL = hookCP[3]
	s.st.AwaitRequesterWebhook(c, "default")
}

// drain returns the stack's output collected so far.
func (s *E2ESuite) drain() string { return s.st.Drain() }

func (s *E2ESuite) TearDownSuite(c *C) {
	if s.st == nil {
		return
	}
	// Ctrl-C, as a user of make run would.
	s.st.Interrupt(c)
	c.Check(s.drain(), Matches, `(?s).*>> stopping the control plane.*`)
}

// runKubectl runs kubectl with stdin against the local control plane, from
// the repository root as docs/getting-started.md does, and returns its
// combined output.
func (s *E2ESuite) runKubectl(stdin string, args ...string) (string, error) {
	return s.st.Run(stdin, args...)
}

// kubectl runs kubectl and fails the test when it fails.
func (s *E2ESuite) kubectl(c *C, args ...string) string { return s.st.Kubectl(c, args...) }

// kubectlIn is kubectl with stdin.
func (s *E2ESuite) kubectlIn(c *C, stdin string, args ...string) string {
	return s.st.KubectlIn(c, stdin, args...)
}

// kubectlAllowFail runs kubectl and returns its output whether or not it
// failed (for "is it gone yet" checks).
func (s *E2ESuite) kubectlAllowFail(args ...string) string {
	out, _ := s.st.Run("", args...)
	return out
}

func (s *E2ESuite) TestReadmeWalkthrough(c *C) {
	c.Check(s.kubectl(c, "apply", "-f", "examples/nonadminbackup.yaml"), Matches, "nonadminbackup.oadp.openshift.io/sample created\n")

	// Within 10 s a Velero Backup <ns>-<name>-<uuid> exists in openshift-adp.
	var name string
	e2estack.Eventually(c, 10*time.Second, func() (bool, string) {
		out := s.kubectl(c, "get", "backups.velero.io", "-n", "openshift-adp",
			"-l", "openshift.io/oadp=True,app.kubernetes.io/managed-by=oadp-nac-controller",
			"-o", `jsonpath={range .items[?(@.metadata.annotations.openshift\.io/oadp-nab-origin-name=="sample")]}{.metadata.name}{end}`)
		name = strings.TrimSpace(out)
		return name != "", "no Velero Backup for sample yet"
	})
	c.Check(name, Matches, `demo-sample-[0-9a-f-]{36}`)
	c.Check(len(name) <= 63, Equals, true)
	c.Check(s.kubectl(c, "get", "backups.velero.io", "-n", "openshift-adp", name,
		"-o", `jsonpath={.spec.includedNamespaces}|{.metadata.annotations.openshift\.io/oadp-nab-origin-name}|{.metadata.annotations.openshift\.io/oadp-nab-origin-namespace}`),
		Equals, `["demo"]|sample|demo`)

	// The real Velero may already have finished: either state is right.
	e2estack.Eventually(c, 10*time.Second, func() (bool, string) {
		out := s.kubectl(c, "get", "nab", "-n", "demo")
		header := e2estack.InOrder(out, "NAME", "REQUEST-PHASE", "VELERO-PHASE", "PLAN", "PLAN-PHASE", "AGE")
		return header && (e2estack.InOrder(out, "sample", "Created", "running", "waitForBackup: waiting") ||
				e2estack.InOrder(out, "sample", "Created", "Completed", "complete", "finalStatus: complete")),
			out + "\nVelero's validation errors: " + s.kubectlAllowFail("get", "nab", "-n", "demo", "sample", "-o", "jsonpath={.status.veleroBackup.status.validationErrors}")
	})
	describe := s.kubectl(c, "describe", "nab", "-n", "demo", "sample")
	// One event for the reconcile that created the Velero Backup: it tells
	// each phase, its function and how long it took.
	c.Check(e2estack.InOrder(describe, "Events:",
		"PhaseWaiting", "Started action backup of blueprint nonadminbackup",
		"Ended phase validate (ValidateBackupSpec) in",
		"Ended phase createBackup (CreateVeleroBackup) in",
		"Phase waitForBackup (WaitFor) is waiting"), Equals, true, Commentf(describe))
	c.Check(strings.Contains(describe, "StartedPhase"), Equals, false, Commentf("a phase's start has no event of its own: %s", describe))

	// The real Velero server finishes the backup.
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out := s.kubectl(c, "get", "nab", "-n", "demo", "sample",
			"-o", "jsonpath={.status.veleroBackup.status.phase}|{.status.plan.state}|{.status.plan.current}")
		return out == "Completed|complete|finalStatus: complete", out
	})
	e2estack.Eventually(c, 10*time.Second, func() (bool, string) {
		d := s.kubectl(c, "describe", "nab", "-n", "demo", "sample")
		// Velero serves the resource list within the contents check's
		// brief wait: the completion is one event.
		return e2estack.InOrder(d, "PhaseWaiting", "EndedAction", "Ended phase waitForBackup (WaitFor)", "Ended phase syncStatus (SyncStatus)",
			"Ended phase verify (VerifyBackupContents)", "Ended deferPhase finalStatus", "Ended action backup"), d
	})
	c.Check(s.bucketKeys(c, "backups/"+name+"/"), Not(HasLen), 0)
	c.Check(s.kubectl(c, "get", "nab", "-n", "demo", "sample", "-o", `jsonpath={.status.conditions[?(@.type=="Verified")].message}`),
		Matches, `[0-9]+ items of Velero Backup `+name+` checked: all belong to namespace demo`)

	// getting-started.md's NonAdminDownloadRequest: the log through Velero's URL.
	c.Check(s.kubectl(c, "apply", "-f", "examples/nonadmindownloadrequest.yaml"), Matches, "nonadmindownloadrequest.oadp.openshift.io/sample-log created\n")
	log := downloadURL(c, s.servedURL(c, "demo", "sample-log"))
	c.Check(strings.Contains(log, "backup=openshift-adp/"+name), Equals, true, Commentf("%.300s", log))
	// The same request in another namespace finds no such backup there: it
	// backs off as OADP NAC's does.
	s.kubectl(c, "create", "namespace", "other")
	example, err := os.ReadFile(filepath.Join(s.root, "examples", "nonadmindownloadrequest.yaml"))
	c.Assert(err, IsNil)
	s.kubectlIn(c, strings.ReplaceAll(string(example), "namespace: demo", "namespace: other"), "apply", "-f", "-")
	e2estack.Eventually(c, 30*time.Second, func() (bool, string) {
		out := s.kubectl(c, "get", "nadr", "-n", "other", "sample-log", "-o", `jsonpath={.status.conditions[?(@.type=="NonAdminBackupNotAvailable")].message}`)
		return out == "cannot get nonadminbackup: NonAdminBackup other/sample does not exist (yet): the request waits for it", out
	})
}

// TestInstallManifest: dist/install.yaml (make install-manifest) applies
// cleanly to a real API server (server-side dry run: CRDs, RBAC, tenant
// roles, Deployment, metrics Service).
func (s *E2ESuite) TestInstallManifest(c *C) {
	path := filepath.Join(s.root, "dist", "install.yaml")
	if _, err := os.Stat(path); err != nil {
		c.Fatalf("%s is missing: run the e2e tests with `make test-e2e`, which renders it (%v)", path, err)
	}
	out := s.kubectl(c, "apply", "--dry-run=server", "-f", path)
	for _, want := range []string{"customresourcedefinition.apiextensions.k8s.io/nonadminbackups.oadp.openshift.io",
		"serviceaccount/nacflow", "role.rbac.authorization.k8s.io/nacflow-manager", "clusterrole.rbac.authorization.k8s.io/nacflow-manager",
		"clusterrole.rbac.authorization.k8s.io/nacflow-tenant-edit", "clusterrole.rbac.authorization.k8s.io/nacflow-tenant-view",
		"clusterrole.rbac.authorization.k8s.io/nacflow-metrics-reader",
		"rolebinding.rbac.authorization.k8s.io/nacflow-manager", "clusterrolebinding.rbac.authorization.k8s.io/nacflow-manager",
		"service/nacflow-metrics", "deployment.apps/nacflow-controller"} {
		c.Check(out, Matches, `(?s).*`+regexp.QuoteMeta(want)+` (created|configured|unchanged) \(server dry run\).*`, Commentf(want))
	}
}

// TestDeployUndeploy runs docs/install.md's commands against the control
// plane: `make deploy` installs the controller (its Deployment cannot start
// pods here: there is no kubelet), `make undeploy` removes it and keeps the
// CRDs and the NAC objects.
func (s *E2ESuite) TestDeployUndeploy(c *C) {
	make := func(target string) string {
		cmd := exec.Command("make", "--no-print-directory", target)
		cmd.Dir = s.root
		cmd.Env = append(os.Environ(), "KUBECONFIG="+s.kubeconfig)
		out, err := cmd.CombinedOutput()
		c.Assert(err, IsNil, Commentf("make %s: %s", target, out))
		return string(out)
	}
	out := make("deploy")
	c.Check(out, Matches, `(?s).*deployment.apps/nacflow-controller serverside-applied.*`)
	c.Check(s.kubectl(c, "get", "deployment", "-n", "openshift-adp", "nacflow-controller", "-o", "jsonpath={.spec.template.spec.serviceAccountName}"), Equals, "nacflow")
	c.Check(s.kubectl(c, "get", "clusterrole", "nacflow-tenant-edit", "-o", "jsonpath={.metadata.labels}"), Matches, `.*aggregate-to-admin.*`)

	// The controller's ServiceAccount is a real one: the API server issues
	// it tokens, and kube-controller-manager's token controller fills a
	// legacy token Secret with the key it shares with kube-apiserver.
	c.Check(s.kubectl(c, "create", "token", "nacflow", "-n", "openshift-adp"), Matches, `eyJ[A-Za-z0-9_.-]+\n?`)
	s.kubectlIn(c, `apiVersion: v1
kind: Secret
metadata:
  name: nacflow-token
  namespace: openshift-adp
  annotations: {kubernetes.io/service-account.name: nacflow}
type: kubernetes.io/service-account-token
`, "apply", "-f", "-")
	e2estack.Eventually(c, 30*time.Second, func() (bool, string) {
		out := s.kubectl(c, "get", "secret", "-n", "openshift-adp", "nacflow-token", "-o", "jsonpath={.data.token}")
		return out != "", "the token controller has not filled nacflow-token"
	})
	s.kubectl(c, "delete", "secret", "-n", "openshift-adp", "nacflow-token")
	// Its rights are the documented least privilege (docs/security.md).
	sa := "system:serviceaccount:openshift-adp:nacflow"
	for _, tc := range []struct{ verb, resource, ns, want string }{
		{"list", "nonadminbackups.oadp.openshift.io", "", "yes"},
		{"patch", "nonadminbackups.oadp.openshift.io/status", "demo", "yes"},
		{"create", "nonadminbackups.oadp.openshift.io", "demo", "yes"}, // backup sync
		{"create", "nonadminrestores.oadp.openshift.io", "demo", "no"},
		{"list", "nonadmindownloadrequests.oadp.openshift.io", "", "yes"},
		{"create", "backups.velero.io", "openshift-adp", "yes"},
		{"create", "downloadrequests.velero.io", "openshift-adp", "yes"},
		{"create", "backups.velero.io", "demo", "no"},
		{"list", "backups.velero.io", "", "no"},
		{"get", "secrets", "demo", "yes"},
		{"list", "secrets", "demo", "no"},
		{"create", "secrets", "demo", "no"},
		{"create", "secrets", "openshift-adp", "yes"},
		{"create", "leases.coordination.k8s.io", "openshift-adp", "yes"},
		{"create", "leases.coordination.k8s.io", "demo", "no"},
		{"create", "events", "demo", "yes"},
		// Restore tests: a sandbox Namespace is created and deleted (the
		// engine's safety rule holds phases to their own); never changed.
		{"delete", "namespaces", "", "yes"},
		{"update", "namespaces", "", "no"},
		{"patch", "namespaces", "", "no"},
		{"delete", "resourcequotas", "demo", "no"},
		{"create", "clusterrolebindings.rbac.authorization.k8s.io", "", "no"},
		{"create", "tokenreviews.authentication.k8s.io", "", "yes"}, // the metrics endpoint's authentication
		{"create", "subjectaccessreviews.authorization.k8s.io", "", "yes"},
	} {
		c.Check(s.canI(tc.verb, tc.resource, tc.ns, sa), Equals, tc.want, Commentf("%s %s -n %q", tc.verb, tc.resource, tc.ns))
	}
	// The leader election Lease lives in the OADP namespace (--leader-elect)
	// and the metrics Service is there.
	c.Check(s.kubectl(c, "get", "deployment", "-n", "openshift-adp", "nacflow-controller", "-o", "jsonpath={.spec.template.spec.containers[0].args}"), Matches, `.*"--leader-elect".*`)
	c.Check(s.kubectl(c, "get", "service", "-n", "openshift-adp", "nacflow-metrics", "-o", "jsonpath={.spec.ports[0].port}"), Equals, "8090")
	out = make("undeploy")
	c.Check(out, Matches, `(?s).*deployment.apps "nacflow-controller" deleted.*`)
	c.Check(s.kubectlAllowFail("get", "deployment", "-n", "openshift-adp", "nacflow-controller"), Matches, `(?s).*NotFound.*`)
	c.Check(strings.TrimSpace(s.kubectl(c, "get", "crd", "nonadminbackups.oadp.openshift.io", "-o", "name")), Equals, "customresourcedefinition.apiextensions.k8s.io/nonadminbackups.oadp.openshift.io")
	// It removed the admission policies too, the one make run installs
	// among them: back as make run had it, for the tests after this one.
	c.Check(s.kubectlAllowFail("get", "validatingadmissionpolicy", "nacflow-pod-volume-backups"), Matches, `(?s).*NotFound.*`)
	s.kubectl(c, "apply", "-f", filepath.Join(s.root, "config", "admission", "pod_volume_backups.yaml"))
}

// scrape GETs the controller's metrics over HTTPS (its certificate is
// self-signed) with token as the bearer token ("" for none) and returns the
// status code and body.
func (s *E2ESuite) scrape(token string) (int, string, error) {
	return e2estack.Scrape(s.metrics, token)
}

// TestMetricsEndpoint: the controller's metrics are served over HTTPS to
// authorized scrapers only — no token 401, a ServiceAccount's token without
// ClusterRole nacflow-metrics-reader 403, the token of the scraper make run
// binds to it (as its ready message tells) 200 — and, while the controller
// runs a backup against the real Velero, show the operation and phase
// metrics with non-zero values. The plain-HTTP port is closed.
func (s *E2ESuite) TestMetricsEndpoint(c *C) {
	// As make run and make deploy install it (make undeploy, in another
	// test, removes it).
	s.kubectl(c, "apply", "-f", "config/rbac/metrics_reader_role.yaml")
	code, body, err := s.scrape("")
	c.Assert(err, IsNil)
	c.Check(code, Equals, http.StatusUnauthorized)
	c.Check(body, Equals, "Unauthorized\n")
	// A token the API server rejects: controller-runtime's filter answers
	// 500 (it reports the TokenReview's "invalid bearer token" as an
	// error), never the metrics.
	code, body, err = s.scrape("not-a-token")
	c.Assert(err, IsNil)
	c.Check(code == http.StatusUnauthorized || code == http.StatusInternalServerError, Equals, true, Commentf("%d", code))
	c.Check(body, Not(Matches), `(?s).*nacflow_.*`)
	s.kubectl(c, "create", "serviceaccount", "-n", "openshift-adp", "no-metrics")
	denied := strings.TrimSpace(s.kubectl(c, "create", "token", "no-metrics", "-n", "openshift-adp"))
	code, body, err = s.scrape(denied)
	c.Assert(err, IsNil)
	c.Check(code, Equals, http.StatusForbidden, Commentf(body))
	c.Check(body, Matches, `Authorization denied for user system:serviceaccount:openshift-adp:no-metrics\n`)
	// make run's ready message tells how to scrape, with this token.
	c.Check(s.drain(), Matches, `(?s).*\n     curl -sk -H "Authorization: Bearer \$\(kubectl create token metrics-scraper -n openshift-adp\)" `+
		regexp.QuoteMeta(s.metrics)+`   # the controller's metrics\n.*`)
	token := strings.TrimSpace(s.kubectl(c, "create", "token", "metrics-scraper", "-n", "openshift-adp"))
	// Plain HTTP reaches no metrics: Go's TLS server answers it 400.
	plain, err := http.Get(strings.Replace(s.metrics, "https://", "http://", 1))
	c.Assert(err, IsNil)
	plain.Body.Close()
	c.Check(plain.StatusCode, Equals, http.StatusBadRequest)

	s.kubectlIn(c, `apiVersion: oadp.openshift.io/v1alpha1
kind: NonAdminBackup
metadata:
  name: metered
  namespace: demo
spec:
  backupSpec: {}
`, "apply", "-f", "-")
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		out := s.kubectl(c, "get", "nab", "-n", "demo", "metered", "-o", "jsonpath={.status.plan.state}")
		return out == "complete", out
	})
	e2estack.Eventually(c, 10*time.Second, func() (bool, string) {
		code, body, err = s.scrape(token)
		if err != nil {
			return false, err.Error()
		}
		return code == http.StatusOK && strings.Contains(body, "nacflow_operations_finished_total"), fmt.Sprintf("%d, no nacflow metrics yet", code)
	})
	for _, series := range []string{
		`nacflow_operations_started_total{action="backup",kind="NonAdminBackup"}`,
		`nacflow_operations_finished_total{action="backup",kind="NonAdminBackup",result="complete"}`,
		`nacflow_phase_duration_seconds_count{func="CreateVeleroBackup",kind="NonAdminBackup",result="complete"}`,
		`nacflow_phase_duration_seconds_count{func="WaitFor",kind="NonAdminBackup",result="complete"}`,
		`controller_runtime_reconcile_total{controller="nonadminbackup",result="success"}`,
	} {
		v, ok := sample(body, series)
		c.Check(ok, Equals, true, Commentf("%s missing", series))
		c.Check(v > 0, Equals, true, Commentf("%s = %v", series, v))
	}
	_, ok := sample(body, `nacflow_velero_backup_queue_depth`)
	c.Check(ok, Equals, true)
}

// sample returns the value of the series (name{labels} as Prometheus'
// text format writes it) in a metrics page.
func sample(page, series string) (float64, bool) { return e2estack.Sample(page, series) }

// TestDocExamples: every YAML object in the docs (README.md, docs/*.md)
// applies to the real API server (server-side dry run), every Blueprint in
// them passes `nac blueprint validate`, and every examples/ file a doc
// command names exists.
func (s *E2ESuite) TestDocExamples(c *C) {
	docs, err := filepath.Glob(filepath.Join(s.root, "docs", "*.md"))
	c.Assert(err, IsNil)
	docs = append(docs, filepath.Join(s.root, "README.md"))
	fence := regexp.MustCompile("(?s)```(yaml|sh)\n(.*?)```")
	example := regexp.MustCompile(`examples/[A-Za-z0-9_./-]+\.yaml`)
	applied := 0
	for _, doc := range docs {
		data, err := os.ReadFile(doc)
		c.Assert(err, IsNil)
		for _, m := range fence.FindAllStringSubmatch(string(data), -1) {
			lang, body := m[1], m[2]
			if lang == "sh" {
				for _, f := range example.FindAllString(body, -1) {
					_, err := os.Stat(filepath.Join(s.root, f))
					c.Check(err, IsNil, Commentf("%s names %s", filepath.Base(doc), f))
				}
				continue
			}
			if !strings.Contains(body, "apiVersion:") {
				continue
			}
			out, err := s.runKubectl(body, "apply", "--dry-run=server", "-f", "-")
			c.Check(err, IsNil, Commentf("%s:\n%s\n%s", filepath.Base(doc), body, out))
			c.Check(out, Matches, `(?s).* (created|configured|unchanged) \(server dry run\)\n`, Commentf("%s: %s", filepath.Base(doc), out))
			applied++
			if strings.Contains(body, "kind: Blueprint") {
				validate := exec.Command(filepath.Join(s.bin, "nac"), "blueprint", "validate", "-f", "-")
				validate.Stdin = strings.NewReader(body)
				vout, err := validate.CombinedOutput()
				c.Check(err, IsNil, Commentf("%s: nac blueprint validate: %s", filepath.Base(doc), vout))
			}
		}
	}
	c.Check(applied >= 5, Equals, true, Commentf("%d YAML examples found in the docs", applied))
}

// TestExamplesApply: every example applies cleanly (server-side dry run,
// so nothing is created).
func (s *E2ESuite) TestExamplesApply(c *C) {
	files, err := filepath.Glob(filepath.Join(s.root, "examples", "*.yaml"))
	c.Assert(err, IsNil)
	more, err := filepath.Glob(filepath.Join(s.root, "examples", "*", "*.yaml"))
	c.Assert(err, IsNil)
	files = append(files, more...)
	c.Assert(len(files) >= 4, Equals, true, Commentf("%v", files))
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue // an overlay: TestVeleroNamespaceOverlay renders it
		}
		out := s.kubectl(c, "apply", "--dry-run=server", "-f", f)
		c.Check(out, Matches, `(?s).* (created|configured|unchanged) \(server dry run\)\n`, Commentf(f))
	}
}

// TestVeleroNamespaceOverlay: the overlay for upstream Velero's "velero"
// namespace renders with kubectl's kustomize, puts every namespaced object
// in "velero" (nothing is left in openshift-adp), tells the controller so,
// and applies to the real API server (server-side dry run).
func (s *E2ESuite) TestVeleroNamespaceOverlay(c *C) {
	out, err := exec.Command("kubectl", "kustomize", filepath.Join(s.root, "examples", "velero-namespace")).CombinedOutput()
	c.Assert(err, IsNil, Commentf("%s", out))
	rendered := string(out)
	c.Check(strings.Contains(rendered, "openshift-adp"), Equals, false, Commentf("an object is left in openshift-adp"))
	c.Check(rendered, Matches, `(?s).*kind: Deployment\n.*  name: nacflow-controller\n  namespace: velero\n.*- --oadp-namespace=velero\n.*`)
	c.Check(rendered, Matches, `(?s).*kind: ClusterRoleBinding\n.*subjects:\n- kind: ServiceAccount\n  name: nacflow\n  namespace: velero\n.*`)
	if _, err := s.runKubectl("", "get", "namespace", "velero"); err != nil {
		s.kubectl(c, "create", "namespace", "velero")
	}
	applied := s.kubectlIn(c, rendered, "apply", "--dry-run=server", "-f", "-")
	c.Check(applied, Matches, `(?s).*deployment.apps/nacflow-controller (created|configured|unchanged) \(server dry run\)\n.*`)
}

func (s *E2ESuite) TestInvalidExample(c *C) {
	s.kubectl(c, "apply", "-f", "examples/nonadminbackup-invalid.yaml")
	e2estack.Eventually(c, 10*time.Second, func() (bool, string) {
		out := s.kubectl(c, "get", "nab", "-n", "demo", "other-namespace",
			"-o", `jsonpath={.status.phase}|{.status.conditions[?(@.type=="Accepted")].status}|{.status.conditions[?(@.type=="Accepted")].message}`)
		return out == `BackingOff|False|spec.backupSpec.includedNamespaces can not contain namespaces other than: demo (found "openshift-adp")`, out
	})
	d := s.kubectl(c, "describe", "nab", "-n", "demo", "other-namespace")
	c.Check(e2estack.InOrder(d, "Warning", "PhaseFailed", "spec.backupSpec.includedNamespaces", "Warning", "ActionFailed"), Equals, true, Commentf(d))
	uid := s.kubectl(c, "get", "nab", "-n", "demo", "other-namespace", "-o", "jsonpath={.metadata.uid}")
	c.Check(uid, Not(Equals), "")
	all := s.kubectl(c, "get", "backups.velero.io", "-n", "openshift-adp", "-o",
		`jsonpath={range .items[*]}{.metadata.annotations.openshift\.io/oadp-nab-origin-name}{"\n"}{end}`)
	c.Check(strings.Contains(all, "other-namespace"), Equals, false, Commentf("no Velero Backup for the invalid NAB: %s", all))

	// The controller keeps serving other NABs.
	s.kubectlIn(c, "apiVersion: oadp.openshift.io/v1alpha1\nkind: NonAdminBackup\nmetadata:\n  name: after-invalid\n  namespace: demo\nspec:\n  backupSpec: {}\n",
		"apply", "-f", "-")
	e2estack.Eventually(c, 10*time.Second, func() (bool, string) {
		out := s.kubectl(c, "get", "nab", "-n", "demo", "after-invalid", "-o", "jsonpath={.status.phase}")
		return out == "Created", out
	})
}

// TestVeleroKeepsCredentialsInItsStack: Velero writes the locations'
// credentials under its own TMPDIR in the stack's directory, not the
// machine's /tmp, where stacks side by side (make test's packages, or make
// run beside make test) overwrote each other's files under the same OADP
// namespace: a restore failed with "no EC2 IMDS role found" when its plugin
// read a file another Velero was rewriting.
func (s *E2ESuite) TestVeleroKeepsCredentialsInItsStack(c *C) {
	own := filepath.Join(s.dir, "velero-tmp", "credentials", "openshift-adp", "cloud-credentials-cloud")
	e2estack.Eventually(c, 30*time.Second, func() (bool, string) {
		_, err := os.Stat(own)
		return err == nil, fmt.Sprintf("the default location's credentials: %v", err)
	})
	data, err := os.ReadFile(own)
	c.Assert(err, IsNil)
	c.Check(string(data), Matches, `(?s)\[default\]\naws_access_key_id=nacflow\n.*`)
}
