package phases

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/blueprints"
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
// checked. The same args hold the namespace's schedules (QuotaSource,
// SyncScheduleRuns): the built-in blueprint has the phase with no args, so
// that a per-tenant blueprint sets only them.
//
// Outputs: backups, bytes (the namespace's, before this backup). Errors: a
// refusal is terminal; API errors are retryable.
type CheckQuota struct {
	tools tools
}

// Run implements phaseFunc.
func (f *CheckQuota) Run(ctx context.Context, op *engine.Operation, nab *v1alpha1.NonAdminBackup, a *CheckQuotaArgs) (engine.Result, error) {
	if !a.any() {
		return engine.Done("no quota", nil), nil
	}
	location := ""
	if spec := nab.Spec.BackupSpec; spec != nil {
		location = spec.StorageLocation
	}
	all, here, err := namespaceUsage(ctx, op.Client, nab.Namespace, v1alpha1.LocationName(location), func(n *v1alpha1.NonAdminBackup) bool { return n.UID == nab.UID })
	if err != nil {
		return engine.Result{}, err
	}
	out := map[string]string{"backups": fmt.Sprint(all.Backups), "bytes": fmt.Sprint(all.TotalBytes)}
	exceeded, warnings := a.check(all, here, nab.Namespace, v1alpha1.LocationName(location))
	if exceeded != "" {
		return engine.Result{}, refuse(nab, v1alpha1.ReasonQuotaExceeded, fmt.Errorf("%s", exceeded))
	}
	for _, w := range warnings {
		if f.tools.recorder != nil {
			f.tools.recorder.Event(op.Object, corev1.EventTypeWarning, EventQuotaNearlyReached, w)
		}
	}
	return engine.Done(fmt.Sprintf("within quota: %d backups, %d bytes in namespace %s", all.Backups, all.TotalBytes, nab.Namespace), out), nil
}

// any reports whether a sets any limit.
func (a *CheckQuotaArgs) any() bool {
	return a != nil && (a.MaxBackups > 0 || a.MaxBytes != nil || len(a.Locations) > 0)
}

// check returns why one more backup of namespace ns on location would pass
// a's quotas ("" when it would not), given what the namespace (all) and the
// location (here) hold, and a warning for each quota past 80 %.
func (a *CheckQuotaArgs) check(all, here v1alpha1.StorageUsage, ns, location string) (exceeded string, warnings []string) {
	checks := []struct {
		q     Quota
		u     v1alpha1.StorageUsage
		scope string
	}{{a.Quota, all, "namespace " + ns}}
	if q, ok := a.Locations[location]; ok {
		checks = append(checks, struct {
			q     Quota
			u     v1alpha1.StorageUsage
			scope string
		}{q, here, fmt.Sprintf("location %s of namespace %s", location, ns)})
	}
	for _, ch := range checks {
		if msg := exceeds(ch.u, ch.q, ch.scope); msg != "" {
			return msg, nil
		}
		warnings = append(warnings, nearly(ch.u, ch.q, ch.scope)...)
	}
	return "", warnings
}

// namespaceUsage counts what the NonAdminBackups of namespace ns hold
// (HoldsBackup), all of them and those on location, leaving out those skip
// names. Errors: the list's, retryable.
func namespaceUsage(ctx context.Context, c client.Reader, ns, location string, skip func(*v1alpha1.NonAdminBackup) bool) (all, here v1alpha1.StorageUsage, err error) {
	list := &v1alpha1.NonAdminBackupList{}
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		return all, here, fmt.Errorf("listing the NonAdminBackups of %s: %w", ns, err)
	}
	for i := range list.Items {
		n := &list.Items[i]
		if skip(n) || !all.Add(n) {
			continue
		}
		if n.UsageLocation() == location {
			here.Add(n)
		}
	}
	return all, here, nil
}

// QuotaSource finds the admin's quota for a tenant namespace, for what is
// not a NonAdminBackup's own plan (a schedule's runs): the one place an
// admin sets quotas is CheckQuota's args in the backup action of the
// NonAdminBackup blueprint that applies to the namespace.
type QuotaSource interface {
	// Quota returns the quota of a namespace with labels nsLabels (nil:
	// none) and the blueprint it comes from. Errors: reading blueprints,
	// or args that do not decode (templated ones).
	Quota(ctx context.Context, nsLabels map[string]string) (*CheckQuotaArgs, string, error)
}

// BlueprintQuotas is the QuotaSource of a blueprint resolver: the args of
// the first CheckQuota phase of the NonAdminBackup backup action resolved
// for the namespace (per-tenant blueprint, override, built-in), as the
// namespace's next NonAdminBackup would run it.
type BlueprintQuotas struct {
	Resolver *blueprints.Resolver
}

// Quota implements QuotaSource.
func (b BlueprintQuotas) Quota(ctx context.Context, nsLabels map[string]string) (*CheckQuotaArgs, string, error) {
	kind, _ := v1alpha1.LookupKind("NonAdminBackup")
	res, err := b.Resolver.Resolve(ctx, kind.Blueprint, kind.Kind, "backup", nsLabels)
	if err != nil {
		return nil, "", err
	}
	for _, p := range res.Action.Phases {
		if p.Func != "CheckQuota" {
			continue
		}
		raw, err := json.Marshal(p.Args)
		if err != nil {
			return nil, res.Blueprint, err
		}
		a := &CheckQuotaArgs{}
		if err := json.Unmarshal(raw, a); err != nil {
			return nil, res.Blueprint, fmt.Errorf("the args of phase %s (CheckQuota) of blueprint %s: %w", p.Name, res.Blueprint, err)
		}
		if !a.any() {
			return nil, res.Blueprint, nil
		}
		return a, res.Blueprint, nil
	}
	return nil, res.Blueprint, nil
}

// exceeds returns why one more backup would take u past q ("" when it
// would not).
func exceeds(u v1alpha1.StorageUsage, q Quota, scope string) string {
	if q.MaxBackups > 0 && int(u.Backups)+1 > q.MaxBackups {
		return fmt.Sprintf("quota exceeded: %s holds %d backups, the most its quota allows (maxBackups %d): delete one (spec.deleteBackup: true on a NonAdminBackup) to make room",
			scope, u.Backups, q.MaxBackups)
	}
	if q.MaxBytes != nil && u.TotalBytes >= q.MaxBytes.Value() {
		return fmt.Sprintf("quota exceeded: %s's backups take %s, the most its quota allows (maxBytes %s): delete some (spec.deleteBackup: true on a NonAdminBackup) to make room",
			scope, bytesString(u.TotalBytes), q.MaxBytes.String())
	}
	return ""
}

// nearly returns a warning for each of q's limits u passed 80 % of,
// counting the new backup.
func nearly(u v1alpha1.StorageUsage, q Quota, scope string) []string {
	var out []string
	if q.MaxBackups > 0 && float64(u.Backups+1) > quotaWarnRatio*float64(q.MaxBackups) {
		out = append(out, fmt.Sprintf("%s holds %d of the %d backups its quota allows (maxBackups) with this one", scope, u.Backups+1, q.MaxBackups))
	}
	if q.MaxBytes != nil && float64(u.TotalBytes) > quotaWarnRatio*float64(q.MaxBytes.Value()) {
		out = append(out, fmt.Sprintf("%s's backups take %s of the %s its quota allows (maxBytes)", scope, bytesString(u.TotalBytes), q.MaxBytes.String()))
	}
	return out
}

// bytesString writes n bytes as a binary quantity ("1536Mi").
func bytesString(n int64) string {
	return resource.NewQuantity(n, resource.BinarySI).String()
}

// Doc implements engine.Documented.
func (*CheckQuota) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Refuses a new NonAdminBackup that would take its namespace past the admin's quota: args.maxBackups (NonAdminBackups that hold or will hold a backup) and args.maxBytes (their status.usage.totalBytes), per namespace and per location (args.locations). Accepted=False/QuotaExceeded naming the figure, the limit and what to delete; nothing is created. Past 80 % a Warning event QuotaNearlyReached. No args: no quota. The same args hold the namespace's NonAdminSchedules: SyncScheduleRuns pauses one whose next run would pass them.",
		Outputs: []string{"backups, bytes: the namespace's before this backup"},
		Errors:  "a refusal is terminal; " + apiRetried,
	}
}
