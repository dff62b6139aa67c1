package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	. "gopkg.in/check.v1"
)

func Test(t *testing.T) { TestingT(t) }

// The chart against config/default: what the generator writes is what is
// committed, helm lints it, and helm's rendering with default values is
// kustomize's (modulo Helm's labels), each value changing what it says.
type chartSuite struct {
	helm      string
	root      string
	kustomize []Object
}

var _ = Suite(&chartSuite{})

func (s *chartSuite) SetUpSuite(c *C) {
	s.root = filepath.Join("..", "..")
	assets := os.Getenv("NACFLOW_ASSETS")
	if assets == "" {
		assets = filepath.Join(s.root, "bin")
	}
	s.helm = filepath.Join(assets, "helm")
	if _, err := os.Stat(s.helm); err != nil {
		c.Fatalf("helm not found in %s: run the tests with `make test`, which builds it", assets)
	}
	out := s.run(c, "kubectl", "kustomize", filepath.Join(s.root, "config", "default"))
	var err error
	s.kustomize, err = Decode(bytes.NewReader(out))
	c.Assert(err, IsNil)
	c.Assert(len(s.kustomize) > 10, Equals, true, Commentf("kustomize rendered %d objects", len(s.kustomize)))
}

func (s *chartSuite) run(c *C, name string, args ...string) []byte {
	cmd := exec.Command(name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	c.Assert(err, IsNil, Commentf("%s %s: %s", name, strings.Join(args, " "), stderr.String()))
	return out
}

// render runs helm template on the chart with args (--set ... , -n ...) and
// returns its objects by kind/namespace/name.
func (s *chartSuite) render(c *C, args ...string) map[string]Object {
	all := append([]string{"template", "nacflow", filepath.Join(s.root, "charts", "nacflow"), "--include-crds"}, args...)
	if !contains(args, "-n") {
		all = append(all, "-n", "openshift-adp")
	}
	objs, err := Decode(bytes.NewReader(s.run(c, s.helm, all...)))
	c.Assert(err, IsNil)
	return byKey(c, objs)
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func key(o Object) string {
	return o.str("kind") + "/" + o.str("metadata", "namespace") + "/" + o.str("metadata", "name")
}

func byKey(c *C, objs []Object) map[string]Object {
	m := map[string]Object{}
	for _, o := range objs {
		_, dup := m[key(o)]
		c.Assert(dup, Equals, false, Commentf("%s twice", key(o)))
		m[key(o)] = o
	}
	return m
}

func container(c *C, objs map[string]Object, namespace string) map[string]any {
	d, ok := objs["Deployment/"+namespace+"/nacflow-controller"]
	c.Assert(ok, Equals, true, Commentf("no Deployment nacflow-controller in %s among %v", namespace, sortedKeys(objs)))
	containers := lookup(map[string]any(d), "spec", "template", "spec", "containers").([]any)
	c.Assert(containers, HasLen, 1)
	return containers[0].(map[string]any)
}

func args(c *C, ctr map[string]any) []string {
	var out []string
	for _, a := range ctr["args"].([]any) {
		out = append(out, a.(string))
	}
	return out
}

func (s *chartSuite) TestGeneratedChartIsCommitted(c *C) {
	files, err := Generate(s.kustomize)
	c.Assert(err, IsNil)
	dir := filepath.Join(s.root, "charts", "nacflow")
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		c.Assert(err, IsNil, Commentf("run make chart"))
		c.Check(string(got), Equals, string(want), Commentf("%s is stale: run make chart", name))
	}
	// Nothing generated on disk that config/ no longer has.
	crds, err := os.ReadDir(filepath.Join(dir, "crds"))
	c.Assert(err, IsNil)
	for _, e := range crds {
		_, ok := files["crds/"+e.Name()]
		c.Check(ok, Equals, true, Commentf("crds/%s is not generated from config/: run make chart", e.Name()))
	}
	templates, err := os.ReadDir(filepath.Join(dir, "templates"))
	c.Assert(err, IsNil)
	for _, e := range templates {
		b, err := os.ReadFile(filepath.Join(dir, "templates", e.Name()))
		c.Assert(err, IsNil)
		if bytes.HasPrefix(b, []byte(GeneratedHeader)) {
			_, ok := files["templates/"+e.Name()]
			c.Check(ok, Equals, true, Commentf("templates/%s is not generated from config/: run make chart", e.Name()))
		}
	}
}

func (s *chartSuite) TestLint(c *C) {
	out := s.run(c, s.helm, "lint", "--strict", filepath.Join(s.root, "charts", "nacflow"))
	c.Check(string(out), Matches, "(?s).*1 chart\\(s\\) linted, 0 chart\\(s\\) failed.*")
}

// normalize drops what the chart adds to config/'s objects and no API
// server would tell apart: Helm's labels, and imagePullPolicy IfNotPresent
// (the default for a tagged image). The manager's arguments are sorted: the
// chart renders its flags map in key order, and Go's flag package does not
// care.
func normalize(o Object) Object {
	o = deepCopy(map[string]any(o)).(map[string]any)
	meta := o["metadata"].(map[string]any)
	if labels, ok := meta["labels"].(map[string]any); ok {
		for _, k := range HelmLabels {
			delete(labels, k)
		}
		if len(labels) == 0 {
			delete(meta, "labels")
		}
	}
	if o.str("kind") == "Deployment" {
		for _, ctr := range lookup(map[string]any(o), "spec", "template", "spec", "containers").([]any) {
			ctr := ctr.(map[string]any)
			if ctr["imagePullPolicy"] == "IfNotPresent" {
				delete(ctr, "imagePullPolicy")
			}
			if a, ok := ctr["args"].([]any); ok {
				sort.Slice(a, func(i, j int) bool { return fmt.Sprint(a[i]) < fmt.Sprint(a[j]) })
			}
		}
	}
	return o
}

func (s *chartSuite) TestDefaultsRenderConfigDefault(c *C) {
	rendered := s.render(c)
	want := byKey(c, s.kustomize)
	c.Assert(sortedKeys(rendered), DeepEquals, sortedKeys(want))
	for k, o := range rendered {
		// Every object carries Helm's labels before they are dropped.
		c.Check(o.str("metadata", "labels", "app.kubernetes.io/managed-by") == "Helm" || o.str("kind") == "CustomResourceDefinition",
			Equals, true, Commentf("%s has no Helm labels", k))
		c.Check(normalize(o), DeepEquals, normalize(want[k]), Commentf("%s differs from config/default", k))
	}
}

func (s *chartSuite) TestImageFromValues(c *C) {
	ctr := container(c, s.render(c, "--set", "image.repository=registry.example.com/nac", "--set", "image.tag=v9.8.7",
		"--set", "image.pullPolicy=Always"), "openshift-adp")
	c.Check(ctr["image"], Equals, "registry.example.com/nac:v9.8.7")
	c.Check(ctr["imagePullPolicy"], Equals, "Always")

	// No tag: the chart's appVersion, which is config/'s tag.
	ctr = container(c, s.render(c, "--set", "image.tag="), "openshift-adp")
	c.Check(ctr["image"], Equals, "ghcr.io/nacflow/nacflow:v0.1.0")
}

func (s *chartSuite) TestNamespace(c *C) {
	for _, args := range [][]string{
		{"-n", "velero"},
		{"-n", "default", "--set", "oadpNamespace=velero"},
	} {
		objs := s.render(c, args...)
		container(c, objs, "velero")
		for k, o := range objs {
			ns := o.str("metadata", "namespace")
			c.Check(ns == "" || ns == "velero", Equals, true, Commentf("%v: %s in %q", args, k, ns))
			if subjects, ok := o["subjects"].([]any); ok {
				for _, sub := range subjects {
					c.Check(sub.(map[string]any)["namespace"], Equals, "velero", Commentf("%v: %s", args, k))
				}
			}
		}
		_, ok := objs["RoleBinding/velero/nacflow-manager"]
		c.Check(ok, Equals, true, Commentf("%v", args))
	}
}

func (s *chartSuite) TestTenantRolesToggle(c *C) {
	on := s.render(c)
	off := s.render(c, "--set", "tenantRoles.enabled=false")
	for _, name := range []string{"nacflow-tenant-edit", "nacflow-tenant-view"} {
		_, inOn := on["ClusterRole//"+name]
		_, inOff := off["ClusterRole//"+name]
		c.Check(inOn, Equals, true, Commentf(name))
		c.Check(inOff, Equals, false, Commentf(name))
	}
	c.Check(len(on)-len(off), Equals, 2)
	_, manager := off["ClusterRole//nacflow-manager"]
	c.Check(manager, Equals, true)
}

func (s *chartSuite) TestServiceMonitor(c *C) {
	_, present := s.render(c)["ServiceMonitor/openshift-adp/nacflow-metrics"]
	c.Check(present, Equals, false)

	objs := s.render(c, "--set", "monitoring.serviceMonitor.enabled=true", "--set", "monitoring.serviceMonitor.interval=30s",
		"--set", "monitoring.serviceMonitor.labels.release=prom")
	sm, ok := objs["ServiceMonitor/openshift-adp/nacflow-metrics"]
	c.Assert(ok, Equals, true, Commentf("%v", sortedKeys(objs)))
	c.Check(sm.str("apiVersion"), Equals, "monitoring.coreos.com/v1")
	c.Check(sm.str("metadata", "labels", "release"), Equals, "prom")
	// It selects the metrics Service by that Service's own labels and port.
	svc := objs["Service/openshift-adp/nacflow-metrics"]
	selector := lookup(map[string]any(sm), "spec", "selector", "matchLabels").(map[string]any)
	c.Assert(selector, Not(HasLen), 0)
	for k, v := range selector {
		c.Check(svc.str("metadata", "labels", k), Equals, v, Commentf("label %s", k))
	}
	endpoint := lookup(map[string]any(sm), "spec", "endpoints").([]any)[0].(map[string]any)
	port := lookup(map[string]any(svc), "spec", "ports").([]any)[0].(map[string]any)
	c.Check(endpoint["port"], Equals, port["name"])
	c.Check(endpoint["scheme"], Equals, "https")
	c.Check(endpoint["interval"], Equals, "30s")
	c.Check(lookup(endpoint, "tlsConfig", "insecureSkipVerify"), Equals, true)
	c.Check(lookup(map[string]any(sm), "spec", "namespaceSelector", "matchNames"), DeepEquals, []any{"openshift-adp"})
	checkScrapeAuth(c, objs, endpoint)
}

// checkScrapeAuth checks a monitor endpoint's token (authorization, from the
// Secret of the ServiceAccount the chart binds to nacflow-metrics-reader) and
// that the tenants' namespace label survives the scrape (honorLabels).
func checkScrapeAuth(c *C, objs map[string]Object, endpoint map[string]any) {
	c.Check(endpoint["honorLabels"], Equals, true)
	c.Check(endpoint["bearerTokenFile"], IsNil)
	c.Check(lookup(endpoint, "authorization", "type"), Equals, "Bearer")
	c.Check(lookup(endpoint, "authorization", "credentials", "name"), Equals, "nacflow-metrics-scraper-token")
	c.Check(lookup(endpoint, "authorization", "credentials", "key"), Equals, "token")
	secret, ok := objs["Secret/openshift-adp/nacflow-metrics-scraper-token"]
	c.Assert(ok, Equals, true, Commentf("%v", sortedKeys(objs)))
	c.Check(secret.str("type"), Equals, "kubernetes.io/service-account-token")
	c.Check(secret.str("metadata", "annotations", "kubernetes.io/service-account.name"), Equals, "nacflow-metrics-scraper")
	_, ok = objs["ServiceAccount/openshift-adp/nacflow-metrics-scraper"]
	c.Check(ok, Equals, true)
	binding, ok := objs["ClusterRoleBinding//nacflow-metrics-scraper"]
	c.Assert(ok, Equals, true, Commentf("%v", sortedKeys(objs)))
	c.Check(binding.str("roleRef", "name"), Equals, "nacflow-metrics-reader")
	_, ok = objs["ClusterRole//nacflow-metrics-reader"]
	c.Check(ok, Equals, true)
}

func (s *chartSuite) TestPodMonitor(c *C) {
	_, present := s.render(c)["PodMonitor/openshift-adp/nacflow-controller"]
	c.Check(present, Equals, false)

	objs := s.render(c, "--set", "monitoring.podMonitor.enabled=true", "--set", "monitoring.podMonitor.labels.release=prom")
	pm, ok := objs["PodMonitor/openshift-adp/nacflow-controller"]
	c.Assert(ok, Equals, true, Commentf("%v", sortedKeys(objs)))
	c.Check(pm.str("apiVersion"), Equals, "monitoring.coreos.com/v1")
	c.Check(pm.str("metadata", "labels", "release"), Equals, "prom")
	// It selects the controller's pods by their labels, and their metrics
	// container port by name.
	d := objs["Deployment/openshift-adp/nacflow-controller"]
	selector := lookup(map[string]any(pm), "spec", "selector", "matchLabels").(map[string]any)
	c.Assert(selector, Not(HasLen), 0)
	for k, v := range selector {
		c.Check(lookup(map[string]any(d), "spec", "template", "metadata", "labels", k), Equals, v, Commentf("label %s", k))
	}
	endpoint := lookup(map[string]any(pm), "spec", "podMetricsEndpoints").([]any)[0].(map[string]any)
	var ports []any
	for _, p := range container(c, objs, "openshift-adp")["ports"].([]any) {
		ports = append(ports, p.(map[string]any)["name"])
	}
	c.Check(ports, DeepEquals, []any{"metrics", "probes", "webhook"})
	c.Check(endpoint["port"], Equals, "metrics")
	c.Check(endpoint["scheme"], Equals, "https")
	c.Check(lookup(endpoint, "tlsConfig", "insecureSkipVerify"), Equals, true)
	checkScrapeAuth(c, objs, endpoint)

	// A token of the admin's own: nothing made for it.
	objs = s.render(c, "--set", "monitoring.podMonitor.enabled=true", "--set", "monitoring.scrapeToken.create=false",
		"--set", "monitoring.scrapeToken.secretName=prom-token", "--set", "monitoring.scrapeToken.key=jwt")
	endpoint = lookup(map[string]any(objs["PodMonitor/openshift-adp/nacflow-controller"]), "spec", "podMetricsEndpoints").([]any)[0].(map[string]any)
	c.Check(lookup(endpoint, "authorization", "credentials", "name"), Equals, "prom-token")
	c.Check(lookup(endpoint, "authorization", "credentials", "key"), Equals, "jwt")
	for _, k := range []string{"Secret/openshift-adp/nacflow-metrics-scraper-token", "ServiceAccount/openshift-adp/nacflow-metrics-scraper", "ClusterRoleBinding//nacflow-metrics-scraper"} {
		_, present = objs[k]
		c.Check(present, Equals, false, Commentf(k))
	}
	// No token at all is refused.
	out, err := exec.Command(s.helm, "template", "nacflow", filepath.Join(s.root, "charts", "nacflow"),
		"--set", "monitoring.podMonitor.enabled=true", "--set", "monitoring.scrapeToken.create=false").CombinedOutput()
	c.Check(err, NotNil)
	c.Check(string(out), Matches, "(?s).*monitoring.scrapeToken.secretName.*")
}

// The dashboards' ConfigMaps hold hack/dashboards' JSON as it is: Helm
// renders none of its Grafana legends ({{namespace}}).
func (s *chartSuite) TestDashboards(c *C) {
	for k := range s.render(c) {
		c.Check(strings.HasPrefix(k, "ConfigMap/"), Equals, false, Commentf(k))
	}
	objs := s.render(c, "--set", "monitoring.dashboards.enabled=true", "--set", "monitoring.dashboards.namespace=grafana",
		"--set", "monitoring.dashboards.annotations.grafana_folder=nacflow")
	for _, name := range []string{"admin", "tenant"} {
		cm, ok := objs["ConfigMap/grafana/nacflow-dashboard-"+name]
		c.Assert(ok, Equals, true, Commentf("%v", sortedKeys(objs)))
		c.Check(cm.str("metadata", "labels", "grafana_dashboard"), Equals, "1")
		c.Check(cm.str("metadata", "annotations", "grafana_folder"), Equals, "nacflow")
		want, err := os.ReadFile(filepath.Join(s.root, "config", "monitoring", "dashboards", "nacflow-"+name+".json"))
		c.Assert(err, IsNil)
		got := cm.str("data", "nacflow-"+name+".json")
		c.Check(got, Equals, strings.TrimSuffix(string(want), "\n"))
		c.Check(strings.Contains(got, "{{"), Equals, true, Commentf("the dashboard's legends are gone"))
	}
}

func (s *chartSuite) TestFlagsAndLeaderElection(c *C) {
	got := args(c, container(c, s.render(c), "openshift-adp"))
	c.Check(contains(got, "--leader-elect"), Equals, true, Commentf("%v", got))
	c.Check(contains(got, "--zap-encoder=json"), Equals, true, Commentf("%v", got))

	ctr := container(c, s.render(c, "--set", "leaderElection.enabled=false", "--set", "flags.wait-timeout=30m",
		"--set", "flags.zap-encoder=null", "--set", "flags.endpoint-deny-cidrs={10.0.0.0/8,192.168.0.0/16}",
		"--set", "extraArgs={--zap-log-level=debug}", "--set", "resources.limits.memory=1Gi"), "openshift-adp")
	got = args(c, ctr)
	c.Check(got, DeepEquals, []string{
		"--metrics-bind-address=:8090",
		"--health-probe-bind-address=:8091",
		"--endpoint-deny-cidrs=10.0.0.0/8",
		"--endpoint-deny-cidrs=192.168.0.0/16",
		"--wait-timeout=30m",
		"--webhook-port=9443",
		"--zap-log-level=debug",
	})
	c.Check(lookup(ctr, "resources", "limits", "memory"), Equals, "1Gi")
	c.Check(lookup(ctr, "resources", "requests", "memory"), Equals, "128Mi")

	// A values file's numbers and booleans are written as written.
	values := filepath.Join(c.MkDir(), "values.yaml")
	c.Assert(os.WriteFile(values, []byte("flags:\n  kube-api-qps: 1000000\n  event-qps: 0.5\n  restore-precheck: false\n"), 0o644), IsNil)
	got = args(c, container(c, s.render(c, "-f", values), "openshift-adp"))
	for _, want := range []string{"--kube-api-qps=1000000", "--event-qps=0.5", "--restore-precheck=false", "--zap-encoder=json"} {
		c.Check(contains(got, want), Equals, true, Commentf("%s not in %v", want, got))
	}
}

// values.schema.json refuses values the templates would render wrong.
func (s *chartSuite) TestSchemaRefuses(c *C) {
	for _, set := range []string{"tenantRoles.enabled=no", "flags.Bad_Flag=1", "typo=1", "image.pullPolicy=Sometimes", "replicaCount=one",
		"monitoring.podMonitor.enable=true", "monitoring.dashboards.labelValue=null", "monitoring.scrapeToken.key="} {
		cmd := exec.Command(s.helm, "template", "nacflow", filepath.Join(s.root, "charts", "nacflow"), "--set", set)
		out, err := cmd.CombinedOutput()
		c.Check(err, NotNil, Commentf(set))
		c.Check(string(out), Matches, "(?s).*values don't meet the specifications of the schema.*", Commentf(set))
	}
}

func (s *chartSuite) TestScheduling(c *C) {
	objs := s.render(c, "--set", "nodeSelector.kubernetes\\.io/os=linux", "--set", "imagePullSecrets[0].name=regcred",
		"--set", "replicaCount=2")
	d := map[string]any(objs["Deployment/openshift-adp/nacflow-controller"])
	c.Check(lookup(d, "spec", "template", "spec", "nodeSelector", "kubernetes.io/os"), Equals, "linux")
	c.Check(lookup(d, "spec", "template", "spec", "imagePullSecrets"), DeepEquals, []any{map[string]any{"name": "regcred"}})
	c.Check(fmt.Sprint(lookup(d, "spec", "replicas")), Equals, "2")
}

// The generator refuses config/ it cannot turn into the chart's values.
type generateSuite struct{}

var _ = Suite(&generateSuite{})

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: nacflow-controller, namespace: ns}
spec:
  template:
    spec:
      containers:
      - name: manager
        image: example.com/nac:v1.2.3
        args: [--leader-elect, --metrics-bind-address=:8090, --a=1, --b]
`

func decode(c *C, src string) []Object {
	objs, err := Decode(strings.NewReader(src))
	c.Assert(err, IsNil)
	return objs
}

func (s *generateSuite) TestRefuses(c *C) {
	for _, t := range []struct{ src, err string }{
		{"apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: a, namespace: ns}\n", "no Deployment.*"},
		{deployment + "---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {name: a, namespace: other}\n", "objects in two namespaces.*"},
		{deployment + "---\n" + strings.Replace(deployment, "nacflow-controller", "second", 1), "two Deployments.*"},
		{strings.Replace(deployment, "image: example.com/nac:v1.2.3", "image: example.com/nac:v1\n        imagePullPolicy: Always", 1), ".*imagePullPolicy is set.*"},
		{strings.Replace(deployment, "example.com/nac:v1.2.3", "example.com/nac", 1), `.*image "example.com/nac" is not repository:tag`},
		{strings.Replace(deployment, "--a=1", "--a=1, --a=2", 1), ".*flag --a given twice.*"},
		{strings.Replace(deployment, "--a=1", "plain", 1), `.*argument "plain" is not a --flag`},
		{strings.Replace(deployment, "name: manager", "name: other", 1), ".*no container named manager"},
		{strings.Replace(deployment, "namespace: ns}", "namespace: ns, labels: {helm.sh/chart: x}}", 1), ".*label helm.sh/chart is set by config/.*"},
	} {
		_, err := Generate(decode(c, t.src))
		c.Check(err, ErrorMatches, t.err)
	}
}

func (s *generateSuite) TestValuesFromDeployment(c *C) {
	files, err := Generate(decode(c, deployment))
	c.Assert(err, IsNil)
	values := string(files["values.yaml"])
	for _, want := range []string{"repository: example.com/nac\n", "tag: v1.2.3\n", "  enabled: true\n", "flags:\n  a: \"1\"\n  b: \"true\"\n"} {
		c.Check(strings.Contains(values, want), Equals, true, Commentf("values.yaml lacks %q:\n%s", want, values))
	}
	c.Check(strings.Contains(string(files["Chart.yaml"]), "\nversion: 1.2.3\nappVersion: v1.2.3\n"), Equals, true, Commentf("%s", files["Chart.yaml"]))
	tmpl := string(files["templates/deployment-nacflow-controller.yaml"])
	c.Check(strings.Contains(tmpl, `- "--metrics-bind-address=:8090"`), Equals, true, Commentf(tmpl))
	c.Check(strings.Contains(tmpl, "--a="), Equals, false, Commentf(tmpl))
	c.Check(strings.Contains(tmpl, "HELMPLACEHOLDER"), Equals, false, Commentf(tmpl))
}
