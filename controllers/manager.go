package controllers

import (
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	velerov2alpha1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v2alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// RBAC the manager needs besides its reconcilers': leader election, and
// reading OADP's DataProtectionApplication for its non-admin settings
// (package dpa; the OADP namespace only).
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=openshift-adp,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=oadp.openshift.io,namespace=openshift-adp,resources=dataprotectionapplications,verbs=get;list
// +kubebuilder:rbac:groups=velero.io,namespace=openshift-adp,resources=datauploads;datadownloads;podvolumebackups;podvolumerestores,verbs=get;list;watch

// Event rate defaults (--event-qps, --event-burst), kubelet's own: events
// are written to the API server at most this fast. Under a burst of
// operations the rest wait in client-go's queue (1,000 events; beyond it they
// are dropped: events are best effort, status is the record), so that events
// never take the API server's capacity from the operations themselves
// (make bench: about one write in five during a 1,000-NAB wave).
const (
	DefaultEventQPS   = 50
	DefaultEventBurst = 100
)

// NewEventBroadcaster returns the broadcaster for the manager's events,
// writing at most qps events per second (bursts of burst; qps <= 0: no
// limit). Its correlator is sized for phase plans: client-go's defaults drop
// events past 25 per object within 5 minutes and merge more than 10 alike
// ones (same reason) into one, which would cut the phase-by-phase story
// kubectl describe tells of a NAB (a backup and a delete alone emit about 30).
func NewEventBroadcaster(qps float32, burst int) record.EventBroadcaster {
	b := record.NewBroadcasterWithCorrelatorOptions(record.CorrelatorOptions{
		BurstSize:            200, // events per object before rate limiting
		QPS:                  1,   // refill, events per second per object
		MaxEvents:            100, // alike events before they are aggregated
		MaxIntervalInSeconds: 600,
	})
	if qps <= 0 {
		return b
	}
	return &throttledBroadcaster{EventBroadcaster: b, limiter: flowcontrol.NewTokenBucketRateLimiter(qps, burst)}
}

// throttledBroadcaster hands its sink a rate limit: client-go writes events
// one at a time from one goroutine, so blocking there paces them all.
type throttledBroadcaster struct {
	record.EventBroadcaster
	limiter flowcontrol.RateLimiter
}

// StartRecordingToSink implements record.EventBroadcaster.
func (b *throttledBroadcaster) StartRecordingToSink(sink record.EventSink) watch.Interface {
	return b.EventBroadcaster.StartRecordingToSink(&throttledSink{EventSink: sink, limiter: b.limiter})
}

// throttledSink waits for the limiter before each write.
type throttledSink struct {
	record.EventSink
	limiter flowcontrol.RateLimiter
}

func (s *throttledSink) Create(e *corev1.Event) (*corev1.Event, error) {
	s.limiter.Accept()
	return s.EventSink.Create(e)
}

func (s *throttledSink) Update(e *corev1.Event) (*corev1.Event, error) {
	s.limiter.Accept()
	return s.EventSink.Update(e)
}

func (s *throttledSink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	s.limiter.Accept()
	return s.EventSink.Patch(e, data)
}

// NewScheme returns a scheme with the Kubernetes built-ins, Velero's kinds and
// nacflow's. It returns an error only if a kind is registered twice.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, velerov1.AddToScheme, velerov2alpha1.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// CacheOptions returns the manager's cache options: Velero objects are
// watched only in oadpNamespace (DeleteBackupRequests only when they carry
// the OADP label), never cluster-wide (DESIGN.md §6); Blueprints only in oadpNamespace. NAC
// kinds are watched cluster-wide.
func CacheOptions(oadpNamespace string) cache.Options {
	nacSelector := labels.SelectorFromSet(labels.Set{v1alpha1.OADPLabel: v1alpha1.OADPLabelValue})
	oadpOnly := map[string]cache.Config{oadpNamespace: {}}
	return cache.Options{
		// managedFields are never read: not keeping them saves memory on
		// every cached object.
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			// Every Backup of the OADP namespace, NAC's or not: all of them
			// take a place in Velero's queue.
			&velerov1.Backup{}:                               {Namespaces: oadpOnly},
			&velerov1.DeleteBackupRequest{}:                  {Namespaces: oadpOnly, Label: nacSelector},
			&velerov1.Restore{}:                              {Namespaces: oadpOnly, Label: nacSelector},
			&velerov1.BackupStorageLocation{}:                {Namespaces: oadpOnly, Label: nacSelector},
			&velerov1.DownloadRequest{}:                      {Namespaces: oadpOnly, Label: nacSelector},
			&velerov1.Schedule{}:                             {Namespaces: oadpOnly, Label: nacSelector},
			&v1alpha1.NonAdminBackupStorageLocationRequest{}: {Namespaces: oadpOnly},
			&v1alpha1.Blueprint{}:                            {Namespaces: oadpOnly},
			// The volume work of Velero's node agent, counted in NAB and NAR
			// status (OADP NAC's progress counters).
			&velerov2alpha1.DataUpload{}:   {Namespaces: oadpOnly},
			&velerov2alpha1.DataDownload{}: {Namespaces: oadpOnly},
			&velerov1.PodVolumeBackup{}:    {Namespaces: oadpOnly},
			&velerov1.PodVolumeRestore{}:   {Namespaces: oadpOnly},
		},
	}
}
