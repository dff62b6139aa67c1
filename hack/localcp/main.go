// Command localcp runs nacflow's local stack for `make run` and the
// end-to-end tests: a real kube-apiserver and etcd (built into bin/ from the
// Go module proxy) started through controller-runtime's envtest package, with
// nacflow's and Velero's CRDs, the OADP namespace and a demo tenant
// namespace; then an S3-compatible object store and a real Velero server
// with the default BackupStorageLocation. It writes an admin kubeconfig, runs
// the command after "--" (the controller) in the foreground with KUBECONFIG
// set, and stops everything, in reverse order, when that command exits or on
// Ctrl-C. Logs of the store and Velero go to DIR/s3.log and DIR/velero.log,
// the controller's to the terminal and DIR/nac.log.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/vmware-tanzu/velero/config/crd/v1/crds"
	v2alpha1crds "github.com/vmware-tanzu/velero/config/crd/v2alpha1/crds"
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
	withVelero := flag.Bool("velero", true, "Start the object store and the Velero server (assets gofakes3, velero, plugins/).")
	veleroSync := flag.Duration("velero-backup-sync-period", time.Minute, "The Velero server's --backup-sync-period.")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: localcp [flags] -- CONTROLLER [ARGS...]\n\nFlags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if err := run(*assets, *dir, *crdDir, *oadpNS, *tenantNS, *withVelero, *veleroSync, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "localcp:", err)
		os.Exit(1)
	}
}

func run(assets, dir, crdDir, oadpNS, tenantNS string, withVelero bool, veleroSync time.Duration, command []string) (err error) {
	if len(command) == 0 {
		return errors.New("no controller command given after --")
	}
	assets, _ = filepath.Abs(assets)
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{crdDir},
		CRDs:                  append(append(crds.CRDs[:0:0], crds.CRDs...), v2alpha1crds.CRDs...),
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
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, ns := range []string{oadpNS, tenantNS} {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating namespace %s: %w", ns, err)
		}
	}

	velero := "not started (--velero=false)"
	if withVelero {
		fmt.Println(">> starting the object store and the Velero server")
		stack, err := startVelero(ctx, cfg, kcPath, assets, dir, oadpNS, veleroSync)
		if err != nil {
			return err
		}
		defer func() {
			fmt.Println(">> stopping Velero and the object store")
			stack.stop()
		}()
		velero = fmt.Sprintf("running, BackupStorageLocation default Available (bucket %s at %s)\n   logs:              %s, %s",
			bucket, stack.s3URL, filepath.Join(dir, "velero.log"), filepath.Join(dir, "s3.log"))
	}

	fmt.Printf(`>> local control plane ready at %s
   kubeconfig:        %s
   OADP namespace:    %s
   tenant namespace:  %s
   Velero:            %s

   In another terminal:
     export KUBECONFIG=%s
     kubectl apply -f examples/nonadminbackup.yaml
     kubectl get nab -n %s
     kubectl describe nab -n %s sample
     kubectl get backups.velero.io -n %s

>> running the controller (Ctrl-C stops it and the control plane)
`, cfg.Host, kcPath, oadpNS, tenantNS, velero, kcPath, tenantNS, tenantNS, oadpNS)

	nacLog, err := os.OpenFile(filepath.Join(dir, "nac.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer nacLog.Close()
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stdout, cmd.Stderr = io.MultiWriter(os.Stdout, nacLog), io.MultiWriter(os.Stderr, nacLog)
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
