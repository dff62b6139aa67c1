package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// Details is what describe --details adds from Velero's files, fetched
// through a NonAdminDownloadRequest: the resource list (group/version/kind
// → "namespace/name" items), or why it is missing.
type Details struct {
	// Resources is Velero's BackupResourceList / RestoreResourceList.
	Resources map[string][]string
	// Unavailable says why Resources could not be read ("" when read).
	Unavailable string
}

// describer writes "Key:  value" lines with nesting, kubectl describe's
// layout.
type describer struct {
	w   io.Writer
	now time.Time
}

func (d describer) line(indent int, key string, value any) {
	pad := strings.Repeat("  ", indent)
	if key == "" {
		fmt.Fprintf(d.w, "%s%v\n", pad, value)
		return
	}
	if value == "" {
		fmt.Fprintf(d.w, "%s%s:\n", pad, key)
		return
	}
	fmt.Fprintf(d.w, "%s%-*s %v\n", pad, 22-2*indent, key+":", value)
}

// DescribeBackup writes nab as `kubectl nac backup describe` prints it:
// metadata, the spec that matters, the phase timeline of status.plan, the
// live progress of the wait (queue position, items, volumes), Velero's
// result, conditions, and with details the resource list. now times running
// phases (durations of ended ones come from the recorded times only).
func DescribeBackup(w io.Writer, nab *v1alpha1.NonAdminBackup, details *Details, now time.Time) {
	d := describer{w: w, now: now}
	d.header(&nab.ObjectMeta, string(nab.Status.Phase))
	if spec := nab.Spec.BackupSpec; spec != nil {
		d.line(0, "Storage Location", or(spec.StorageLocation, "<default>"))
		d.line(0, "TTL", ttlString(spec.TTL))
		d.line(0, "Included Resources", listOr(spec.IncludedResources, "*"))
		d.line(0, "Excluded Resources", listOr(spec.ExcludedResources, "<none>"))
		if spec.LabelSelector != nil {
			d.line(0, "Label Selector", metav1.FormatLabelSelector(spec.LabelSelector))
		}
	}
	if nab.Spec.DeleteBackup {
		d.line(0, "Delete Backup", "requested (the Velero Backup and its data are being deleted)")
	}
	d.plan(nab.Status.Plan)
	op := backupOperation(nab)
	d.describeProgress(op)
	fmt.Fprintln(w)
	d.describeResult(op)
	if dbr := nab.Status.VeleroDeleteBackupRequest; dbr != nil && dbr.Name != "" {
		var phase string
		if dbr.Status != nil {
			phase = string(dbr.Status.Phase)
		}
		d.veleroObject("Delete Request", dbr.Namespace, dbr.Name, phase)
	}
	d.restoreTest(nab.Status.RestoreTest)
	d.conditions(nab.Status.Conditions)
	d.details(details)
}

// veleroObject writes the line title of a Velero object an operation made:
// "<namespace>/<name> (<phase>)", the phase <unknown> while none is
// mirrored.
func (d *describer) veleroObject(title, namespace, name, phase string) {
	d.line(0, title, fmt.Sprintf("%s/%s (%s)", namespace, name, or(phase, "<unknown>")))
}

// restoreTest writes a backup's restore test (TestRestore): its result,
// RTO, items and when, then its message.
func (d *describer) restoreTest(rt *v1alpha1.RestoreTest) {
	if rt == nil {
		return
	}
	what := rt.Result
	if rt.RTO != nil {
		what += ", RTO " + rt.RTO.Duration.String()
	}
	if rt.ItemsExpected > 0 || rt.ItemsRestored > 0 {
		what += fmt.Sprintf(", %d of %d items restored", rt.ItemsRestored, rt.ItemsExpected)
	}
	what += " (" + durationString(d.now.Sub(rt.Time.Time)) + " ago)"
	d.line(0, "Restore Test", what)
	if rt.Message != "" {
		d.line(1, "Message", rt.Message)
	}
}

// DescribeRestore writes nar as `kubectl nac restore describe` prints it
// (the layout of DescribeBackup).
func DescribeRestore(w io.Writer, nar *v1alpha1.NonAdminRestore, details *Details, now time.Time) {
	d := describer{w: w, now: now}
	d.header(&nar.ObjectMeta, string(nar.Status.Phase))
	if spec := nar.Spec.RestoreSpec; spec != nil {
		d.line(0, "Backup", spec.BackupName)
		d.line(0, "Included Resources", listOr(spec.IncludedResources, "*"))
		d.line(0, "Excluded Resources", listOr(spec.ExcludedResources, "<none>"))
		if to := spec.NamespaceMapping[nar.Namespace]; to != "" && to != nar.Namespace {
			d.line(0, "Namespace Mapping", nar.Namespace+" → "+to)
		}
		if m := spec.ResourceModifier; m != nil {
			d.line(0, "Resource Modifiers", "ConfigMap "+m.Name)
		}
	}
	if rec := nar.Annotations[v1alpha1.RequesterAnnotation]; rec != "" {
		var r struct {
			User struct {
				Username string `json:"username"`
			} `json:"user"`
		}
		if json.Unmarshal([]byte(rec), &r) == nil && r.User.Username != "" {
			d.line(0, "Requested By", r.User.Username+" (recorded; see condition RequesterVerified)")
		}
	}
	d.plan(nar.Status.Plan)
	if nar.Spec.Preview {
		// A preview restores nothing: its result is the preview itself.
		fmt.Fprintln(w)
		if pv := nar.Status.Preview; pv != nil {
			fmt.Fprintln(w, "Preview:")
			_ = printPreview(w, pv, "")
		} else {
			d.line(0, "Preview", "<not yet>")
		}
		d.conditions(nar.Status.Conditions)
		return
	}
	op := restoreOperation(nar)
	d.describeProgress(op)
	fmt.Fprintln(w)
	d.describeResult(op)
	d.conditions(nar.Status.Conditions)
	d.details(details)
}

// DescribeBSL writes a NonAdminBackupStorageLocation: its location, the
// phase timeline, Velero's view of the location and the conditions
// (approval among them).
func DescribeBSL(w io.Writer, nabsl *v1alpha1.NonAdminBackupStorageLocation, now time.Time) {
	d := describer{w: w, now: now}
	d.header(&nabsl.ObjectMeta, string(nabsl.Status.Phase))
	d.bslSpec(0, nabsl.Spec.BackupStorageLocationSpec)
	d.plan(nabsl.Status.Plan)
	fmt.Fprintln(w)
	if v := nabsl.Status.VeleroBackupStorageLocation; v != nil && v.Name != "" {
		d.line(0, "Velero Location", v.Namespace+"/"+v.Name)
		if v.Status == nil {
			// Linked to its request before approval (OADP NAC's order):
			// the name is the one the location will have.
			d.line(1, "Phase", "<not created yet>")
		} else {
			d.line(1, "Phase", or(string(v.Status.Phase), "<unknown>"))
			if v.Status.LastValidationTime != nil {
				d.line(1, "Last Validated", stamp(v.Status.LastValidationTime))
			}
			if v.Status.Message != "" {
				d.line(1, "Message", v.Status.Message)
			}
		}
	} else {
		d.line(0, "Velero Location", "<none yet>")
	}
	d.conditions(nabsl.Status.Conditions)
}

// DescribeBSLRequest writes a NonAdminBackupStorageLocationRequest: whose
// location it is, the decision, and the location asked for (and the one
// approved, when they differ).
func DescribeBSLRequest(w io.Writer, req *v1alpha1.NonAdminBackupStorageLocationRequest) {
	d := describer{w: w}
	d.line(0, "Name", req.Name)
	d.line(0, "Namespace", req.Namespace)
	d.line(0, "Created", stamp(&req.CreationTimestamp))
	d.line(0, "Phase", or(string(req.Status.Phase), "<pending>"))
	d.line(0, "Decision", or(string(req.Spec.ApprovalDecision), "<none>"))
	if src := req.Status.SourceNonAdminBSL; src != nil {
		d.line(0, "Requested By", fmt.Sprintf("NonAdminBackupStorageLocation %s/%s (NACUUID %s)", src.Namespace, src.Name, or(src.NACUUID, "<none>")))
		fmt.Fprintln(w)
		d.line(0, "Requested Location", "")
		d.bslSpec(1, src.RequestedSpec)
	}
	if req.Status.ApprovedSpec != nil {
		fmt.Fprintln(w)
		d.line(0, "Approved Location", "")
		d.bslSpec(1, req.Status.ApprovedSpec)
	}
}

func (d describer) header(m *metav1.ObjectMeta, phase string) {
	d.line(0, "Name", m.Name)
	d.line(0, "Namespace", m.Namespace)
	if len(m.Labels) > 0 {
		d.line(0, "Labels", mapString(m.Labels))
	}
	d.line(0, "Created", stamp(&m.CreationTimestamp))
	d.line(0, "Phase", or(phase, "<new>"))
}

func (d describer) bslSpec(indent int, spec *velerov1.BackupStorageLocationSpec) {
	if spec == nil {
		d.line(indent, "Location", "<none>")
		return
	}
	d.line(indent, "Provider", spec.Provider)
	if os := spec.ObjectStorage; os != nil {
		d.line(indent, "Bucket", os.Bucket)
		d.line(indent, "Prefix", or(os.Prefix, "<none>"))
	}
	if spec.Credential != nil {
		d.line(indent, "Credential", spec.Credential.Name+"/"+spec.Credential.Key)
	}
	if len(spec.Config) > 0 {
		d.line(indent, "Config", mapString(spec.Config))
	}
	if spec.AccessMode != "" {
		d.line(indent, "Access Mode", spec.AccessMode)
	}
}

// plan writes the timeline of p: one row per phase and the deferPhase.
func (d describer) plan(p *v1alpha1.PlanStatus) {
	fmt.Fprintln(d.w)
	if p == nil {
		d.line(0, "Plan", "<not started>")
		return
	}
	summary := fmt.Sprintf("%s (blueprint %s, %s): %s", p.Action, p.Blueprint, or(p.BlueprintGeneration, "?"), p.State)
	if p.StartTime != nil {
		end := d.now
		if p.CompletionTime != nil {
			end = p.CompletionTime.Time
		}
		summary += ", " + durationString(end.Sub(p.StartTime.Time))
		if p.CompletionTime == nil {
			summary += " so far"
		}
	}
	d.line(0, "Plan", summary)
	if p.StartTime != nil {
		d.line(1, "Started", stamp(p.StartTime))
	}
	if p.CompletionTime != nil {
		d.line(1, "Completed", stamp(p.CompletionTime))
	}
	if p.BlueprintMessage != "" {
		d.line(1, "Blueprint Note", p.BlueprintMessage)
	}
	if p.Message != "" {
		d.line(1, "Message", p.Message)
	}
	if s := p.Superseded; s != nil {
		d.line(1, "Superseded", fmt.Sprintf("%s at %s: %s", s.Action, or(s.Current, "?"), s.Reason))
	}
	if p.IsSummary() {
		// A plan that completed with every phase plain keeps no phase
		// list (engine.Compact).
		d.line(1, "Phases", fmt.Sprintf("every phase completed at its first attempt (the list is not kept; last: %s)", or(p.Current, "?")))
		return
	}
	tw := tabwriter.NewWriter(d.w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  PHASE\tFUNCTION\tSTATE\tSTART\tDURATION\tATTEMPTS\tMESSAGE")
	// A compacted plan keeps no phase start times: each phase started when
	// the one before it ended, the first when the plan started.
	prevEnd := p.StartTime
	row := func(name string, ph v1alpha1.PhaseStatus) {
		start, dur := "-", "-"
		if p.Compacted && ph.StartTime == nil && ph.CompletionTime != nil {
			ph.StartTime = prevEnd
		}
		if ph.CompletionTime != nil {
			prevEnd = ph.CompletionTime
		}
		if ph.StartTime != nil {
			if p.StartTime != nil {
				start = "+" + durationString(ph.StartTime.Sub(p.StartTime.Time))
			} else {
				start = stamp(ph.StartTime)
			}
			switch {
			case ph.CompletionTime != nil:
				dur = durationString(ph.CompletionTime.Sub(ph.StartTime.Time))
			case ph.State == v1alpha1.PhaseRunning || ph.State == v1alpha1.PhaseWaiting:
				dur = durationString(d.now.Sub(ph.StartTime.Time)) + "…"
			}
		}
		attempts := "-"
		switch {
		case ph.Attempts > 0:
			attempts = fmt.Sprint(ph.Attempts)
		case p.Compacted && (ph.State == v1alpha1.PhaseComplete || ph.State == v1alpha1.PhaseFailed):
			attempts = "1"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, ph.Func, ph.State, start, dur, attempts, oneLine(ph.Message))
	}
	for _, ph := range p.Phases {
		row(ph.Name, ph)
	}
	if p.DeferPhase != nil {
		row(p.DeferPhase.Name+" (defer)", *p.DeferPhase)
	}
	tw.Flush()
}

func (d describer) times(indent int, start, end *metav1.Time) {
	if start != nil {
		d.line(indent, "Started", stamp(start))
	}
	if end != nil {
		d.line(indent, "Completed", stamp(end))
		if start != nil {
			d.line(indent, "Duration", durationString(end.Sub(start.Time)))
		}
	}
}

func (d describer) conditions(cs []metav1.Condition) {
	if len(cs) == 0 {
		return
	}
	fmt.Fprintln(d.w)
	d.line(0, "Conditions", "")
	tw := tabwriter.NewWriter(d.w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  TYPE\tSTATUS\tREASON\tMESSAGE")
	for _, c := range cs {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, oneLine(c.Message))
	}
	tw.Flush()
}

func (d describer) details(det *Details) {
	if det == nil {
		return
	}
	fmt.Fprintln(d.w)
	if det.Unavailable != "" {
		d.line(0, "Resource List", "<unavailable: "+det.Unavailable+">")
		return
	}
	if len(det.Resources) == 0 {
		d.line(0, "Resource List", "<none>")
		return
	}
	d.line(0, "Resource List", "")
	kinds := make([]string, 0, len(det.Resources))
	for k := range det.Resources {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		d.line(1, "", k+":")
		items := append([]string(nil), det.Resources[k]...)
		sort.Strings(items)
		for _, it := range items {
			d.line(2, "", "- "+it)
		}
	}
}

// durationString is d rounded to the second (recorded times have second
// precision), as Go prints it: 0s, 4s, 2m5s, 1h0m3s.
func durationString(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	return d.Round(time.Second).String()
}

// stamp formats t as RFC 3339 in UTC, "<none>" for nil or zero.
func stamp(t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return "<none>"
	}
	return t.UTC().Format(time.RFC3339)
}

func ttlString(ttl metav1.Duration) string {
	if ttl.Duration == 0 {
		return "<default>"
	}
	return ttl.Duration.String()
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func listOr(l []string, def string) string {
	if len(l) == 0 {
		return def
	}
	return strings.Join(l, ", ")
}

func mapString(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, ",")
}

// oneLine keeps a message on one table row.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// DescribeEvents writes kubectl describe's Events section: type, reason,
// age (of the last occurrence), count and message, oldest first.
func DescribeEvents(w io.Writer, events []corev1.Event, now time.Time) {
	fmt.Fprintln(w)
	if len(events) == 0 {
		fmt.Fprintln(w, "Events:                <none>")
		return
	}
	sort.SliceStable(events, func(i, j int) bool { return eventTime(events[i]).Before(eventTime(events[j])) })
	fmt.Fprintln(w, "Events:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  TYPE\tREASON\tAGE\tCOUNT\tMESSAGE")
	for _, e := range events {
		count := e.Count
		if count == 0 {
			count = 1
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\n", e.Type, e.Reason, age(metav1.NewTime(eventTime(e)), now), count, oneLine(e.Message))
	}
	tw.Flush()
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}
