package webhooks

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// TestCertFilesFollowTheSecret runs certFiles against a real API server
// (kube-apiserver and etcd from bin/, or $NACFLOW_ASSETS; make test-build
// builds them, and the test fails without them): the Secret's files are
// written once it has them, a rotation is written as soon as the informer
// sees it (well before the 30 s look), and the cache holds that Secret
// alone.
func TestCertFilesFollowTheSecret(t *testing.T) {
	assets := os.Getenv("NACFLOW_ASSETS")
	if assets == "" {
		assets = filepath.Join("..", "..", "..", "bin")
	}
	if _, err := os.Stat(filepath.Join(assets, "kube-apiserver")); err != nil {
		t.Fatalf("no kube-apiserver in %s (make test-build builds it): %v", assets, err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting the control plane: %v", err)
	}
	defer func() { _ = env.Stop() }()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const ns = "oadp"
	if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	// The certificate Secret, without its files yet (Setup makes it
	// empty), and another Secret of the namespace the cache must not hold.
	cert := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: CertSecret}}
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other"}, Data: map[string][]byte{"tls.crt": []byte("x")}}
	for _, s := range []*corev1.Secret{cert, other} {
		if err := cl.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(t.TempDir(), "certs")
	w, err := newCertFiles(cfg, cache.Options{Scheme: scheme}, types.NamespacedName{Namespace: ns, Name: CertSecret}, dir)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Start(ctx) }()

	wantFiles := func(crt, key string, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			gotCrt, errCrt := os.ReadFile(filepath.Join(dir, "tls.crt"))
			gotKey, errKey := os.ReadFile(filepath.Join(dir, "tls.key"))
			if errCrt == nil && errKey == nil && bytes.Equal(gotCrt, []byte(crt)) && bytes.Equal(gotKey, []byte(key)) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("after %s: tls.crt %q (%v), tls.key %q (%v); want %q, %q", within, gotCrt, errCrt, gotKey, errKey, crt, key)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	setFiles := func(crt, key string) {
		t.Helper()
		s := &corev1.Secret{}
		if err := cl.Get(ctx, client.ObjectKeyFromObject(cert), s); err != nil {
			t.Fatal(err)
		}
		s.Data = map[string][]byte{"tls.crt": []byte(crt), "tls.key": []byte(key)}
		if err := cl.Update(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	setFiles("crt-1", "key-1")
	wantFiles("crt-1", "key-1", 10*time.Second)
	// Written once: the loop now looks every 30 s, so only the informer's
	// event writes a rotation this soon.
	setFiles("crt-2", "key-2")
	wantFiles("crt-2", "key-2", 10*time.Second)

	var cached corev1.SecretList
	if err := w.cache.List(ctx, &cached); err != nil {
		t.Fatal(err)
	}
	if len(cached.Items) != 1 || cached.Items[0].Name != CertSecret {
		names := []string{}
		for _, s := range cached.Items {
			names = append(names, s.Namespace+"/"+s.Name)
		}
		t.Errorf("the cache holds %v, want only %s/%s", names, ns, CertSecret)
	}
	if err := w.cache.Get(ctx, client.ObjectKeyFromObject(other), &corev1.Secret{}); err == nil {
		t.Error("the cache holds Secret oadp/other")
	}
	if err := w.cache.Get(ctx, types.NamespacedName{Name: ns}, &corev1.Namespace{}); err == nil {
		t.Error("the cache read a Namespace: it should hold nothing but the Secret")
	}
	if len(cached.Items) == 1 && cached.Items[0].ManagedFields != nil {
		t.Error("the cached Secret keeps its managedFields")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Start: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("Start did not return after its context ended")
	}
}
