// Command velero-plugin-nacflow is nacflow's Velero plugin: a
// RestoreItemAction (registered as restorepolicy.PluginName, applying to
// every resource) that keeps a restore nacflow made for a tenant within what
// the tenant could do itself (internal/policy/restorepolicy). Velero calls it on
// every item it is about to restore, after reading the item from the
// backup: the check is on what Velero really creates, so rewriting the
// tenant's bucket after nacflow looked at it changes nothing. Restores
// nacflow did not make pass through untouched.
//
// Install it like any Velero plugin: its image as an init container of the
// Velero Deployment (OADP: DataProtectionApplication
// spec.configuration.velero.customPlugins), or the binary in Velero's
// --plugin-dir (the local stack: bin/plugins, built by make build).
//
// Velero starts plugins with its own server arguments (pkg/plugin/clientmgmt/
// process/client_builder.go: os.Args[2:]), so the plugin reads --kubeconfig
// as Velero got it; without it, $KUBECONFIG, then the in-cluster config
// (Velero's service account, which must read ClusterRoles, Roles and any
// namespaced object: Velero's own cluster-admin binding does).
package main

import (
	"github.com/sirupsen/logrus"
	"github.com/spf13/pflag"
	"github.com/vmware-tanzu/velero/pkg/plugin/framework"

	"github.com/nacflow/nacflow/internal/policy/restorepolicy"
)

func main() {
	var kubeconfig string
	flags := pflag.CommandLine
	flags.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (Velero's own --kubeconfig); empty: $KUBECONFIG, then in-cluster")
	framework.NewServer().
		BindFlags(flags).
		RegisterRestoreItemAction(restorepolicy.PluginName, func(log logrus.FieldLogger) (any, error) {
			// Called after Serve parsed the flags.
			return newAction(log, func() (clusterClient, error) { return newKubeClient(kubeconfig) }), nil
		}).
		Serve()
}
