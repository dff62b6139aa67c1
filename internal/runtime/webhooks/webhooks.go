// Package webhooks serves nacflow's admission webhooks from cmd/nac: the
// mutating webhook that records who asked for a NAC object
// (internal/policy/requester), over HTTPS with certificates made and rotated
// by open-policy-agent/cert-controller (the library Gatekeeper uses), which
// also injects its CA into nacflow's MutatingWebhookConfiguration. It also
// keeps nacflow's requester signing key.
//
// One path in and out of a cluster: cert-controller keeps the certificate
// in a Secret of the OADP namespace; nacflow writes the Secret's files into
// its certificate directory itself (no Secret volume is mounted, so
// `make run`, a Pod and a test run the same code), reading the Secret
// through an informer of that Secret alone, and controller-runtime's
// webhook server reloads them when they change.
package webhooks

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/nacflow/nacflow/internal/runtime/cachetransform"
	"github.com/nacflow/nacflow/internal/runtime/pagedlist"
)

// Names of nacflow's webhook objects (config/webhook installs them; the
// Secrets are made by nac at start when missing).
const (
	// DefaultConfiguration is the MutatingWebhookConfiguration of the
	// requester webhook.
	DefaultConfiguration = "nacflow-requester"
	// DefaultService is the Service in front of the webhook server, in the
	// OADP namespace: the certificate names <service>.<namespace>.svc.
	DefaultService = "nacflow-webhook-service"
	// CertSecret holds the webhook's CA and serving certificate
	// (cert-controller's ca.crt, ca.key, tls.crt, tls.key).
	CertSecret = "nacflow-webhook-server-cert"
	// KeySecret holds the requester signing key, data key "key".
	KeySecret = "nacflow-requester-key"
	// RequesterPath is the URL path the requester webhook is served on.
	RequesterPath = "/mutate-nacflow-requester"
	// DefaultPort is the webhook server's port (controller-runtime's).
	DefaultPort = 9443
	// DefaultCertDir is where the serving certificate's files are written
	// (controller-runtime's default; a Pod's /tmp is an emptyDir).
	DefaultCertDir = "/tmp/k8s-webhook-server/serving-certs"
)

// keyBytes is the length of a signing key nacflow makes, in bytes.
const keyBytes = 32

// SigningKey returns the requester signing key kept in Secret
// namespace/KeySecret (data "key"), creating the Secret with 32 random
// bytes when it does not exist (the first replica to start wins the race;
// the others read its key). Errors: the API server's, and a Secret whose
// key is shorter than 32 bytes (say so rather than sign with it: delete the
// Secret and nac makes a new key, which voids every record made with the
// old one).
func SigningKey(ctx context.Context, c client.Client, namespace string) ([]byte, error) {
	key := types.NamespacedName{Namespace: namespace, Name: KeySecret}
	for range 2 {
		s := &corev1.Secret{}
		err := c.Get(ctx, key, s)
		if err == nil {
			if k := s.Data["key"]; len(k) < keyBytes {
				return nil, fmt.Errorf("Secret %s: data.key is %d bytes, want at least %d: delete the Secret and nac makes a new key", key, len(k), keyBytes)
			}
			return s.Data["key"], nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading the requester signing key, Secret %s: %w", key, err)
		}
		k := make([]byte, keyBytes)
		if _, err := rand.Read(k); err != nil {
			return nil, err
		}
		s = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: KeySecret, Labels: map[string]string{"app.kubernetes.io/name": "nacflow"}},
			Data:       map[string][]byte{"key": k},
		}
		switch err := c.Create(ctx, s); {
		case err == nil:
			return k, nil
		case !apierrors.IsAlreadyExists(err):
			return nil, fmt.Errorf("creating the requester signing key, Secret %s: %w", key, err)
		}
	}
	return nil, fmt.Errorf("Secret %s: made and deleted while reading it", key)
}

// Options say where and how the webhook server runs.
type Options struct {
	// Namespace is the OADP namespace: the Service's and the Secrets'.
	Namespace string
	// Port is the HTTPS port; Host the address to bind ("": all).
	Port int
	Host string
	// CertDir is where the serving certificate's files are written.
	CertDir string
	// Service is the webhook Service's name (DefaultService).
	Service string
	// Configuration is the MutatingWebhookConfiguration whose caBundle
	// cert-controller keeps (DefaultConfiguration).
	Configuration string
	// Handlers are served by path (RequesterPath: the requester handler).
	Handlers map[string]admission.Handler
}

// Setup adds to mgr the certificate rotator, the writer of the
// certificate's files (with its informer of the certificate Secret, which
// needs list and watch on Secrets in Namespace, as cert-controller does)
// and the webhook server, which starts once the files are written and the
// CA injected (cert-controller's IsReady); mgr's readyz check "webhook"
// fails until it serves. c is a client usable before mgr starts: Setup
// makes the certificate Secret when it does not exist (cert-controller
// needs it to exist). The certificate names <Service>.<Namespace>.svc and
// localhost (`make run` and a controller on the host's network are reached
// at https://localhost). The configuration need not exist: cert-controller
// then injects nothing and the server still runs. Errors: the API
// server's and the manager's.
func Setup(ctx context.Context, mgr manager.Manager, c client.Client, o Options) error {
	secret := types.NamespacedName{Namespace: o.Namespace, Name: CertSecret}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: CertSecret, Labels: map[string]string{"app.kubernetes.io/name": "nacflow"}}}
	if err := c.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the webhook certificate Secret %s: %w", secret, err)
	}
	ready := make(chan struct{})
	if err := rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:      secret,
		CertDir:        o.CertDir,
		CAName:         "nacflow-webhook-ca",
		CAOrganization: "nacflow",
		DNSName:        fmt.Sprintf("%s.%s.svc", o.Service, o.Namespace),
		ExtraDNSNames:  []string{"localhost"},
		IsReady:        ready,
		Webhooks:       []rotator.WebhookInfo{{Name: o.Configuration, Type: rotator.Mutating}},
		// Every replica serves the webhook, leader or not.
		RequireLeaderElection: false,
	}); err != nil {
		return fmt.Errorf("adding the webhook certificate rotator: %w", err)
	}
	files, err := newCertFiles(mgr.GetConfig(), cache.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient()},
		secret, o.CertDir)
	if err != nil {
		return err
	}
	if err := mgr.Add(files); err != nil {
		return err
	}
	srv := webhook.NewServer(webhook.Options{Host: o.Host, Port: o.Port, CertDir: o.CertDir})
	for path, h := range o.Handlers {
		srv.Register(path, &webhook.Admission{Handler: h})
	}
	// Not ready until it serves: a Service sends the API server's calls
	// only to ready Pods.
	if err := mgr.AddReadyzCheck("webhook", srv.StartedChecker()); err != nil {
		return err
	}
	return mgr.Add(&afterReady{ready: ready, srv: srv})
}

// afterReady starts the webhook server once its certificate is ready.
type afterReady struct {
	ready chan struct{}
	srv   webhook.Server
}

func (a *afterReady) NeedLeaderElection() bool { return false }

func (a *afterReady) Start(ctx context.Context) error {
	select {
	case <-a.ready:
	case <-ctx.Done():
		return nil
	}
	ctrl.Log.WithName("webhooks").Info("the webhook certificate is ready: serving the admission webhooks")
	return a.srv.Start(ctx)
}

// certFiles writes the certificate Secret's tls.crt and tls.key into dir
// whenever they change (controller-runtime's certificate watcher reloads
// them). It reads the Secret from cache, an informer of that Secret alone
// which it runs itself, so that a rotation is written as soon as the
// informer sees it and no replica polls the API server; it also looks
// again, in the cache, every 2 s until the files are first written, then
// every 30 s, to retry a write that failed and to restore files changed on
// disk.
type certFiles struct {
	cache  cache.Cache
	secret types.NamespacedName
	dir    string
}

// newCertFiles returns the writer of secret's files into dir, with a cache
// made from base (its scheme, mapper and HTTP client) that holds secret
// alone: Secrets of its namespace only, selected by name (metadata.name
// field selector), so that no other Secret is ever cached (the manager's
// cache holds none: tenants' Secrets are read on demand). Any other read
// through it fails (ReaderFailOnMissingInformer) rather than start an
// informer of another kind. Errors: cache.New's.
func newCertFiles(cfg *rest.Config, base cache.Options, secret types.NamespacedName, dir string) (*certFiles, error) {
	opts := base
	opts.ByObject = map[client.Object]cache.ByObject{&corev1.Secret{}: {
		Namespaces: map[string]cache.Config{secret.Namespace: {}},
		Field:      fields.OneTermEqualSelector("metadata.name", secret.Name),
	}}
	opts.DefaultTransform = cachetransform.New()
	opts.NewInformer = pagedlist.NewInformer(opts.DefaultTransform, pagedlist.DefaultPageSize)
	opts.ReaderFailOnMissingInformer = true
	c, err := cache.New(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("the webhook certificate Secret's cache: %w", err)
	}
	return &certFiles{cache: c, secret: secret, dir: dir}, nil
}

func (w *certFiles) NeedLeaderElection() bool { return false }

// Start runs the cache and writes the files until ctx ends. Errors: the
// certificate directory's, and an informer that cannot be made; a Secret
// that cannot be read or written is logged and tried again.
func (w *certFiles) Start(ctx context.Context) error {
	log := ctrl.Log.WithName("webhooks")
	if err := os.MkdirAll(w.dir, 0o700); err != nil {
		return fmt.Errorf("webhook certificate directory: %w", err)
	}
	// Files left by an earlier run may be another certificate's: the
	// rotator would take them for the Secret's and the server start with
	// them.
	for _, f := range []string{"tls.crt", "tls.key"} {
		if err := os.Remove(filepath.Join(w.dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("webhook certificate directory: %w", err)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Every change the informer sees wakes the loop; one pending wake is
	// enough, as the loop reads the Secret as it is then.
	seen := make(chan struct{}, 1)
	wake := func() {
		select {
		case seen <- struct{}{}:
		default:
		}
	}
	informer, err := w.cache.GetInformer(ctx, &corev1.Secret{}, cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("the webhook certificate Secret's informer: %w", err)
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { wake() },
		UpdateFunc: func(any, any) { wake() },
	}); err != nil {
		return fmt.Errorf("the webhook certificate Secret's informer: %w", err)
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		if err := w.cache.Start(ctx); err != nil {
			log.Error(err, "the webhook certificate Secret's cache stopped")
		}
	}()
	// The cache ends with ctx: wait for it, so that nothing of it outlives
	// Start.
	defer func() { cancel(); <-stopped }()
	if !w.cache.WaitForCacheSync(ctx) {
		return nil
	}
	written := false
	for {
		changed, err := w.sync(ctx)
		switch {
		case err != nil:
			log.Error(err, "writing the webhook certificate's files")
		case changed:
			log.Info("wrote the webhook certificate's files", "dir", w.dir)
			written = true
		}
		every := 30 * time.Second
		if !written {
			every = 2 * time.Second
		}
		select {
		case <-ctx.Done():
			return nil
		case <-seen:
		case <-time.After(every):
		}
	}
}

// sync writes the Secret's files when they differ; it reports whether it
// wrote. A Secret without both files yet is not an error.
func (w *certFiles) sync(ctx context.Context) (bool, error) {
	s := &corev1.Secret{}
	if err := w.cache.Get(ctx, w.secret, s); err != nil {
		return false, err
	}
	crt, key := s.Data["tls.crt"], s.Data["tls.key"]
	if len(crt) == 0 || len(key) == 0 {
		return false, nil
	}
	changed := false
	// The key first: the watcher reloads on the certificate's write.
	for _, f := range []struct {
		name string
		data []byte
	}{{"tls.key", key}, {"tls.crt", crt}} {
		path := filepath.Join(w.dir, f.name)
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, f.data) {
			continue
		} else if err != nil && !errors.Is(err, os.ErrNotExist) {
			return false, err
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, f.data, 0o600); err != nil {
			return false, err
		}
		if err := os.Rename(tmp, path); err != nil {
			return false, err
		}
		changed = true
	}
	return changed, nil
}
