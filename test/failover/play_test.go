package failover

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/internal/localstack/childproc"
	"github.com/nacflow/nacflow/internal/localstack/veleroplay"
)

// replica is one nac process of the test: its name ($POD_NAME, the
// Lease's holder prefix), its ports and its log.
type replica struct {
	name                   string
	probeAddr, metricsAddr string
	webhookAddr            string
	logPath                string
	cmd                    *exec.Cmd
	exited                 chan struct{}
}

// startReplica runs bin/nac as name against kubeconfig with args after the
// ports and webhook flags the replica is given here, its output in dir.
func startReplica(bin, kubeconfig, dir, name string, ports [3]int, args []string) (*replica, error) {
	r := &replica{name: name, exited: make(chan struct{}),
		probeAddr:   fmt.Sprintf("127.0.0.1:%d", ports[0]),
		metricsAddr: fmt.Sprintf("127.0.0.1:%d", ports[1]),
		webhookAddr: fmt.Sprintf("127.0.0.1:%d", ports[2]),
		logPath:     filepath.Join(dir, name+".log")}
	f, err := os.Create(r.logPath)
	if err != nil {
		return nil, err
	}
	full := append([]string{"--kubeconfig", kubeconfig, "--oadp-namespace", oadpNS,
		"--health-probe-bind-address", r.probeAddr,
		"--metrics-bind-address", r.metricsAddr, "--metrics-secure=false",
		"--webhook-port", fmt.Sprint(ports[2]), "--webhook-host", "127.0.0.1",
		"--webhook-cert-dir", filepath.Join(dir, name+"-webhook-certs"),
		"--webhook-configuration", webhookConfiguration}, args...)
	r.cmd = exec.Command(filepath.Join(bin, "nac"), full...)
	r.cmd.Env = append(os.Environ(), "POD_NAME="+name)
	r.cmd.Stdout, r.cmd.Stderr = f, f
	// Killed with the test binary.
	r.cmd.SysProcAttr = childproc.SysProcAttr()
	if err := r.cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	go func() {
		_ = r.cmd.Wait()
		f.Close()
		close(r.exited)
	}()
	return r, nil
}

// kill sends SIGKILL: no shutdown, the Lease is not released.
func (r *replica) kill() error {
	return r.cmd.Process.Signal(syscall.SIGKILL)
}

// alive reports whether the process runs.
func (r *replica) alive() bool {
	select {
	case <-r.exited:
		return false
	default:
		return true
	}
}

// stop ends the process (SIGTERM, SIGKILL after 20 s) if it runs.
func (r *replica) stop() {
	if r == nil || !r.alive() {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(20 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.exited
	}
}

// logTail returns the last n bytes of the replica's log.
func (r *replica) logTail(n int) string {
	b, _ := os.ReadFile(r.logPath)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// ready reports whether GET /readyz answers 200.
func (r *replica) ready() bool {
	cl := &http.Client{Timeout: 2 * time.Second}
	resp, err := cl.Get("http://" + r.probeAddr + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// metrics returns the replica's /metrics page (plain HTTP here).
func (r *replica) metrics() (string, error) {
	cl := &http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get("http://" + r.metricsAddr + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// servedCert returns the DER of the certificate the replica's webhook
// server presents for localhost.
func (r *replica) servedCert() ([]byte, error) {
	d := &net.Dialer{Timeout: 3 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", r.webhookAddr, &tls.Config{ServerName: "localhost", InsecureSkipVerify: true}) //nolint:gosec // compared with the Secret's below
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	certs := conn.ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return nil, fmt.Errorf("no certificate")
	}
	return certs[0].Raw, nil
}

// firstPEM returns the DER of the first PEM block of data (nil: none).
func firstPEM(data []byte) []byte {
	b, _ := pem.Decode(data)
	if b == nil {
		return nil
	}
	return b.Bytes
}

// webhookProxy is the Service in front of both replicas' webhook servers:
// a TCP proxy (TLS passes through, so the API server checks the replicas'
// certificate) that sends each connection to the next backend in turn that
// accepts one, skipping a dead one as an endpoint controller would. served
// counts the connections each backend took.
type webhookProxy struct {
	l        net.Listener
	mu       sync.Mutex
	backends []string
	next     int
	served   map[string]int
}

func newWebhookProxy() (*webhookProxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &webhookProxy{l: l, served: map[string]int{}}
	go p.serve()
	return p, nil
}

func (p *webhookProxy) port() int { return p.l.Addr().(*net.TCPAddr).Port }

// route sets the backends connections go to from now on (connections open
// stay where they are).
func (p *webhookProxy) route(backends ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.backends = append([]string(nil), backends...)
}

// count returns how many connections backend took.
func (p *webhookProxy) count(backend string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.served[backend]
}

func (p *webhookProxy) serve() {
	for {
		in, err := p.l.Accept()
		if err != nil {
			return
		}
		go p.forward(in)
	}
}

func (p *webhookProxy) forward(in net.Conn) {
	defer in.Close()
	p.mu.Lock()
	backends := append([]string(nil), p.backends...)
	start := p.next
	p.next++
	p.mu.Unlock()
	for i := range backends {
		b := backends[(start+i)%len(backends)]
		out, err := net.DialTimeout("tcp", b, time.Second)
		if err != nil {
			continue
		}
		p.mu.Lock()
		p.served[b]++
		p.mu.Unlock()
		done := make(chan struct{}, 2)
		go func() { _, _ = io.Copy(out, in); done <- struct{}{} }()
		go func() { _, _ = io.Copy(in, out); done <- struct{}{} }()
		<-done
		out.Close()
		return
	}
}

func (p *webhookProxy) close() { _ = p.l.Close() }

// follow lists the objects of newList's kind in ns ("": all) and watches
// them from that list, calling on with each object listed (as Added) and
// each watch event, until ctx ends; a watch that ends starts over with a
// list, so on must take an object seen again.
func follow(ctx context.Context, c client.WithWatch, ns string, newList func() client.ObjectList, on func(watch.EventType, client.Object)) {
	for ctx.Err() == nil {
		list := newList()
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			sleep(ctx, time.Second)
			continue
		}
		items, _ := meta.ExtractList(list)
		for _, it := range items {
			if o, ok := it.(client.Object); ok {
				on(watch.Added, o)
			}
		}
		w, err := c.Watch(ctx, newList(), &client.ListOptions{Namespace: ns,
			Raw: &metav1.ListOptions{ResourceVersion: list.GetResourceVersion(), AllowWatchBookmarks: true}})
		if err != nil {
			sleep(ctx, time.Second)
			continue
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				break
			}
			if o, ok := ev.Object.(client.Object); ok && (ev.Type == watch.Added || ev.Type == watch.Modified || ev.Type == watch.Deleted) {
				on(ev.Type, o)
			}
		}
		w.Stop()
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// creation is one Velero object as it was first seen.
type creation struct {
	kind, name string
	// origin is the NAC object it was made for: its NACUUID label.
	origin string
	seen   time.Time
}

// ledger records every Velero object ever created in the OADP namespace,
// by UID: an object deleted and made again under the same name is two
// creations.
type ledger struct {
	mu     sync.Mutex
	byUID  map[types.UID]creation
	tenant atomic.Int64 // Backups made for a NonAdminBackup
}

func newLedger() *ledger { return &ledger{byUID: map[types.UID]creation{}} }

// record notes o (of kind) the first time its UID is seen and reports
// whether it was new.
func (l *ledger) record(kind string, o client.Object) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.byUID[o.GetUID()]; ok {
		return false
	}
	origin := ""
	for k, v := range o.GetLabels() {
		if strings.HasSuffix(k, "-origin-nacuuid") {
			origin = v
		}
	}
	l.byUID[o.GetUID()] = creation{kind: kind, name: o.GetName(), origin: origin, seen: time.Now()}
	if kind == "Backup" && origin != "" {
		l.tenant.Add(1)
	}
	return true
}

// all returns every creation.
func (l *ledger) all() []creation {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]creation, 0, len(l.byUID))
	for _, cr := range l.byUID {
		out = append(out, cr)
	}
	return out
}

// veleroPlay plays the Velero server, which does not run here: each new
// Backup is patched Completed as soon as its watch shows it, and each
// DownloadRequest Processed with a URL on a local server of the files
// (veleroplay.Files). Every Backup, DownloadRequest and Restore created is
// recorded in created.
type veleroPlay struct {
	c       client.WithWatch
	created *ledger
	srv     *httptest.Server
	mu      sync.Mutex
	done    map[types.UID]bool
	todo    chan client.Object
}

func startVeleroPlay(ctx context.Context, c client.WithWatch) *veleroPlay {
	v := &veleroPlay{c: c, created: newLedger(), done: map[types.UID]bool{}, todo: make(chan client.Object, 4096)}
	v.srv = httptest.NewServer(&veleroplay.Files{Reader: c, Source: "failover"})
	go func() {
		<-ctx.Done()
		v.srv.Close()
	}()
	for range 4 {
		go v.process(ctx)
	}
	go follow(ctx, c, oadpNS, func() client.ObjectList { return &velerov1.BackupList{} }, func(t watch.EventType, o client.Object) {
		if t == watch.Deleted {
			return
		}
		v.created.record("Backup", o)
		if b := o.(*velerov1.Backup); b.Status.Phase == "" || b.Status.Phase == velerov1.BackupPhaseNew {
			v.offer(ctx, b)
		}
	})
	go follow(ctx, c, oadpNS, func() client.ObjectList { return &velerov1.DownloadRequestList{} }, func(t watch.EventType, o client.Object) {
		if t == watch.Deleted {
			return
		}
		v.created.record("DownloadRequest", o)
		if dr := o.(*velerov1.DownloadRequest); dr.Status.Phase == "" || dr.Status.Phase == velerov1.DownloadRequestPhaseNew {
			v.offer(ctx, dr)
		}
	})
	go follow(ctx, c, oadpNS, func() client.ObjectList { return &velerov1.RestoreList{} }, func(t watch.EventType, o client.Object) {
		if t != watch.Deleted {
			v.created.record("Restore", o)
		}
	})
	return v
}

func (v *veleroPlay) offer(ctx context.Context, o client.Object) {
	v.mu.Lock()
	seen := v.done[o.GetUID()]
	v.done[o.GetUID()] = true
	v.mu.Unlock()
	if seen {
		return
	}
	select {
	case v.todo <- o:
	case <-ctx.Done():
	}
}

// process patches what is queued: a merge patch of the main resource, as
// Velero's CRDs have no status subresource.
func (v *veleroPlay) process(ctx context.Context) {
	for {
		var o client.Object
		select {
		case <-ctx.Done():
			return
		case o = <-v.todo:
		}
		var status map[string]any
		var target client.Object
		now := metav1.Now()
		switch x := o.(type) {
		case *velerov1.Backup:
			status = map[string]any{"phase": velerov1.BackupPhaseCompleted, "startTimestamp": now, "completionTimestamp": now,
				"version": 1, "formatVersion": "1.1.0", "expiration": metav1.NewTime(now.Add(720 * time.Hour))}
			target = &velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: x.Namespace, Name: x.Name}}
		case *velerov1.DownloadRequest:
			status = map[string]any{"phase": velerov1.DownloadRequestPhaseProcessed,
				"downloadURL": fmt.Sprintf("%s/%s/%s/%s", v.srv.URL, x.Namespace, x.Spec.Target.Kind, x.Spec.Target.Name),
				"expiration":  metav1.NewTime(time.Now().Add(10 * time.Minute))}
			target = &velerov1.DownloadRequest{ObjectMeta: metav1.ObjectMeta{Namespace: x.Namespace, Name: x.Name}}
		default:
			continue
		}
		data, _ := json.Marshal(map[string]any{"status": status})
		for attempt := 0; attempt < 5 && ctx.Err() == nil; attempt++ {
			if err := v.c.Patch(ctx, target, client.RawPatch(types.MergePatchType, data)); err == nil || client.IgnoreNotFound(err) == nil {
				break
			}
			sleep(ctx, 200*time.Millisecond)
		}
	}
}
