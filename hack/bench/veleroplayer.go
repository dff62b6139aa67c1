package main

import (
	"context"
	"fmt"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// playVelero plays, for -scale, the Velero server of a cluster that keeps
// up: every Backup of namespace ns that a watch shows new ("" or New) is
// patched Completed at once (by 8 workers; spec.storageLocation "default",
// the admin's location, as Velero fills it in), as Velero finishing each backup
// in turn, so that a wave of n NABs becomes n NABs of history as it goes
// rather than n waiting at once (serveDownloadsFor plays its
// DownloadRequests, deleted once expired). Its writes are the bench's. It
// runs until ctx ends.
func playVelero(ctx context.Context, c client.WithWatch, ns string) {
	todo := make(chan string, 4096)
	for range 8 {
		go func() {
			patch := completedPatch()
			for {
				select {
				case <-ctx.Done():
					return
				case name := <-todo:
					b := &velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
					if err := c.Patch(ctx, b, patch); err != nil {
						debugf("completing Velero Backup %s: %v", name, err)
					}
				}
			}
		}()
	}
	for ctx.Err() == nil {
		w, err := c.Watch(ctx, &velerov1.BackupList{}, client.InNamespace(ns))
		if err != nil {
			time.Sleep(time.Second)
			continue
		}
		for ev := range w.ResultChan() {
			b, ok := ev.Object.(*velerov1.Backup)
			if !ok || ev.Type == watch.Deleted || (b.Status.Phase != "" && b.Status.Phase != velerov1.BackupPhaseNew) {
				continue
			}
			select {
			case todo <- b.Name:
			case <-ctx.Done():
			}
		}
		w.Stop()
	}
}

// completedPatch is the merge patch with which the bench plays Velero
// completing a Backup, for nacflow's run and OADP NAC's alike: Velero
// names the default location in a Backup that names none when it runs it
// (spec.storageLocation "default", the admin's location), and sets
// status.phase Completed.
func completedPatch() client.Patch {
	return client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"storageLocation":"default"},"status":{"phase":%q}}`, velerov1.BackupPhaseCompleted))
}
