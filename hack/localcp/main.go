// Command localcp runs nacflow's local control plane for `make run`: a real
// kube-apiserver and etcd (built into bin/ from the Go module proxy) started
// through controller-runtime's envtest package, with nacflow's and Velero's
// CRDs, the OADP namespace and a demo tenant namespace. It writes an admin
// kubeconfig, runs the command after "--" (the controller) in the
// foreground with KUBECONFIG set, and stops the control plane when that
// command exits or on Ctrl-C.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/vmware-tanzu/velero/config/crd/v1/crds"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

func main() {
	assets := flag.String("assets", "bin", "Directory holding the kube-apiserver and etcd binaries.")
	dir := flag.String("dir", ".local", "Directory for the kubeconfig (dir/kubeconfig).")
	crdDir := flag.String("crds", "config/crd/bases", "Directory of nacflow's CRD YAML.")
	oadpNS := flag.String("oadp-namespace", "openshift-adp", "OADP namespace to create.")
	tenantNS := flag.String("tenant-namespace", "demo", "Demo tenant namespace to create.")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: localcp [flags] -- CONTROLLER [ARGS...]\n\nFlags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if err := run(*assets, *dir, *crdDir, *oadpNS, *tenantNS, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "localcp:", err)
		os.Exit(1)
	}
}

func run(assets, dir, crdDir, oadpNS, tenantNS string, command []string) (err error) {
	if len(command) == 0 {
		return errors.New("no controller command given after --")
	}
	assets, _ = filepath.Abs(assets)
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{crdDir},
		CRDs:                  crds.CRDs,
		ErrorIfCRDPathMissing: true,
	}
	fmt.Println(">> starting kube-apiserver and etcd from", assets)
	cfg, err := env.Start()
	if err != nil {
		return fmt.Errorf("starting the control plane: %w", err)
	}
	defer func() {
		fmt.Println(">> stopping the control plane")
		err = errors.Join(err, env.Stop())
	}()

	admin, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, cfg)
	if err != nil {
		return fmt.Errorf("creating the admin user: %w", err)
	}
	kubeconfig, err := admin.KubeConfig()
	if err != nil {
		return fmt.Errorf("rendering the kubeconfig: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	kcPath, _ := filepath.Abs(filepath.Join(dir, "kubeconfig"))
	if err := os.WriteFile(kcPath, kubeconfig, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", kcPath, err)
	}

	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, ns := range []string{oadpNS, tenantNS} {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating namespace %s: %w", ns, err)
		}
	}

	fmt.Printf(`>> local control plane ready at %s
   kubeconfig:        %s
   OADP namespace:    %s
   tenant namespace:  %s

   In another terminal:
     export KUBECONFIG=%s
     kubectl apply -f examples/nonadminbackup.yaml
     kubectl get nab -n %s
     kubectl describe nab -n %s sample
     kubectl get backups.velero.io -n %s

>> running the controller (Ctrl-C stops it and the control plane)
`, cfg.Host, kcPath, oadpNS, tenantNS, kcPath, tenantNS, tenantNS, oadpNS)

	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kcPath)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", command[0], err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("controller exited: %w", err)
		}
		return nil
	case sig := <-sigs:
		fmt.Printf("\n>> %s: stopping the controller\n", sig)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		return nil
	}
}
