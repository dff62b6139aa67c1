package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Names of what the stack creates in the OADP namespace, as an OADP install
// would: the credentials Secret of the default BSL, the BSL, and the
// placeholder Deployment Velero's restore path looks up.
const (
	credentialsSecret = "cloud-credentials"
	credentialsKey    = "cloud"
	bucket            = "velero"
	bslName           = "default"
)

// proc is a child process with its log file.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
	done chan error
}

// startProc starts bin with args, output appended to logPath.
func startProc(name, logPath string, env []string, bin string, args ...string) (*proc, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), env...)
	// Its own process group: Ctrl-C reaches localcp, which stops children in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", name, bin, err)
	}
	p := &proc{name: name, cmd: cmd, log: log, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	return p, nil
}

// stop sends SIGTERM, waits up to grace, then kills.
func (p *proc) stop(grace time.Duration) {
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	p.log.Close()
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitTCP waits until addr accepts connections or p exits.
func waitTCP(p *proc, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-p.done:
			p.done <- err
			return fmt.Errorf("%s exited: %v (see %s)", p.name, err, p.log.Name())
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s did not listen on %s within %s (see %s)", p.name, addr, timeout, p.log.Name())
}

// veleroStack is the S3-compatible store and the Velero server.
type veleroStack struct {
	s3, velero *proc
	s3URL      string
}

// stop stops Velero, then the store.
func (s *veleroStack) stop() {
	s.velero.stop(20 * time.Second)
	s.s3.stop(10 * time.Second)
}

// startVelero starts the object store (gofakes3 with a bolt file, so a run's
// backups survive a restart of the stack) and the Velero server against the
// control plane of cfg, after creating what Velero expects in oadpNS: the
// credentials Secret, the default BSL and a placeholder Deployment "velero".
// syncPeriod is Velero's own --backup-sync-period (how soon Backups in the
// bucket reappear as objects after they were deleted). It returns once the
// BSL is Available.
func startVelero(ctx context.Context, cfg *rest.Config, kubeconfig, assets, dir, oadpNS string, syncPeriod time.Duration) (_ *veleroStack, err error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, velerov1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	s := &veleroStack{}
	defer func() {
		if err != nil {
			s.stop()
		}
	}()

	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	s.s3URL = "http://" + addr
	s.s3, err = startProc("object store", filepath.Join(dir, "s3.log"), nil, filepath.Join(assets, "gofakes3"),
		"-host", addr, "-backend", "bolt", "-bolt.db", filepath.Join(dir, "s3.db"), "-initialbucket", bucket)
	if err != nil {
		return nil, err
	}
	if err := waitTCP(s.s3, addr, 30*time.Second); err != nil {
		return nil, err
	}

	objs := []client.Object{
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: credentialsSecret, Namespace: oadpNS},
			StringData: map[string]string{credentialsKey: "[default]\naws_access_key_id=nacflow\naws_secret_access_key=nacflow-local\n"},
		},
		&velerov1.BackupStorageLocation{
			ObjectMeta: metav1.ObjectMeta{Name: bslName, Namespace: oadpNS},
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
		placeholderDeployment(oadpNS),
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			return nil, fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}

	metricsPort, err := freePort()
	if err != nil {
		return nil, err
	}
	s.velero, err = startProc("velero", filepath.Join(dir, "velero.log"), nil, filepath.Join(assets, "velero"),
		"server", "--kubeconfig", kubeconfig, "--namespace", oadpNS,
		"--plugin-dir", filepath.Join(assets, "plugins"), "--uploader-type", "kopia",
		"--profiler-address", "", "--metrics-address", fmt.Sprintf("127.0.0.1:%d", metricsPort),
		"--log-level", "info", "--backup-sync-period", syncPeriod.String())
	if err != nil {
		return nil, err
	}

	deadline := time.Now().Add(90 * time.Second)
	for {
		bsl := &velerov1.BackupStorageLocation{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: oadpNS, Name: bslName}, bsl); err != nil {
			return nil, err
		}
		if bsl.Status.Phase == velerov1.BackupStorageLocationPhaseAvailable {
			return s, nil
		}
		select {
		case err := <-s.velero.done:
			s.velero.done <- err
			return nil, fmt.Errorf("velero exited: %v (see %s)", err, s.velero.log.Name())
		default:
		}
		if time.Now().After(deadline) {
			return nil, errors.New("BackupStorageLocation default did not become Available within 90s (see " + s.velero.log.Name() + ")")
		}
		time.Sleep(500 * time.Millisecond)
	}
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
