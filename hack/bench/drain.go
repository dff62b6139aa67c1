package main

import (
	"fmt"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/velero/veleroqueue"
)

// simulateSerialDrain plays Velero serving a queue of n Backups one at a
// time, oldest first, each completion followed by a refresh under
// phases.PositionStale, every NonAdminBackup starting with its exact
// position. It returns the position writes of the first completion (n-1
// waiting) and of the whole drain, the figures the bench reports. Pure
// computation on the controller's queue index; no API server.
func simulateSerialDrain(n int) (first, total int) {
	q := veleroqueue.NewBackupQueue()
	base := time.Unix(1_000_000, 0)
	backups := make([]*velerov1.Backup, n)
	byName := make(map[string]*velerov1.Backup, n)
	for i := range backups {
		name := fmt.Sprintf("b%07d", i)
		b := &velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(base.Add(time.Duration(i) * time.Second)),
			Annotations: map[string]string{v1alpha1.NabOriginNamespaceAnnotation: "tenant", v1alpha1.NabOriginNameAnnotation: name}}}
		b.Status.Phase = velerov1.BackupPhaseNew
		q.Observe(b)
		q.Record(name, b.CreationTimestamp.Time, i+1)
		backups[i], byName[name] = b, b
	}
	for i, b := range backups {
		b.Status.Phase = velerov1.BackupPhaseCompleted
		q.Observe(b)
		writes := 0
		for _, key := range q.StaleWaiting() {
			w := byName[key.Name]
			q.Record(w.Name, w.CreationTimestamp.Time, q.Position(w.Name, w.CreationTimestamp.Time))
			writes++
		}
		if i == 0 {
			first = writes
		}
		total += writes
	}
	return first, total
}
