package main

import (
	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/internal/velero/restoreaction"
)

// clusterClient is what the action reads the cluster with: a
// controller-runtime client (its RESTMapper maps an item's kind to its
// resource).
type clusterClient = client.Client

// action is nacflow's RestoreItemAction (internal/velero/restoreaction).
type action = restoreaction.Action

// newAction returns the action, which connects with newClient on first
// use.
func newAction(log logrus.FieldLogger, newClient func() (clusterClient, error)) *action {
	return restoreaction.New(log, newClient)
}

// newKubeClient connects with kubeconfig, else $KUBECONFIG, else in-cluster.
func newKubeClient(kubeconfig string) (clusterClient, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = "velero-plugin-nacflow"
	// client-go's default (5/s) would spend a minute on the
	// SubjectAccessReviews of one RoleBinding to admin checked as the
	// requester (one per rule of the role, each asked once per restore).
	cfg.QPS, cfg.Burst = 200, 400
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}
