package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// getOptions are the output flags of every get: kubectl's -o (table when
// unset, wide, json, yaml, name, jsonpath=…, go-template=…), --no-headers
// and -A.
type getOptions struct {
	print         *genericclioptions.PrintFlags
	noHeaders     bool
	allNamespaces bool
	// namespace is where the objects are when not the tenant's (requests:
	// the OADP namespace), for "No resources found in … namespace".
	namespace func() string
}

func addGetFlags(cmd *cobra.Command, allNamespaces bool) *getOptions {
	g := &getOptions{print: genericclioptions.NewPrintFlags("")}
	g.print.AddFlags(cmd)
	cmd.Flags().Lookup("output").Usage = "Output format: wide, " + strings.Join(g.print.AllowedFormats(), ", ") + " (a table when unset)."
	cmd.Flags().BoolVar(&g.noHeaders, "no-headers", false, "Print the table without its header row.")
	if allNamespaces {
		cmd.Flags().BoolVarP(&g.allNamespaces, "all-namespaces", "A", false, "List the objects of every namespace you may read.")
	}
	return g
}

// tableFunc turns the listed objects into a table; now ages them.
type tableFunc func(list client.ObjectList, now time.Time) *metav1.Table

// list reads the objects of kind list (one when name is given) in the
// namespace of the flags (every namespace with -A) and prints them.
func (g *getOptions) list(cmd *cobra.Command, o *Options, list client.ObjectList, name string, table tableFunc) error {
	c, err := o.Client()
	if err != nil {
		return err
	}
	ns := ""
	if !g.allNamespaces {
		if ns, err = o.Namespace(); err != nil {
			return err
		}
	}
	if name != "" {
		item, err := newItemOf(c.Scheme(), list)
		if err != nil {
			return err
		}
		if err := c.Get(cmd.Context(), client.ObjectKey{Namespace: ns, Name: name}, item); err != nil {
			return err
		}
		if err := setItems(list, []runtime.Object{item}); err != nil {
			return err
		}
	} else if err := c.List(cmd.Context(), list, client.InNamespace(ns)); err != nil {
		return err
	}
	return g.printList(o, c.Scheme(), list, table)
}

// printList prints list as the -o flag asks.
func (g *getOptions) printList(o *Options, scheme *runtime.Scheme, list client.ObjectList, table tableFunc) error {
	format := ""
	if g.print.OutputFormat != nil {
		format = *g.print.OutputFormat
	}
	if format == "" || format == "wide" {
		t := table(list, o.now())
		if len(t.Rows) == 0 {
			ns := o.tenantNamespace()
			if g.namespace != nil {
				ns = g.namespace()
			}
			if g.allNamespaces {
				fmt.Fprintln(o.ErrOut, "No resources found")
			} else {
				fmt.Fprintf(o.ErrOut, "No resources found in %s namespace.\n", ns)
			}
			return nil
		}
		if g.allNamespaces {
			withNamespaceColumn(t)
		}
		return printers.NewTablePrinter(printers.PrintOptions{Wide: format == "wide", NoHeaders: g.noHeaders}).PrintObj(t, o.Out)
	}
	p, err := g.print.ToPrinter()
	if err != nil {
		return err
	}
	items, err := itemsOf(list)
	if err != nil {
		return err
	}
	for _, it := range items {
		if err := setKind(scheme, it); err != nil {
			return err
		}
	}
	if len(items) == 1 && !strings.HasPrefix(format, "name") {
		return p.PrintObj(items[0], o.Out)
	}
	if strings.HasPrefix(format, "name") {
		for _, it := range items {
			if err := p.PrintObj(it, o.Out); err != nil {
				return err
			}
		}
		return nil
	}
	if err := setKind(scheme, list); err != nil {
		return err
	}
	return p.PrintObj(list, o.Out)
}

// withNamespaceColumn puts a NAMESPACE column first (-A).
func withNamespaceColumn(t *metav1.Table) {
	t.ColumnDefinitions = append([]metav1.TableColumnDefinition{{Name: "Namespace", Type: "string"}}, t.ColumnDefinitions...)
	for i := range t.Rows {
		ns := ""
		if m, ok := t.Rows[i].Object.Object.(metav1.Object); ok {
			ns = m.GetNamespace()
		}
		t.Rows[i].Cells = append([]any{ns}, t.Rows[i].Cells...)
	}
}

func setKind(scheme *runtime.Scheme, obj runtime.Object) error {
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return err
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}

func itemsOf(list client.ObjectList) ([]runtime.Object, error) {
	return metaExtractList(list)
}

// age is kubectl's AGE column.
func age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

func col(name, desc string, priority int32) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: "string", Description: desc, Priority: priority}
}

func row(obj runtime.Object, cells ...any) metav1.TableRow {
	return metav1.TableRow{Cells: cells, Object: runtime.RawExtension{Object: obj}}
}

func dash(s string) string { return or(s, "-") }

// BackupTable is `kubectl nac backup get`: the columns of the
// NonAdminBackup CRD (and OADP's plugin), with -o wide the Velero Backup,
// its location, items, queue position and expiry.
func BackupTable(list client.ObjectList, now time.Time) *metav1.Table {
	t := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		col("Name", "NonAdminBackup name", 0),
		col("Request-Phase", "status.phase", 0),
		col("Velero-Phase", "Velero Backup's phase", 0),
		col("Plan-Phase", "the phase that runs, waits or last ended", 0),
		col("Created", "creation time, RFC 3339", 0),
		col("Age", "time since creation", 0),
		col("Velero-Backup", "the Velero Backup in the OADP namespace", 1),
		col("Storage-Location", "spec.backupSpec.storageLocation", 1),
		col("Items", "items backed up of total", 1),
		col("Queue", "estimated queue position", 1),
		col("Expires", "Velero Backup's expiration", 1),
	}}
	for i := range list.(*v1alpha1.NonAdminBackupList).Items {
		nab := &list.(*v1alpha1.NonAdminBackupList).Items[i]
		vphase, vname, items, expires := "", "", "", ""
		if vb := nab.Status.VeleroBackup; vb != nil {
			vname = vb.Name
			if vb.Status != nil {
				vphase = string(vb.Status.Phase)
				if p := vb.Status.Progress; p != nil && p.TotalItems > 0 {
					items = fmt.Sprintf("%d/%d", p.ItemsBackedUp, p.TotalItems)
				}
				if vb.Status.Expiration != nil {
					expires = stamp(vb.Status.Expiration)
				}
			}
		}
		loc := ""
		if nab.Spec.BackupSpec != nil {
			loc = nab.Spec.BackupSpec.StorageLocation
		}
		t.Rows = append(t.Rows, row(nab, nab.Name, dash(string(nab.Status.Phase)), dash(vphase), planCurrent(nab.Status.Plan),
			stamp(&nab.CreationTimestamp), age(nab.CreationTimestamp, now),
			dash(vname), or(loc, "<default>"), dash(items), queue(nab.Status.QueueInfo), dash(expires)))
	}
	return t
}

// RestoreTable is `kubectl nac restore get` (the layout of BackupTable).
func RestoreTable(list client.ObjectList, now time.Time) *metav1.Table {
	t := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		col("Name", "NonAdminRestore name", 0),
		col("Backup", "the NonAdminBackup restored", 0),
		col("Request-Phase", "status.phase", 0),
		col("Velero-Phase", "Velero Restore's phase", 0),
		col("Plan-Phase", "the phase that runs, waits or last ended", 0),
		col("Age", "time since creation", 0),
		col("Velero-Restore", "the Velero Restore in the OADP namespace", 1),
		col("Items", "items restored of total", 1),
		col("Queue", "estimated queue position", 1),
	}}
	for i := range list.(*v1alpha1.NonAdminRestoreList).Items {
		nar := &list.(*v1alpha1.NonAdminRestoreList).Items[i]
		vphase, vname, items, backup := "", "", "", ""
		if nar.Spec.RestoreSpec != nil {
			backup = nar.Spec.RestoreSpec.BackupName
		}
		if vr := nar.Status.VeleroRestore; vr != nil {
			vname = vr.Name
			if vr.Status != nil {
				vphase = string(vr.Status.Phase)
				if p := vr.Status.Progress; p != nil && p.TotalItems > 0 {
					items = fmt.Sprintf("%d/%d", p.ItemsRestored, p.TotalItems)
				}
			}
		}
		t.Rows = append(t.Rows, row(nar, nar.Name, dash(backup), dash(string(nar.Status.Phase)), dash(vphase), planCurrent(nar.Status.Plan),
			age(nar.CreationTimestamp, now), dash(vname), dash(items), queue(nar.Status.QueueInfo)))
	}
	return t
}

// BSLTable is `kubectl nac bsl get`.
func BSLTable(list client.ObjectList, now time.Time) *metav1.Table {
	t := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		col("Name", "NonAdminBackupStorageLocation name", 0),
		col("Request-Phase", "status.phase", 0),
		col("Velero-Phase", "the Velero location's phase (Available, Unavailable)", 0),
		col("Approved", "the ClusterAdminApproved condition", 0),
		col("Plan-Phase", "the phase that runs, waits or last ended", 0),
		col("Age", "time since creation", 0),
		col("Provider", "spec provider", 1),
		col("Bucket", "object storage bucket", 1),
		col("Prefix", "object storage prefix asked for", 1),
	}}
	for i := range list.(*v1alpha1.NonAdminBackupStorageLocationList).Items {
		l := &list.(*v1alpha1.NonAdminBackupStorageLocationList).Items[i]
		vphase := ""
		if v := l.Status.VeleroBackupStorageLocation; v != nil && v.Status != nil {
			vphase = string(v.Status.Phase)
		}
		approved := ""
		for _, c := range l.Status.Conditions {
			if c.Type == v1alpha1.ConditionClusterAdminApproved {
				approved = string(c.Status)
			}
		}
		provider, bucket, prefix := "", "", ""
		if s := l.Spec.BackupStorageLocationSpec; s != nil {
			provider = s.Provider
			if s.ObjectStorage != nil {
				bucket, prefix = s.ObjectStorage.Bucket, s.ObjectStorage.Prefix
			}
		}
		t.Rows = append(t.Rows, row(l, l.Name, dash(string(l.Status.Phase)), dash(vphase), dash(approved), planCurrent(l.Status.Plan),
			age(l.CreationTimestamp, now), dash(provider), dash(bucket), dash(prefix)))
	}
	return t
}

// BSLRequestTable is `kubectl nac bsl request get` (admins).
func BSLRequestTable(list client.ObjectList, now time.Time) *metav1.Table {
	t := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		col("Name", "request name", 0),
		col("Request-Phase", "Pending, Approved or Rejected", 0),
		col("Request-Namespace", "the tenant's namespace", 0),
		col("Request-Name", "the NonAdminBackupStorageLocation", 0),
		col("Decision", "spec.approvalDecision", 0),
		col("Age", "time since creation", 0),
		col("Provider", "requested provider", 1),
		col("Bucket", "requested bucket", 1),
	}}
	for i := range list.(*v1alpha1.NonAdminBackupStorageLocationRequestList).Items {
		r := &list.(*v1alpha1.NonAdminBackupStorageLocationRequestList).Items[i]
		ns, name, provider, bucket := "", "", "", ""
		if src := r.Status.SourceNonAdminBSL; src != nil {
			ns, name = src.Namespace, src.Name
			if s := src.RequestedSpec; s != nil {
				provider = s.Provider
				if s.ObjectStorage != nil {
					bucket = s.ObjectStorage.Bucket
				}
			}
		}
		t.Rows = append(t.Rows, row(r, r.Name, dash(string(r.Status.Phase)), dash(ns), dash(name), dash(string(r.Spec.ApprovalDecision)),
			age(r.CreationTimestamp, now), dash(provider), dash(bucket)))
	}
	return t
}

func planCurrent(p *v1alpha1.PlanStatus) string {
	if p == nil {
		return "-"
	}
	return dash(p.Current)
}

func queue(q *v1alpha1.QueueInfo) string {
	if q == nil || q.EstimatedQueuePosition == 0 {
		return "-"
	}
	return fmt.Sprint(q.EstimatedQueuePosition)
}
