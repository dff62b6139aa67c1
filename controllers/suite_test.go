package controllers_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/vmware-tanzu/velero/config/crd/v1/crds"
	v2alpha1crds "github.com/vmware-tanzu/velero/config/crd/v2alpha1/crds"
	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/localstack/kcm"
	"github.com/nacflow/nacflow/internal/localstack/testwait"
)

// The control plane shared by every suite of this package: a real
// kube-apiserver and etcd from bin/ (make builds them), with nacflow's and
// Velero's CRDs.
var (
	testCfg    *rest.Config
	testScheme *runtime.Scheme
	testClient client.WithWatch
)

func Test(t *testing.T) {
	logOut := io.Discard
	if os.Getenv("NACFLOW_TEST_LOG") != "" {
		logOut = os.Stderr
	}
	logger := zap.New(zap.WriteTo(logOut), zap.UseDevMode(true))
	logf.SetLogger(logger)
	klog.SetLogger(logger) // client-go's own messages (event retries during the outage test)
	assets := os.Getenv("NACFLOW_ASSETS")
	if assets == "" {
		assets = filepath.Join("..", "bin")
	}
	for _, bin := range []string{"kube-apiserver", "etcd", kcm.Binary} {
		if _, err := os.Stat(filepath.Join(assets, bin)); err != nil {
			t.Fatalf("%s not found in %s: run the tests with `make test`, which builds it", bin, assets)
		}
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		// nacflow's CRDs, and a stand-in for OADP's DataProtectionApplication.
		CRDDirectoryPaths:     []string{filepath.Join("..", "config", "crd", "bases"), filepath.Join("..", "test", "crds")},
		CRDs:                  append(append(crds.CRDs[:0:0], crds.CRDs...), v2alpha1crds.CRDs...),
		ErrorIfCRDPathMissing: true,
	}
	var err error
	started := time.Now()
	if testCfg, err = env.Start(); err != nil {
		t.Fatalf("starting the control plane: %v", err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	}()
	apiserverUp := time.Since(started)
	// kube-controller-manager, as a real cluster runs it: namespaces finish
	// deleting, admin/edit/view aggregate, garbage collection runs.
	controllerManager, err := kcm.Start(context.Background(), env, assets, t.TempDir())
	if err != nil {
		t.Fatalf("starting kube-controller-manager: %v", err)
	}
	defer controllerManager.Stop(5 * time.Second)
	t.Logf("control plane up in %s: kube-apiserver and etcd %s, kube-controller-manager %s",
		time.Since(started).Round(time.Millisecond), apiserverUp.Round(time.Millisecond), (time.Since(started) - apiserverUp).Round(time.Millisecond))
	if testScheme, err = v1alpha1.NewScheme(); err != nil {
		t.Fatal(err)
	}
	if testClient, err = client.NewWithWatch(testCfg, client.Options{Scheme: testScheme}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	veleroDownloads.start(ctx)
	TestingT(t)
}

// createNamespace creates a namespace with a unique name built from prefix.
func createNamespace(c *C, prefix string) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	c.Assert(testClient.Create(context.Background(), ns), IsNil)
	return ns.Name
}

// eventually polls check until it returns true or timeout, scaled by
// testwait.Bound (3× unless NACFLOW_TEST_TIMEOUT_SCALE says otherwise),
// passes; then it fails the test with check's last message. The pause
// between checks starts at 100ms and grows with the wait to at most 1 s
// (testwait.Pause): the package's API server is shared with every check.
func eventually(c *C, timeout time.Duration, check func() (bool, string)) {
	timeout = testwait.Bound(timeout)
	start := time.Now()
	deadline := start.Add(timeout)
	var msg string
	for {
		var ok bool
		checked := time.Now()
		if ok, msg = check(); ok {
			return
		}
		if time.Now().After(deadline) {
			c.Fatalf("not true after %s: %s", timeout, msg)
		}
		time.Sleep(testwait.Pause(100*time.Millisecond, time.Second, time.Since(start), time.Since(checked)))
	}
}

// eventMessages returns the messages of the events on the object named name
// in namespace, oldest first.
func eventMessages(c *C, namespace, name string) []string {
	list := &corev1.EventList{}
	c.Assert(testClient.List(context.Background(), list, client.InNamespace(namespace)), IsNil)
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name {
			out = append(out, e.Message)
		}
	}
	return out
}

// eventReasons returns "Type Reason" of the events on the object named name
// in namespace, oldest first.
func eventReasons(c *C, namespace, name string) []string {
	var out []string
	for _, e := range eventStory(c, namespace, name) {
		reason, _, _ := strings.Cut(e, ":")
		out = append(out, reason)
	}
	return out
}

// eventStory returns the events of the object name in namespace, oldest
// first, as "Type Reason: message". A reconcile's Normal transitions are one
// event (events.Buffer.Flush): the message tells each of them.
func eventStory(c *C, namespace, name string) []string {
	list := &corev1.EventList{}
	c.Assert(testClient.List(context.Background(), list, client.InNamespace(namespace)), IsNil)
	var evs []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name {
			evs = append(evs, e)
		}
	}
	// Event names are "<object>.<creation time in hex nanoseconds>": sorting
	// by name sorts by creation, finer than the timestamps' seconds.
	sort.Slice(evs, func(i, j int) bool { return evs[i].Name < evs[j].Name })
	var out []string
	for _, e := range evs {
		out = append(out, fmt.Sprintf("%s %s: %s", e.Type, e.Reason, e.Message))
	}
	return out
}

// containsInOrder reports whether list holds all of want, in that order.
func containsInOrder(list, want []string) bool {
	i := 0
	for _, e := range list {
		if i < len(want) && e == want[i] {
			i++
		}
	}
	return i == len(want)
}

func joined(l []string) string { return strings.Join(l, ", ") }
