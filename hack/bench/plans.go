package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// planTracker follows the plan state (status.plan.state) of every
// NonAdminBackup through a watch, so that the bench can wait for plans to
// end without listing thousands of NABs over and over.
type planTracker struct {
	mu    sync.Mutex
	state map[string]v1alpha1.PlanState // by namespace/name
	// velero is each NAB's status.veleroBackup.status.phase.
	velero map[string]velerov1.BackupPhase
}

// trackPlans starts a tracker, which follows the NABs until ctx ends.
func trackPlans(ctx context.Context, c client.WithWatch) *planTracker {
	t := &planTracker{state: map[string]v1alpha1.PlanState{}, velero: map[string]velerov1.BackupPhase{}}
	go func() {
		for ctx.Err() == nil {
			rv, err := t.list(ctx, c)
			if err != nil {
				time.Sleep(time.Second)
				continue
			}
			w, err := c.Watch(ctx, &v1alpha1.NonAdminBackupList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
			if err != nil {
				time.Sleep(time.Second)
				continue
			}
			for ev := range w.ResultChan() {
				if ev.Type == watch.Error {
					break
				}
				if nab, ok := ev.Object.(*v1alpha1.NonAdminBackup); ok && ev.Type != watch.Deleted {
					t.record(nab)
				}
			}
			w.Stop()
		}
	}()
	return t
}

// list records every NAB, listing them 500 a page, and returns the
// list's resource version (the first page's snapshot), to watch from.
func (t *planTracker) list(ctx context.Context, c client.Client) (string, error) {
	cont := ""
	for {
		list := &v1alpha1.NonAdminBackupList{}
		if err := c.List(ctx, list, client.Limit(500), client.Continue(cont)); err != nil {
			return "", err
		}
		for i := range list.Items {
			t.record(&list.Items[i])
		}
		if cont = list.Continue; cont == "" {
			return list.ResourceVersion, nil
		}
	}
}

func (t *planTracker) record(nab *v1alpha1.NonAdminBackup) {
	var s v1alpha1.PlanState
	if nab.Status.Plan != nil {
		s = nab.Status.Plan.State
	}
	var p velerov1.BackupPhase
	if vb := nab.Status.VeleroBackup; vb != nil && vb.Status != nil {
		p = vb.Status.Phase
	}
	t.mu.Lock()
	t.state[nab.Namespace+"/"+nab.Name] = s
	t.velero[nab.Namespace+"/"+nab.Name] = p
	t.mu.Unlock()
}

// completed returns how many of keys (namespace/name) are Completed: their
// status.veleroBackup.status.phase (the NAB's phase stays Created, as OADP
// NAC's does).
func (t *planTracker) completed(keys []string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, k := range keys {
		if t.velero[k] == velerov1.BackupPhaseCompleted {
			n++
		}
	}
	return n
}

// ended returns how many of keys (namespace/name) have a plan that ended:
// complete or failed.
func (t *planTracker) ended(keys []string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, k := range keys {
		if s := t.state[k]; s == v1alpha1.PlanComplete || s == v1alpha1.PlanFailed {
			n++
		}
	}
	return n
}

// waitEnded waits until the plans of all keys have ended, checking twice a
// second.
func (t *planTracker) waitEnded(ctx context.Context, keys []string) error {
	for {
		n := t.ended(keys)
		if n == len(keys) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for plans to end: %d of %d ended: %w", n, len(keys), ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}
