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
// rather than n waiting at once; and, as Velero's DownloadRequest controller
// does, every DownloadRequest whose status.expiration has passed is deleted
// (the download service sets it ttl after processing; Velero: 10 minutes).
// Its writes are the bench's. It runs until ctx ends.
func playVelero(ctx context.Context, c client.WithWatch, ns string, ttl time.Duration) {
	todo := make(chan string, 4096)
	for range 8 {
		go func() {
			// Velero names the default location in a Backup that names
			// none when it runs it.
			patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"storageLocation":"default"},"status":{"phase":%q}}`, velerov1.BackupPhaseCompleted))
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
	go expireDownloads(ctx, c, ns, ttl)
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

// expireDownloads deletes, every ttl/4 (at least each second), the
// DownloadRequests of ns whose status.expiration has passed, as Velero's
// DownloadRequest controller does.
func expireDownloads(ctx context.Context, c client.Client, ns string, ttl time.Duration) {
	tick := time.NewTicker(max(ttl/4, time.Second))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		list := &velerov1.DownloadRequestList{}
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			continue
		}
		for i := range list.Items {
			dr := &list.Items[i]
			if e := dr.Status.Expiration; e != nil && time.Now().After(e.Time) {
				if err := c.Delete(ctx, dr); client.IgnoreNotFound(err) != nil {
					debugf("expiring DownloadRequest %s: %v", dr.Name, err)
				}
			}
		}
	}
}
