package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/internal/localstack/childproc"
)

// Names of what the stack creates in the OADP namespace, as an OADP install
// would: the credentials Secret of the default BSL, the BSL, and the
// placeholder Deployment Velero's restore path looks up. bucket is the
// default location's bucket, created by the store at its start.
const (
	credentialsSecret = "cloud-credentials"
	credentialsKey    = "cloud"
	bucket            = "velero"
	bslName           = "default"
)

// locationTimeout is how long after Velero's start the default location
// may take to become Available before localcp gives up.
const locationTimeout = 60 * time.Second

// proc is a child process of localcp (childproc: own process group,
// killed when localcp dies, on Linux).
type proc struct{ *childproc.Process }

// startProc starts bin with args and env, output appended to logPath.
func startProc(name, logPath string, env []string, bin string, args ...string) (*proc, error) {
	p, err := childproc.Start(name, logPath, env, bin, args...)
	if err != nil {
		return nil, fmt.Errorf("starting %s (%s): %w", name, bin, err)
	}
	return &proc{p}, nil
}

// stop sends SIGTERM, waits up to grace, then sends SIGKILL and waits for
// the exit. It reports a kill on stdout. A nil p is a no-op.
func (p *proc) stop(grace time.Duration) {
	if p == nil {
		return
	}
	if p.Stop(grace) {
		fmt.Printf("   %s did not stop within %s: killed\n", p.Name, grace)
	}
}

// waitTCP waits until addr accepts connections; it fails when p exits, after
// timeout, or when ctx ends (with ctx's error).
func waitTCP(ctx context.Context, p *proc, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if err, done := p.Exited(); done {
			return fmt.Errorf("%s exited: %v (see %s)", p.Name, err, p.LogPath())
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s did not listen on %s within %s (see %s)", p.Name, addr, timeout, p.LogPath())
}

// veleroConfig is what startVelero needs besides the control plane.
type veleroConfig struct {
	kubeconfig   string // the admin kubeconfig Velero uses
	assets       string // directory of gofakes3
	binDir       string // directory of velero (its wrapper on Linux)
	pluginDir    string // Velero's --plugin-dir (the plugins' wrappers on Linux)
	dir          string // logs (s3.log, velero.log) and the store's s3.db
	oadpNS       string
	tenantBucket string        // second bucket, for tenants' own locations
	syncPeriod   time.Duration // Velero's --backup-sync-period
	validation   time.Duration // Velero's --store-validation-frequency
	concurrent   int           // Velero's --concurrent-backups
}

// veleroStack is the S3-compatible store and the Velero server.
type veleroStack struct {
	s3, velero *proc
	s3URL      string
}

// stop stops Velero, then the store (a nil field is skipped), within
// veleroGrace + storeGrace.
func (s *veleroStack) stop() {
	if s.s3 == nil && s.velero == nil {
		return
	}
	fmt.Println(">> stopping Velero and the object store")
	s.velero.stop(veleroGrace)
	s.s3.stop(storeGrace)
}

// startVelero starts the object store (gofakes3 with a bolt file, so a
// run's backups survive a restart of the stack) with the buckets velero and
// cfg.tenantBucket, and the Velero server against the control plane of
// restCfg, after creating what Velero expects in the OADP namespace: the
// credentials Secret, the default BSL and a placeholder Deployment "velero".
// It returns once the BSL is Available. It fails, having stopped what it
// started, when the BSL is not
// Available within locationTimeout of Velero's start (the error carries
// Velero's reason and the fix), when a process exits, or with ctx's error
// when ctx ends.
func startVelero(ctx context.Context, restCfg *rest.Config, cfg veleroConfig) (_ *veleroStack, err error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, velerov1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	c, err := client.New(restCfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	s := &veleroStack{}
	defer func() {
		if err != nil {
			s.stop()
		}
	}()

	if s.s3, s.s3URL, err = startStore(ctx, cfg); err != nil {
		return nil, err
	}

	objs := []client.Object{
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: credentialsSecret, Namespace: cfg.oadpNS},
			StringData: map[string]string{credentialsKey: "[default]\naws_access_key_id=nacflow\naws_secret_access_key=nacflow-local\n"},
		},
		&velerov1.BackupStorageLocation{
			ObjectMeta: metav1.ObjectMeta{Name: bslName, Namespace: cfg.oadpNS},
			Spec: velerov1.BackupStorageLocationSpec{
				Provider:    "aws",
				Default:     true,
				StorageType: velerov1.StorageType{ObjectStorage: &velerov1.ObjectStorageLocation{Bucket: bucket}},
				Config:      map[string]string{"region": "us-east-1", "s3ForcePathStyle": "true", "s3Url": s.s3URL},
				Credential: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: credentialsSecret}, Key: credentialsKey,
				},
			},
		},
		placeholderDeployment(cfg.oadpNS),
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			return nil, fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}

	metricsPort, err := childproc.FreePort()
	if err != nil {
		return nil, err
	}
	// Velero writes every location's credential Secret to
	// $TMPDIR/credentials/<namespace>/<secret>-<key> (os.TempDir) and its
	// plugins read them there: with the machine's /tmp, two stacks side by
	// side (or make run beside make test) overwrite each other's files
	// under the same OADP namespace, and a plugin reading one mid-write
	// finds no credentials (the AWS SDK then asks EC2's metadata service).
	tmp := filepath.Join(cfg.dir, "velero-tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, err
	}
	s.velero, err = startProc("velero", filepath.Join(cfg.dir, "velero.log"), []string{"TMPDIR=" + tmp}, filepath.Join(cfg.binDir, "velero"),
		"server", "--kubeconfig", cfg.kubeconfig, "--namespace", cfg.oadpNS,
		"--plugin-dir", cfg.pluginDir, "--uploader-type", "kopia",
		"--profiler-address", "", "--metrics-address", fmt.Sprintf("127.0.0.1:%d", metricsPort),
		"--log-level", "info", "--backup-sync-period", cfg.syncPeriod.String(),
		"--store-validation-frequency", cfg.validation.String(), "--concurrent-backups", strconv.Itoa(max(cfg.concurrent, 1)))
	if err != nil {
		return nil, err
	}
	if err := waitAvailable(ctx, c, s.velero, cfg, time.Now().Add(locationTimeout)); err != nil {
		return nil, err
	}
	return s, nil
}

// startStore starts gofakes3 on a free loopback port with its bolt file
// DIR/s3.db and the bucket velero, waits up to 30s for it to listen, then
// creates cfg.tenantBucket (which may exist already from an earlier run). It
// returns the store and its URL; on error it has stopped the store.
func startStore(ctx context.Context, cfg veleroConfig) (_ *proc, url string, err error) {
	port, err := childproc.FreePort()
	if err != nil {
		return nil, "", err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	p, err := startProc("object store", filepath.Join(cfg.dir, "s3.log"), nil, filepath.Join(cfg.assets, "gofakes3"),
		"-host", addr, "-backend", "bolt", "-bolt.db", filepath.Join(cfg.dir, "s3.db"), "-initialbucket", bucket)
	if err != nil {
		return nil, "", err
	}
	defer func() {
		if err != nil {
			p.stop(storeGrace)
		}
	}()
	if err := waitTCP(ctx, p, addr, 30*time.Second); err != nil {
		return nil, "", err
	}
	url = "http://" + addr
	if err := createBucket(ctx, url, cfg.tenantBucket); err != nil {
		return nil, "", err
	}
	return p, url, nil
}

// createBucket creates bucket in the S3 store at url by a path-style PUT
// (the local store checks no signatures). A bucket that exists already is
// fine.
func createBucket(ctx context.Context, url, bucket string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, url+"/"+bucket, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("creating bucket %s: %w", bucket, err)
	}
	defer resp.Body.Close()
	body := make([]byte, 512)
	n, _ := resp.Body.Read(body)
	switch {
	case resp.StatusCode == http.StatusOK:
		return nil
	case resp.StatusCode == http.StatusConflict && strings.Contains(string(body[:n]), "BucketAlready"):
		return nil // BucketAlreadyExists / BucketAlreadyOwnedByYou: kept in s3.db from an earlier run
	default:
		return fmt.Errorf("creating bucket %s: %s: %s", bucket, resp.Status, body[:n])
	}
}

// waitAvailable polls the default BSL every 500ms until it is Available. The
// first time it reads Unavailable it prints Velero's message. It fails when
// velero exits, with ctx's error when ctx ends, and at deadline with Velero's
// reason (the BSL's status.message, or the lines of velero.log about the
// location when that is empty) and what to do about it.
func waitAvailable(ctx context.Context, c client.Client, velero *proc, cfg veleroConfig, deadline time.Time) error {
	warned := false
	bsl := &velerov1.BackupStorageLocation{}
	for {
		if err := c.Get(ctx, client.ObjectKey{Namespace: cfg.oadpNS, Name: bslName}, bsl); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("reading BackupStorageLocation %s: %w", bslName, err)
		}
		if bsl.Status.Phase == velerov1.BackupStorageLocationPhaseAvailable {
			return nil
		}
		if bsl.Status.Phase == velerov1.BackupStorageLocationPhaseUnavailable && !warned {
			warned = true
			fmt.Printf(">> the default BackupStorageLocation is Unavailable: %s\n   (waiting until %s after Velero's start for it to become Available)\n",
				orNone(bsl.Status.Message), locationTimeout)
		}
		if err, done := velero.Exited(); done {
			return fmt.Errorf("velero exited: %v (see %s)", err, velero.LogPath())
		}
		if time.Now().After(deadline) {
			return locationError(bsl, cfg)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// locationError explains why the default BSL is not Available: Velero's
// status.message (or, when it is empty, the last lines of velero.log that
// name the location) and the fix.
func locationError(bsl *velerov1.BackupStorageLocation, cfg veleroConfig) error {
	phase := string(bsl.Status.Phase)
	if phase == "" {
		phase = "not validated yet"
	}
	reason := bsl.Status.Message
	if reason == "" {
		reason = "Velero's log says:\n" + strings.Join(logLinesAbout(filepath.Join(cfg.dir, "velero.log"), cfg.oadpNS+"/"+bslName, 5), "\n")
	}
	state := displayPath(cfg.dir)
	fix := fmt.Sprintf("`make clean-local` removes the local state (%s), then `make run` again", state)
	if strings.Contains(reason, "invalid top-level directories") {
		fix = fmt.Sprintf("the object store in %s holds data that Velero does not accept in the default location's bucket; %s",
			filepath.Join(state, "s3.db"), fix)
	} else {
		fix = fmt.Sprintf("see %s; if the object store's data (%s) is the cause, %s",
			filepath.Join(state, "velero.log"), filepath.Join(state, "s3.db"), fix)
	}
	return fmt.Errorf("the default BackupStorageLocation %s/%s is not Available %s after Velero's start (phase %s): %s\n   %s",
		cfg.oadpNS, bslName, locationTimeout, phase, reason, fix)
}

// logLinesAbout returns the last n lines of the log at path that contain
// s, or a note when there are none or the log is unreadable.
func logLinesAbout(path, s string, n int) []string {
	f, err := os.Open(path)
	if err != nil {
		return []string{"   (" + err.Error() + ")"}
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		if strings.Contains(sc.Text(), s) {
			lines = append(lines, "   "+sc.Text())
		}
	}
	if len(lines) == 0 {
		return []string{"   (no line mentions " + s + ")"}
	}
	return lines[max(0, len(lines)-n):]
}

// displayPath returns path relative to the working directory when it lies
// below it (".local" for make run), else as it is.
func displayPath(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	if rel, err := filepath.Rel(wd, abs); err == nil && filepath.IsLocal(rel) {
		return rel
	}
	return path
}

// orNone returns s, or "(no message)" when it is empty.
func orNone(s string) string {
	if s == "" {
		return "(no message)"
	}
	return s
}

// placeholderDeployment is a Deployment named velero with no replicas:
// Velero's restore path reads it (for its own image) and fails without it.
func placeholderDeployment(ns string) *appsv1.Deployment {
	zero := int32(0)
	labels := map[string]string{"component": "velero", "deploy": "velero"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "velero", Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &zero,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "velero", Image: "velero/velero:v1.18.3",
				}}},
			},
		},
	}
}
