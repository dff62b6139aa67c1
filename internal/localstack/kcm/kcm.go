// Package kcm runs kube-controller-manager next to an envtest control plane
// (a real kube-apiserver and etcd), so that the local cluster of make run,
// the integration suite and the e2e stack behaves like a real one: namespaces
// finish deleting, ClusterRole aggregation fills admin/edit/view,
// owner-reference garbage collection runs, ServiceAccounts and their tokens
// exist. envtest starts no controller manager of its own.
package kcm

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nacflow/nacflow/internal/localstack/childproc"
)

// Binary is the file name of kube-controller-manager in the assets
// directory (bin/, built by make from the Kubernetes release of
// kube-apiserver).
const Binary = "kube-controller-manager"

// serviceAccountKey is the private key envtest's kube-apiserver verifies
// service account tokens with (its --service-account-key-file pair, in its
// certificate directory).
const serviceAccountKey = "sa-signer.key"

// Args prepares, in dir, what kube-controller-manager needs to run against
// env's started kube-apiserver — a kubeconfig of a system:masters user and
// the API server's CA — and returns its arguments: every controller a
// default cluster runs (--controllers=*: namespace, garbage collector,
// clusterrole aggregation, service account and token controllers, …), the
// service account key shared with kube-apiserver, no leader election, and
// its secure port bound to loopback on a free port (returned as addr,
// "127.0.0.1:PORT", for Healthy). Errors: env not started, files that
// cannot be written, no free port.
func Args(env *envtest.Environment, dir string) (args []string, addr string, err error) {
	api := env.ControlPlane.APIServer
	if api == nil || api.CertDir == "" {
		return nil, "", fmt.Errorf("kube-controller-manager: the control plane is not started")
	}
	user, err := env.AddUser(envtest.User{Name: "system:kube-controller-manager", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, "", fmt.Errorf("kube-controller-manager: creating its user: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return nil, "", fmt.Errorf("kube-controller-manager: rendering its kubeconfig: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	kc, ca := filepath.Join(dir, "kube-controller-manager.kubeconfig"), filepath.Join(dir, "kube-controller-manager-ca.crt")
	if err := os.WriteFile(kc, kubeconfig, 0o600); err != nil {
		return nil, "", err
	}
	if err := os.WriteFile(ca, api.SecureServing.CA, 0o644); err != nil {
		return nil, "", err
	}
	port, err := childproc.FreePort()
	if err != nil {
		return nil, "", fmt.Errorf("kube-controller-manager: finding a port: %w", err)
	}
	addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	return []string{
		"--kubeconfig=" + kc,
		"--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--controllers=*",
		"--leader-elect=false",
		"--service-account-private-key-file=" + filepath.Join(api.CertDir, serviceAccountKey),
		"--root-ca-file=" + ca,
		"--use-service-account-credentials=false",
		"--cert-dir=" + filepath.Join(dir, "kube-controller-manager-certs"),
	}, addr, nil
}

// Healthy waits until kube-controller-manager answers ok on
// https://addr/healthz (an always-allowed path; its serving certificate is
// self-signed) and returns nil, or returns an error after timeout, when
// exited reports the process gone, or when ctx ends.
func Healthy(ctx context.Context, addr string, timeout time.Duration, exited func() (error, bool)) error {
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback, self-signed: only its liveness is read
	}}
	deadline := time.Now().Add(timeout)
	for {
		resp, err := client.Get("https://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("healthz answered %s", resp.Status)
		}
		if exitErr, gone := exited(); gone {
			return fmt.Errorf("kube-controller-manager exited: %v", exitErr)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-controller-manager not healthy within %s: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Start runs assets/kube-controller-manager (Args) against env, its output
// appended to dir/kube-controller-manager.log, and returns once it is
// healthy (within 60 s). On Linux it is killed when the calling thread's
// process dies (childproc.SysProcAttr). Errors: those of Args, a missing
// binary, and Healthy's (the process is then stopped).
func Start(ctx context.Context, env *envtest.Environment, assets, dir string) (*childproc.Process, error) {
	args, addr, err := Args(env, dir)
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(assets, Binary)
	p, err := childproc.Start(Binary, filepath.Join(dir, "kube-controller-manager.log"), nil, bin, args...)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	if err := Healthy(ctx, addr, time.Minute, p.Exited); err != nil {
		p.Stop(time.Second)
		return nil, err
	}
	return p, nil
}
