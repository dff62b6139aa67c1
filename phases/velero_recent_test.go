package phases_test

import (
	"context"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/phases"
)

type RecentSuite struct{}

var _ = Suite(&RecentSuite{})

// countingReader counts the reads that reach the "API server".
type countingReader struct {
	client.Reader
	gets int
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.gets++
	return r.Reader.Get(ctx, key, obj, opts...)
}

// A WaitFor right after the CreateVeleroBackup that made its Backup, with a
// cache that has not seen the Backup yet, waits without asking the API
// server; a Backup this process never created is still checked there.
func (s *RecentSuite) TestWaitAfterCreateSkipsAPIRead(c *C) {
	sc := runtime.NewScheme()
	c.Assert(clientgoscheme.AddToScheme(sc), IsNil)
	c.Assert(velerov1.AddToScheme(sc), IsNil)
	c.Assert(v1alpha1.AddToScheme(sc), IsNil)
	server := fake.NewClientBuilder().WithScheme(sc).Build()
	// The cache lags: it never has a Velero Backup.
	lagging := interceptor.NewClient(server, interceptor.Funcs{
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*velerov1.Backup); ok {
				return apierrors.NewNotFound(velerov1.Resource("backups"), key.Name)
			}
			return cl.Get(ctx, key, obj, opts...)
		},
	})
	reader := &countingReader{Reader: server}
	reg, err := phases.NewRegistry(phases.Clients{Client: lagging, APIReader: reader}, phases.Options{})
	c.Assert(err, IsNil)
	create, _ := reg.Get("CreateVeleroBackup")
	wait, _ := reg.Get("WaitFor")
	nab := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "nightly", UID: "u"},
		Spec: v1alpha1.NonAdminBackupSpec{BackupSpec: &velerov1.BackupSpec{}}}
	op := &engine.Operation{Object: nab, OADPNamespace: "oadp", UUID: "u-1"}
	res, err := create.Run(context.Background(), op, create.NewArgs())
	c.Assert(err, IsNil)
	name := res.Output["name"]
	c.Assert(name, Not(Equals), "")

	args := wait.NewArgs().(*phases.WaitForArgs)
	args.Kind, args.Name = "Backup", name
	res, err = wait.Run(context.Background(), op, args)
	c.Assert(err, IsNil)
	c.Check(res.Wait, Equals, true)
	c.Check(res.Message, Equals, "Velero Backup "+name+" is not started")
	c.Check(reader.gets, Equals, 0)

	args.Name = "never-created"
	_, err = wait.Run(context.Background(), op, args)
	c.Check(engine.IsTerminal(err), Equals, true, Commentf("%v", err))
	c.Check(reader.gets, Equals, 1)
}

// fakeQueue answers one position and keeps what it was told was shown.
type fakeQueue struct {
	pos      int
	recorded map[string]int
}

func (q *fakeQueue) Position(string, time.Time) int { return q.pos }
func (q *fakeQueue) Record(name string, _ time.Time, pos int) {
	q.recorded[name] = pos
}

// CreateVeleroBackup writes the new Backup's queue position into the NAB's
// status and records it as shown, so that the next completion does not wake
// the NAB to find its figure unchanged.
func (s *RecentSuite) TestCreateRecordsQueuePosition(c *C) {
	sc := runtime.NewScheme()
	c.Assert(velerov1.AddToScheme(sc), IsNil)
	c.Assert(v1alpha1.AddToScheme(sc), IsNil)
	server := fake.NewClientBuilder().WithScheme(sc).Build()
	queue := &fakeQueue{pos: 7, recorded: map[string]int{}}
	reg, err := phases.NewRegistry(phases.Clients{Client: server, APIReader: server, Queue: queue}, phases.Options{})
	c.Assert(err, IsNil)
	create, _ := reg.Get("CreateVeleroBackup")
	nab := &v1alpha1.NonAdminBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "nightly", UID: "u"},
		Spec: v1alpha1.NonAdminBackupSpec{BackupSpec: &velerov1.BackupSpec{}}}
	res, err := create.Run(context.Background(), &engine.Operation{Object: nab, OADPNamespace: "oadp", UUID: "u-1"}, create.NewArgs())
	c.Assert(err, IsNil)
	c.Assert(nab.Status.QueueInfo, NotNil)
	c.Check(nab.Status.QueueInfo.EstimatedQueuePosition, Equals, 7)
	c.Check(queue.recorded, DeepEquals, map[string]int{res.Output["name"]: 7})
}
