package phases

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// quotaWarnRatio is the share of a quota past which a new backup is
// accepted with a Warning event.
const quotaWarnRatio = 0.8

// Event reason of CheckQuota.
const (
	// EventQuotaNearlyReached (Warning): the namespace uses more than 80 %
	// of a quota.
	EventQuotaNearlyReached = "QuotaNearlyReached"
)

// Quota bounds what a namespace keeps in object storage.
type Quota struct {
	// MaxBackups bounds the NonAdminBackups that hold or will hold a backup
	// (0: no bound).
	MaxBackups int `json:"maxBackups,omitempty" doc:"the most NonAdminBackups the namespace may hold (0: no bound)"`
	// MaxBytes bounds the bytes they take (status.usage.totalBytes), as a
	// quantity ("10Gi"; unset: no bound).
	MaxBytes *resource.Quantity `json:"maxBytes,omitempty" doc:"the most bytes the namespace's backups may take (status.usage.totalBytes), a quantity such as 10Gi (unset: no bound)"`
}

// CheckQuotaArgs are the args of CheckQuota: the admin's quotas, through a
// per-tenant blueprint.
type CheckQuotaArgs struct {
	Quota `json:",inline"`
	// Locations holds quotas per storage location (the
	// NonAdminBackupStorageLocation's name, or "default"), checked besides
	// the namespace's.
	Locations map[string]Quota `json:"locations,omitempty" doc:"quotas per storage location (a NonAdminBackupStorageLocation's name, or default), checked besides the namespace's"`
}

// CheckQuota refuses a new NonAdminBackup that would take its namespace
// past the admin's quota (nacflow's addition; OADP NAC has only a TTL):
// args.maxBackups counts the namespace's NonAdminBackups that hold or will
// hold a backup — not being deleted, their plan not failed, their Velero
// Backup not Failed — and args.maxBytes what they take (status.usage
// .totalBytes, measured by MeasureUsage), per namespace and per location
// (args.locations). A refusal sets Accepted=False, reason QuotaExceeded,
// naming the figure, the limit and what to delete, and is terminal: nothing
// is created in the OADP namespace. Past 80 % of a quota the backup is
// accepted with a Warning event QuotaNearlyReached. A restore is never
// checked.
//
// Outputs: backups, bytes (the namespace's, before this backup). Errors: a
// refusal is terminal; API errors are retryable.
type CheckQuota struct {
	tools tools
}

// Run implements phaseFunc.
func (f *CheckQuota) Run(ctx context.Context, op *engine.Operation, nab *v1alpha1.NonAdminBackup, a *CheckQuotaArgs) (engine.Result, error) {
	if a.MaxBackups == 0 && a.MaxBytes == nil && len(a.Locations) == 0 {
		return engine.Done("no quota", nil), nil
	}
	location := ""
	if spec := nab.Spec.BackupSpec; spec != nil {
		location = spec.StorageLocation
	}
	location = v1alpha1.LocationName(location)
	list := &v1alpha1.NonAdminBackupList{}
	if err := op.Client.List(ctx, list, client.InNamespace(nab.Namespace)); err != nil {
		return engine.Result{}, fmt.Errorf("listing the NonAdminBackups of %s: %w", nab.Namespace, err)
	}
	var all, here usage
	for i := range list.Items {
		n := &list.Items[i]
		if n.UID == nab.UID || !n.HoldsBackup() {
			continue
		}
		all.add(n)
		if l := n.UsageLocation(); l == location {
			here.add(n)
		}
	}
	out := map[string]string{"backups": fmt.Sprint(all.backups), "bytes": fmt.Sprint(all.bytes)}
	checks := []struct {
		q     Quota
		u     usage
		scope string
	}{{a.Quota, all, "namespace " + nab.Namespace}}
	if q, ok := a.Locations[location]; ok {
		checks = append(checks, struct {
			q     Quota
			u     usage
			scope string
		}{q, here, fmt.Sprintf("location %s of namespace %s", location, nab.Namespace)})
	}
	var warnings []string
	for _, ch := range checks {
		if msg := ch.u.exceeds(ch.q, ch.scope); msg != "" {
			return engine.Result{}, refuse(nab, v1alpha1.ReasonQuotaExceeded, fmt.Errorf("%s", msg))
		}
		warnings = append(warnings, ch.u.nearly(ch.q, ch.scope)...)
	}
	for _, w := range warnings {
		if f.tools.recorder != nil {
			f.tools.recorder.Event(op.Object, corev1.EventTypeWarning, EventQuotaNearlyReached, w)
		}
	}
	return engine.Done(fmt.Sprintf("within quota: %d backups, %d bytes in namespace %s", all.backups, all.bytes, nab.Namespace), out), nil
}

// usage is what some of a namespace's NonAdminBackups hold.
type usage struct {
	backups int
	bytes   int64
}

// add counts n.
func (u *usage) add(n *v1alpha1.NonAdminBackup) {
	u.backups++
	if n.Status.Usage != nil {
		u.bytes += n.Status.Usage.TotalBytes
	}
}

// exceeds returns why one more backup would take u past q ("" when it
// would not).
func (u usage) exceeds(q Quota, scope string) string {
	if q.MaxBackups > 0 && u.backups+1 > q.MaxBackups {
		return fmt.Sprintf("quota exceeded: %s holds %d backups, the most its quota allows (maxBackups %d): delete one (spec.deleteBackup: true on a NonAdminBackup) to make room",
			scope, u.backups, q.MaxBackups)
	}
	if q.MaxBytes != nil && u.bytes >= q.MaxBytes.Value() {
		return fmt.Sprintf("quota exceeded: %s's backups take %s, the most its quota allows (maxBytes %s): delete some (spec.deleteBackup: true on a NonAdminBackup) to make room",
			scope, bytesString(u.bytes), q.MaxBytes.String())
	}
	return ""
}

// nearly returns a warning for each of q's limits u passed 80 % of,
// counting the new backup.
func (u usage) nearly(q Quota, scope string) []string {
	var out []string
	if q.MaxBackups > 0 && float64(u.backups+1) > quotaWarnRatio*float64(q.MaxBackups) {
		out = append(out, fmt.Sprintf("%s holds %d of the %d backups its quota allows (maxBackups) with this one", scope, u.backups+1, q.MaxBackups))
	}
	if q.MaxBytes != nil && float64(u.bytes) > quotaWarnRatio*float64(q.MaxBytes.Value()) {
		out = append(out, fmt.Sprintf("%s's backups take %s of the %s its quota allows (maxBytes)", scope, bytesString(u.bytes), q.MaxBytes.String()))
	}
	return out
}

// bytesString writes n bytes as a binary quantity ("1536Mi").
func bytesString(n int64) string {
	return resource.NewQuantity(n, resource.BinarySI).String()
}
