// Command velero is the Velero server of `make run` and the end-to-end
// tests: Velero's own command (github.com/vmware-tanzu/velero/cmd/velero,
// the version go.mod pins), unchanged but for one default. Velero builds its
// controller-runtime manager without metrics options
// (pkg/cmd/server/server.go), so that manager always serves
// controller-runtime's metrics on ":8080" — one Velero per machine, whatever
// Velero's own --metrics-address says. Here that default is
// $VELERO_CONTROLLER_METRICS_BIND_ADDRESS, and "0" (not served) when it is
// unset: nothing reads them, Velero's own metrics stay on
// --metrics-address, and any number of stacks run side by side.
package main

import (
	"os"
	"path/filepath"

	"github.com/vmware-tanzu/velero/pkg/cmd"
	"github.com/vmware-tanzu/velero/pkg/cmd/velero"
	"k8s.io/klog/v2"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// EnvControllerMetrics sets the address of the manager's controller-runtime
// metrics ("0": not served, the default here).
const EnvControllerMetrics = "VELERO_CONTROLLER_METRICS_BIND_ADDRESS"

func main() {
	defer klog.Flush()
	metricsserver.DefaultBindAddress = "0"
	if addr := os.Getenv(EnvControllerMetrics); addr != "" {
		metricsserver.DefaultBindAddress = addr
	}
	err := velero.NewCommand(filepath.Base(os.Args[0])).Execute()
	cmd.CheckError(err)
}
