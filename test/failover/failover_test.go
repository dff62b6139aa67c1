// Package failover kills the leader of two nac replicas in the middle of a
// burst of NonAdminBackups, on a real kube-apiserver and etcd (bin/localcp
// without Velero: the test plays Velero itself, as make bench does), and
// checks what the Deployment's two replicas promise: the other replica
// leads within the lease duration, every NonAdminBackup completes once, no
// Velero object is created twice, no phase of a plan ends twice, and the
// requester webhook (served by both replicas, leader or not) keeps
// answering. It measures the time from the kill to the new leader's first
// write. make test-failover runs it alone; make test runs it beside the
// other slow packages.
package failover

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/localstack/childproc"
	"github.com/nacflow/nacflow/internal/localstack/testwait"
	"github.com/nacflow/nacflow/test/e2estack"
)

func Test(t *testing.T) { TestingT(t) }

const (
	oadpNS = "openshift-adp"
	// webhookConfiguration is the requester webhook's configuration
	// localcp installs, calling the test's proxy.
	webhookConfiguration = e2estack.LocalWebhookConfiguration
	// leaseName is nac's leader-election Lease (cmd/nac).
	leaseName = "nacflow.oadp.openshift.io"
	// certSecret is the webhook certificate's Secret (internal/runtime/webhooks).
	certSecret = "nacflow-webhook-server-cert"

	// The burst: nabs NonAdminBackups over namespaces tenant namespaces,
	// created by clients at about createRate a second, the leader killed
	// once killAfter of their Velero Backups exist.
	nabs       = 500
	namespaces = 20
	clients    = 8
	createRate = 50
	killAfter  = 150

	// The replicas' leader election: short, so that the test is; the
	// flags' defaults are controller-runtime's 15s/10s/2s.
	leaseDuration = 6 * time.Second
	renewDeadline = 4 * time.Second
	retryPeriod   = time.Second
)

// takeoverBound is the longest a follower may take to lead after the
// leader dies, from the flags: the leader renewed at most one retry period
// before it died; the follower sees that renewal at its next try (client-go
// tries every retry period with a jitter of up to 1.2 more), the lease then
// expires a lease duration later, and the follower takes it at its next
// try after that: 11.4 s with the test's flags. Two seconds more for the
// API server's answer to the try that saw the renewal, on a loaded machine
// (the Lease's acquireTime is taken before the winning try's own request).
func takeoverBound() time.Duration {
	try := time.Duration(2.2 * float64(retryPeriod))
	return retryPeriod + try + leaseDuration + try + 2*time.Second
}

// FailoverSuite runs one stack (bin/localcp: kube-apiserver, etcd,
// kube-controller-manager, the CRDs and the requester webhook's
// configuration, no Velero, no controller) and two nac replicas of its own.
type FailoverSuite struct {
	root, bin, dir string
	st             *e2estack.Stack
	c              client.WithWatch
	proxy          *webhookProxy
	replicas       []*replica
}

var _ = Suite(&FailoverSuite{})

func (s *FailoverSuite) SetUpSuite(c *C) {
	s.root = e2estack.RepoRoot(c)
	s.bin = e2estack.BuildBinaries(c, s.root)
	s.dir = c.MkDir()
	var err error
	s.proxy, err = newWebhookProxy()
	c.Assert(err, IsNil)
	// The stack's "controller" only sleeps: the test runs the two replicas.
	// The API server calls the requester webhook through the proxy, the
	// Service in front of both replicas.
	s.st = e2estack.Launch(c, s.root, s.bin, c.MkDir(), ">> running the controller", "--velero=false",
		"--requester-webhook", "config/webhook/mutating_webhook_configuration.yaml",
		"--requester-webhook-url", fmt.Sprintf("https://localhost:%d/mutate-nacflow-requester", s.proxy.port()),
		"--", "sleep", "86400")
	cfg, err := clientcmd.BuildConfigFromFlags("", s.st.Kubeconfig)
	c.Assert(err, IsNil)
	cfg.QPS, cfg.Burst = 1000, 2000
	scheme, err := v1alpha1.NewScheme()
	c.Assert(err, IsNil)
	s.c, err = client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	c.Assert(err, IsNil)
}

// TearDownTest shows the replicas' last words when the test failed: their
// logs go with the suite's directory.
func (s *FailoverSuite) TearDownTest(c *C) {
	if c.Failed() {
		for _, r := range s.replicas {
			c.Logf("%s's log, its end:\n%s", r.name, r.logTail(8000))
		}
	}
}

func (s *FailoverSuite) TearDownSuite(c *C) {
	for _, r := range s.replicas {
		r.stop()
	}
	if s.proxy != nil {
		s.proxy.close()
	}
	if s.st != nil {
		s.st.Interrupt(c)
	}
}

// startReplicas starts two replicas, nac-a and nac-b, with leader election
// and the test's timings, and returns them once both are ready (informers
// synced, webhook served) and one holds the Lease: the leader first.
func (s *FailoverSuite) startReplicas(c *C) (leader, follower *replica) {
	args := []string{"--leader-elect",
		"--leader-elect-lease-duration", leaseDuration.String(),
		"--leader-elect-renew-deadline", renewDeadline.String(),
		"--leader-elect-retry-period", retryPeriod.String(),
		// No Velero server to list plugins of, no usage to measure: the
		// backups' own path only. Velero's queue is not shared out (as in
		// make bench): the played Velero completes a Backup at once, and the
		// burst's pace, not turns, decides when Backups are made.
		"--restore-precheck=false", "--usage-measure-rate=0", "--max-backups-in-velero-per-namespace=0"}
	for _, name := range []string{"nac-a", "nac-b"} {
		var ports [3]int
		for i := range ports {
			p, err := childproc.FreePort()
			c.Assert(err, IsNil)
			ports[i] = p
		}
		r, err := startReplica(s.bin, s.st.Kubeconfig, s.dir, name, ports, args)
		c.Assert(err, IsNil)
		s.replicas = append(s.replicas, r)
	}
	e2estack.Eventually(c, time.Minute, func() (bool, string) {
		for _, r := range s.replicas {
			if !r.alive() {
				c.Fatalf("%s exited:\n%s", r.name, r.logTail(4000))
			}
			if !r.ready() {
				return false, r.name + "'s /readyz does not answer 200"
			}
		}
		holder := s.holder(c)
		for i, r := range s.replicas {
			if strings.HasPrefix(holder, r.name+"_") {
				leader, follower = r, s.replicas[1-i]
				return true, ""
			}
		}
		return false, fmt.Sprintf("the Lease is held by %q", holder)
	})
	return leader, follower
}

// holder returns the Lease's holderIdentity ("" when there is none yet).
func (s *FailoverSuite) holder(c *C) string {
	l, err := s.lease()
	if apierrors.IsNotFound(err) {
		return ""
	}
	c.Assert(err, IsNil)
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func (s *FailoverSuite) lease() (*coordinationv1.Lease, error) {
	l := &coordinationv1.Lease{}
	return l, s.c.Get(context.Background(), client.ObjectKey{Namespace: oadpNS, Name: leaseName}, l)
}

// createNAR creates NonAdminRestore ns/name through the API server (the
// requester webhook is called on its way in) and returns its requester
// record, "" when it has none.
func (s *FailoverSuite) createNAR(ctx context.Context, ns, name string) (string, error) {
	nar := &v1alpha1.NonAdminRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.NonAdminRestoreSpec{RestoreSpec: &velerov1.RestoreSpec{BackupName: "no-such-backup"}}}
	if err := s.c.Create(ctx, nar); err != nil {
		return "", err
	}
	return nar.Annotations[v1alpha1.RequesterAnnotation], nil
}

// admitted creates NonAdminRestore ns/name, trying again for up to within
// while the API server's call to the webhook fails, and returns when it was
// created, its requester record and the last error.
func (s *FailoverSuite) admitted(ctx context.Context, ns, name string, within time.Duration) (time.Time, string, error) {
	deadline := time.Now().Add(within)
	for {
		record, err := s.createNAR(ctx, ns, name)
		if err == nil || time.Now().After(deadline) {
			return time.Now(), record, err
		}
		sleep(ctx, 200*time.Millisecond)
	}
}

// phaseEnds matches what the runner's events say of a phase that ended
// and of an action that started (engine's EndedPhase, EndedDeferPhase and
// StartedAction messages, several joined by "; " in one event).
var (
	phaseEnds    = regexp.MustCompile(`Ended (phase|deferPhase) (\S+) \(`)
	actionStarts = regexp.MustCompile(`Started action (\S+) of blueprint`)
)

func (s *FailoverSuite) TestLeaderKilledMidBurst(c *C) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	testStart := time.Now()
	var nss []string
	for i := range namespaces {
		ns := fmt.Sprintf("tenant-%02d", i)
		nss = append(nss, ns)
		c.Assert(s.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}), IsNil)
	}

	leader, follower := s.startReplicas(c)
	say(c, "replicas ready %s after their start; %s leads", time.Since(testStart).Round(100*time.Millisecond), leader.name)

	// Both replicas serve the webhook with the one certificate of the
	// Secret, whoever made it.
	e2estack.Eventually(c, 30*time.Second, func() (bool, string) {
		sec := &corev1.Secret{}
		if err := s.c.Get(ctx, client.ObjectKey{Namespace: oadpNS, Name: certSecret}, sec); err != nil {
			return false, err.Error()
		}
		want := firstPEM(sec.Data["tls.crt"])
		if want == nil {
			return false, "the Secret holds no certificate yet"
		}
		for _, r := range []*replica{leader, follower} {
			got, err := r.servedCert()
			if err != nil {
				return false, fmt.Sprintf("%s: %v", r.name, err)
			}
			if string(got) != string(want) {
				return false, r.name + " serves another certificate than Secret " + certSecret + "'s"
			}
		}
		return true, ""
	})
	// The follower answers the webhook alone: a NonAdminRestore made while
	// only it is behind the Service gets its requester record.
	s.proxy.route(follower.webhookAddr)
	_, record, err := s.admitted(ctx, nss[0], "by-follower", testwait.Bound(20*time.Second))
	c.Assert(err, IsNil, Commentf("the follower's webhook"))
	c.Assert(record, Matches, `.*"username":"admin".*`, Commentf("the requester record the follower's webhook wrote"))
	c.Check(s.proxy.count(leader.webhookAddr), Equals, 0)
	s.proxy.route(leader.webhookAddr, follower.webhookAddr)

	// Velero played, every Velero object recorded as it is created; every
	// write of a NonAdminBackup (status, finalizers: only nac writes them
	// after the test created them) timed as its watch shows it.
	play := startVeleroPlay(ctx, s.c)
	var nabMu sync.Mutex
	var nabWrites []time.Time
	completed := map[string]time.Time{}
	go follow(ctx, s.c, "", func() client.ObjectList { return &v1alpha1.NonAdminBackupList{} }, func(t watch.EventType, o client.Object) {
		if t == watch.Modified {
			nabMu.Lock()
			nabWrites = append(nabWrites, time.Now())
			if p := o.(*v1alpha1.NonAdminBackup).Status.Plan; p != nil && p.State == v1alpha1.PlanComplete {
				if _, ok := completed[o.GetNamespace()+"/"+o.GetName()]; !ok {
					completed[o.GetNamespace()+"/"+o.GetName()] = time.Now()
				}
			}
			nabMu.Unlock()
		}
	})

	// The burst, paced at createRate a second so that it goes on through
	// the kill; the leader is killed once killAfter Velero Backups exist.
	type kill struct {
		at            time.Time
		backups, nabs int
	}
	var created sync.WaitGroup
	var createdCount atomic.Int64
	createErr := make(chan error, clients)
	ticks := time.NewTicker(time.Second / createRate)
	defer ticks.Stop()
	next := make(chan int)
	go func() {
		defer close(next)
		for i := range nabs {
			select {
			case <-ticks.C:
			case <-ctx.Done():
				return
			}
			select {
			case next <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	burstStart := time.Now()
	for range clients {
		created.Add(1)
		go func() {
			defer created.Done()
			for i := range next {
				nab := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: nss[i%namespaces], Name: fmt.Sprintf("nab-%03d", i)},
					Spec: v1alpha1.NonAdminBackupSpec{BackupSpec: &velerov1.BackupSpec{}}}
				// A create the loaded API server timed out may have
				// been made: AlreadyExists on its retry is its success.
				var err error
				for attempt := 0; attempt < 3; attempt++ {
					if err = s.c.Create(ctx, nab.DeepCopy()); err == nil || apierrors.IsAlreadyExists(err) {
						err = nil
						break
					}
					sleep(ctx, time.Second)
				}
				if err != nil {
					createErr <- fmt.Errorf("creating %s/%s: %w", nab.Namespace, nab.Name, err)
					return
				}
				createdCount.Add(1)
			}
		}()
	}
	var k kill
	deadline := time.Now().Add(testwait.Bound(time.Minute))
	for int(play.created.tenant.Load()) < killAfter {
		if time.Now().After(deadline) {
			c.Fatalf("%d of %d Velero Backups after %s:\n%s", play.created.tenant.Load(), killAfter, testwait.Bound(time.Minute), leader.logTail(4000))
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.Assert(leader.kill(), IsNil)
	k = kill{at: time.Now(), backups: int(play.created.tenant.Load()), nabs: int(createdCount.Load())}
	say(c, "SIGKILL to the leader %s %s into the burst: %d NonAdminBackups created, %d Velero Backups exist",
		leader.name, k.at.Sub(burstStart).Round(time.Millisecond), k.nabs, k.backups)
	c.Check(k.backups < nabs, Equals, true, Commentf("the leader was killed after every Velero Backup was made"))

	// The webhook while no one leads: the follower answers alone.
	type admission struct {
		at     time.Time
		record string
		err    error
	}
	during := make(chan admission, 1)
	go func() {
		at, record, err := s.admitted(ctx, nss[1], "during-failover", testwait.Bound(10*time.Second))
		during <- admission{at, record, err}
	}()

	// The follower takes the Lease over.
	var taken *coordinationv1.Lease
	var takenSeen time.Time
	for taken == nil {
		if time.Since(k.at) > testwait.Bound(takeoverBound()) {
			c.Fatalf("%s did not take the Lease over within %s of the kill (held by %q):\n%s", follower.name,
				testwait.Bound(takeoverBound()), s.holder(c), follower.logTail(4000))
		}
		if l, err := s.lease(); err == nil && l.Spec.HolderIdentity != nil && strings.HasPrefix(*l.Spec.HolderIdentity, follower.name+"_") {
			taken, takenSeen = l, time.Now()
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.Assert(leader.alive(), Equals, false)
	<-leader.exited
	acquired := takenSeen
	if at := taken.Spec.AcquireTime; at != nil && at.After(k.at) && at.Time.Before(takenSeen) {
		acquired = at.Time // the follower's own clock: this machine's
	}
	takeover := acquired.Sub(k.at)
	say(c, "kill → %s holds the Lease: %s (Lease acquireTime; seen after %s); bound %s (lease duration %s, renew deadline %s, retry period %s)",
		follower.name, takeover.Round(time.Millisecond), takenSeen.Sub(k.at).Round(time.Millisecond), takeoverBound(), leaseDuration, renewDeadline, retryPeriod)
	c.Check(takeover <= takeoverBound(), Equals, true,
		Commentf("the follower took %s to lead after the kill, more than the lease duration allows (%s)", takeover, takeoverBound()))

	// Every NonAdminBackup created, then completed.
	created.Wait()
	select {
	case err := <-createErr:
		c.Fatal(err)
	default:
	}
	say(c, "all %d NonAdminBackups created in %s", nabs, time.Since(burstStart).Round(time.Millisecond))
	var list v1alpha1.NonAdminBackupList
	// A minute alone on two cores; beside make test's other packages, two.
	e2estack.Eventually(c, 2*time.Minute, func() (bool, string) {
		if !follower.alive() {
			c.Fatalf("%s exited:\n%s", follower.name, follower.logTail(4000))
		}
		list = v1alpha1.NonAdminBackupList{}
		if err := s.c.List(ctx, &list); err != nil {
			return false, err.Error()
		}
		complete := 0
		var waiting string
		for i := range list.Items {
			if p := list.Items[i].Status.Plan; p != nil && p.Action == "backup" && p.State == v1alpha1.PlanComplete {
				complete++
			} else if waiting == "" {
				waiting = fmt.Sprintf("%s/%s: %+v", list.Items[i].Namespace, list.Items[i].Name, p)
			}
		}
		return complete == nabs && len(list.Items) == nabs, fmt.Sprintf("%d of %d NonAdminBackups complete; e.g. %s", complete, len(list.Items), waiting)
	})
	allDone := time.Now()
	say(c, "every NonAdminBackup complete %s after the kill", allDone.Sub(k.at).Round(time.Millisecond))
	nabMu.Lock()
	var timeline []string
	for from := -10 * time.Second; from < allDone.Sub(k.at); from += 5 * time.Second {
		n := 0
		for _, t := range completed {
			if d := t.Sub(k.at); d >= from && d < from+5*time.Second {
				n++
			}
		}
		timeline = append(timeline, fmt.Sprintf("%s:%d", from, n))
	}
	nabMu.Unlock()
	say(c, "completions by 5 s from the kill: %s", strings.Join(timeline, " "))

	// The webhook answered while no one led and answers after.
	d := <-during
	c.Check(d.err, IsNil, Commentf("a NonAdminRestore created right after the kill"))
	c.Check(d.record, Matches, `.*"username":"admin".*`, Commentf("the requester record of the NonAdminRestore created during the failover"))
	say(c, "the requester webhook admitted a NonAdminRestore %s after the kill (%s the new leader took the Lease)",
		d.at.Sub(k.at).Round(time.Millisecond), map[bool]string{true: "before", false: "after"}[d.at.Before(acquired)])
	_, record, err = s.admitted(ctx, nss[2], "after-failover", testwait.Bound(10*time.Second))
	c.Check(err, IsNil, Commentf("a NonAdminRestore created after the failover"))
	c.Check(record, Matches, `.*"username":"admin".*`)
	c.Check(s.proxy.count(follower.webhookAddr) > 0, Equals, true)

	// The events the survivor still holds reach the API server before they
	// are counted.
	e2estack.Eventually(c, 30*time.Second, func() (bool, string) {
		page, err := follower.metrics()
		if err != nil {
			return false, err.Error()
		}
		if v, ok := e2estack.Sample(page, "nacflow_events_queued"); !ok || v != 0 {
			return false, fmt.Sprintf("nacflow_events_queued %v (found: %v)", v, ok)
		}
		return true, ""
	})

	// No Velero object was created twice: by UID, every Backup's
	// NonAdminBackup has one Backup, and no name was made twice.
	byOrigin := map[string][]creation{}
	byName := map[string]int{}
	var firstBackup time.Time
	inGap := 0
	for _, cr := range play.created.all() {
		byName[cr.kind+" "+cr.name]++
		if cr.kind != "Backup" || cr.origin == "" {
			continue
		}
		byOrigin[cr.origin] = append(byOrigin[cr.origin], cr)
		if cr.seen.After(acquired) && (firstBackup.IsZero() || cr.seen.Before(firstBackup)) {
			firstBackup = cr.seen
		}
		if cr.seen.After(k.at.Add(3*time.Second)) && cr.seen.Before(acquired) {
			inGap++
		}
	}
	duplicates := 0
	for origin, crs := range byOrigin {
		if len(crs) > 1 {
			duplicates += len(crs) - 1
			c.Errorf("NonAdminBackup %s got %d Velero Backups: %v", origin, len(crs), crs)
		}
	}
	for name, n := range byName {
		if n > 1 {
			duplicates += n - 1
			c.Errorf("Velero %s was created %d times", name, n)
		}
	}
	c.Check(len(byOrigin), Equals, nabs, Commentf("Velero Backups made for NonAdminBackups"))
	madeAfter, madeByNew := 0, 0
	for _, crs := range byOrigin {
		if crs[0].seen.After(k.at) {
			madeAfter++
		}
		if crs[0].seen.After(acquired) {
			madeByNew++
		}
	}
	say(c, "Velero Backups: %d (%d before the kill, %d after, %d of them once the new leader held the Lease), DownloadRequests: %d; duplicates: %d",
		len(byOrigin), len(byOrigin)-madeAfter, madeAfter, madeByNew, countKind(byName, "DownloadRequest"), duplicates)
	c.Check(madeByNew > 0, Equals, true, Commentf("the new leader made no Velero Backup"))

	// Every NonAdminBackup completed with the one Backup made for it,
	// Completed.
	for i := range list.Items {
		nab := &list.Items[i]
		vb := nab.Status.VeleroBackup
		if vb == nil || vb.Status == nil || vb.Status.Phase != velerov1.BackupPhaseCompleted {
			c.Errorf("%s/%s: Velero Backup not Completed in status: %+v", nab.Namespace, nab.Name, vb)
			continue
		}
		if crs := byOrigin[vb.NACUUID]; len(crs) != 1 || crs[0].name != vb.Name {
			c.Errorf("%s/%s names Velero Backup %s (NACUUID %s); created for it: %v", nab.Namespace, nab.Name, vb.Name, vb.NACUUID, crs)
		}
	}

	// The new leader's first write after it took the Lease: the first
	// Velero Backup and the first NonAdminBackup write its watch showed.
	nabMu.Lock()
	var firstNABWrite time.Time
	nabGap := 0
	for _, t := range nabWrites {
		if t.After(acquired) && (firstNABWrite.IsZero() || t.Before(firstNABWrite)) {
			firstNABWrite = t
		}
		if t.After(k.at.Add(3*time.Second)) && t.Before(acquired) {
			nabGap++
		}
	}
	nabMu.Unlock()
	c.Assert(firstBackup.IsZero() || firstNABWrite.IsZero(), Equals, false, Commentf("no write by the new leader"))
	firstWrite := firstNABWrite
	if firstBackup.Before(firstWrite) {
		firstWrite = firstBackup
	}
	say(c, "kill → new leader's first write: %s (first NonAdminBackup status write %s, first Velero Backup %s; %s after it took the Lease)",
		firstWrite.Sub(k.at).Round(time.Millisecond), firstNABWrite.Sub(k.at).Round(time.Millisecond),
		firstBackup.Sub(k.at).Round(time.Millisecond), firstWrite.Sub(acquired).Round(time.Millisecond))
	c.Check(firstWrite.Sub(acquired) <= testwait.Bound(10*time.Second), Equals, true,
		Commentf("the new leader wrote first %s after it took the Lease", firstWrite.Sub(acquired)))
	// No one wrote while no one led (from 3 s after the kill, past any
	// write the old leader had in flight, until the follower took the
	// Lease): the follower acts only once it leads.
	c.Check(inGap+nabGap, Equals, 0, Commentf("%d Velero Backups and %d NonAdminBackup writes while no replica held the Lease", inGap, nabGap))

	// No phase ended twice: the runner's events are sent only once the
	// status write recording the transitions has landed (events.Buffer),
	// so a phase that ran again after it had been recorded ended (a
	// duplicate CreateVeleroBackup, say) would be told twice. Events the
	// killed leader still held are lost, never doubled.
	var events corev1.EventList
	c.Assert(s.c.List(ctx, &events), IsNil)
	ends := map[string]int{}
	starts := map[string]int{}
	nabUIDs := map[string]string{}
	for i := range list.Items {
		nabUIDs[string(list.Items[i].UID)] = list.Items[i].Namespace + "/" + list.Items[i].Name
	}
	for _, e := range events.Items {
		who, ok := nabUIDs[string(e.InvolvedObject.UID)]
		if !ok {
			continue
		}
		n := max(int(e.Count), 1)
		for _, m := range phaseEnds.FindAllStringSubmatch(e.Message, -1) {
			ends[who+" "+m[2]] += n
		}
		for _, m := range actionStarts.FindAllStringSubmatch(e.Message, -1) {
			starts[who+" "+m[1]] += n
		}
	}
	twice := 0
	for _, key := range slices.Sorted(maps.Keys(ends)) {
		if ends[key] > 1 {
			twice++
			c.Errorf("phase ended %d times: %s", ends[key], key)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(starts)) {
		if starts[key] > 1 {
			twice++
			c.Errorf("action started %d times: %s", starts[key], key)
		}
	}
	createEnds := 0
	for key, n := range ends {
		if strings.HasSuffix(key, " createBackup") {
			createEnds += n
		}
	}
	say(c, "phase ends told: %d (createBackup: %d) over %d NonAdminBackups; ended or started twice: %d", sumValues(ends), createEnds, nabs, twice)
	// Not vacuous: the survivor told the end of createBackup for at least
	// every Backup it made.
	c.Check(createEnds >= madeByNew, Equals, true, Commentf("createBackup ended %d times in events; the new leader made %d Backups", createEnds, madeByNew))
	c.Check(follower.alive(), Equals, true)
	say(c, "the test took %s", time.Since(testStart).Round(time.Millisecond))
}

func countKind(byName map[string]int, kind string) int {
	n := 0
	for k, v := range byName {
		if strings.HasPrefix(k, kind+" ") {
			n += v
		}
	}
	return n
}

func sumValues(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// say logs a figure of the run and prints it too: gocheck shows a passing
// test's log only with -check.vv, and make test-failover's -check.v run is
// where the figures are read.
func say(c *C, format string, args ...any) {
	c.Logf(format, args...)
	fmt.Printf("failover: "+format+"\n", args...)
}
