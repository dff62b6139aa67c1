package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
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

// column is one column of a kind's get table: its header, description,
// whether only -o wide shows it, and its cell for one object (now ages it).
type column[T any] struct {
	name, description string
	wide              bool
	cell              func(obj T, now time.Time) string
}

// tableOf returns the table of the objects of list, which holds Ts, in
// columns cols.
func tableOf[T runtime.Object](list client.ObjectList, now time.Time, cols []column[T]) *metav1.Table {
	t := &metav1.Table{}
	for _, c := range cols {
		priority := int32(0)
		if c.wide {
			priority = 1
		}
		t.ColumnDefinitions = append(t.ColumnDefinitions, metav1.TableColumnDefinition{Name: c.name, Type: "string", Description: c.description, Priority: priority})
	}
	// Extracting fails only for a list without Items; every caller passes
	// a typed list of Ts.
	items, _ := metaExtractList(list)
	for _, it := range items {
		obj := it.(T)
		cells := make([]any, len(cols))
		for i, c := range cols {
			cells[i] = c.cell(obj, now)
		}
		t.Rows = append(t.Rows, metav1.TableRow{Cells: cells, Object: runtime.RawExtension{Object: obj}})
	}
	return t
}

func dash(s string) string { return or(s, "-") }

// The columns every NAC kind's table shares.

func nameColumn[T v1alpha1.Object](description string) column[T] {
	return column[T]{name: "Name", description: description, cell: func(obj T, _ time.Time) string { return obj.GetName() }}
}

func requestPhaseColumn[T any](phase func(T) v1alpha1.NonAdminPhase) column[T] {
	return column[T]{name: "Request-Phase", description: "status.phase", cell: func(obj T, _ time.Time) string { return dash(string(phase(obj))) }}
}

func planColumn[T v1alpha1.Object]() column[T] {
	return column[T]{name: "Plan-Phase", description: "the phase that runs, waits or last ended", cell: func(obj T, _ time.Time) string { return planCurrent(obj.GetPlan()) }}
}

func ageColumn[T metav1.Object]() column[T] {
	return column[T]{name: "Age", description: "time since creation", cell: func(obj T, now time.Time) string { return age(obj.GetCreationTimestamp(), now) }}
}

// The Velero columns of a backup's or a restore's table, read from its
// veleroOperation.

func veleroPhaseColumn[T any](op func(T) veleroOperation, description string) column[T] {
	return column[T]{name: "Velero-Phase", description: description, cell: func(obj T, _ time.Time) string { return dash(op(obj).phase()) }}
}

func veleroNameColumn[T any](op func(T) veleroOperation, kind string) column[T] {
	return column[T]{name: "Velero-" + kind, description: "the Velero " + kind + " in the OADP namespace", wide: true,
		cell: func(obj T, _ time.Time) string {
			if v := op(obj).velero; v != nil {
				return dash(v.name)
			}
			return "-"
		}}
}

func itemsColumn[T any](op func(T) veleroOperation, description string) column[T] {
	return column[T]{name: "Items", description: description, wide: true, cell: func(obj T, _ time.Time) string { return dash(op(obj).items()) }}
}

func queueColumn[T any](op func(T) veleroOperation) column[T] {
	return column[T]{name: "Queue", description: "estimated queue position", wide: true, cell: func(obj T, _ time.Time) string { return queue(op(obj).queue) }}
}

// BackupTable is `kubectl nac backup get`: the columns of the
// NonAdminBackup CRD (and OADP's plugin), with -o wide the Velero Backup,
// its location, items, queue position and expiry.
func BackupTable(list client.ObjectList, now time.Time) *metav1.Table {
	return tableOf(list, now, backupColumns)
}

var backupColumns = []column[*v1alpha1.NonAdminBackup]{
	nameColumn[*v1alpha1.NonAdminBackup]("NonAdminBackup name"),
	requestPhaseColumn(func(nab *v1alpha1.NonAdminBackup) v1alpha1.NonAdminPhase { return nab.Status.Phase }),
	veleroPhaseColumn(backupOperation, "Velero Backup's phase"),
	planColumn[*v1alpha1.NonAdminBackup](),
	{name: "Created", description: "creation time, RFC 3339", cell: func(nab *v1alpha1.NonAdminBackup, _ time.Time) string { return stamp(&nab.CreationTimestamp) }},
	ageColumn[*v1alpha1.NonAdminBackup](),
	veleroNameColumn(backupOperation, "Backup"),
	{name: "Storage-Location", description: "spec.backupSpec.storageLocation", wide: true, cell: func(nab *v1alpha1.NonAdminBackup, _ time.Time) string {
		if nab.Spec.BackupSpec == nil {
			return "<default>"
		}
		return or(nab.Spec.BackupSpec.StorageLocation, "<default>")
	}},
	itemsColumn(backupOperation, "items backed up of total"),
	queueColumn(backupOperation),
	{name: "Expires", description: "Velero Backup's expiration", wide: true, cell: func(nab *v1alpha1.NonAdminBackup, _ time.Time) string {
		if s := backupOperation(nab).status(); s != nil && s.expiration != nil {
			return stamp(s.expiration)
		}
		return "-"
	}},
}

// RestoreTable is `kubectl nac restore get` (the layout of BackupTable).
func RestoreTable(list client.ObjectList, now time.Time) *metav1.Table {
	return tableOf(list, now, restoreColumns)
}

var restoreColumns = []column[*v1alpha1.NonAdminRestore]{
	nameColumn[*v1alpha1.NonAdminRestore]("NonAdminRestore name"),
	{name: "Backup", description: "the NonAdminBackup restored", cell: func(nar *v1alpha1.NonAdminRestore, _ time.Time) string {
		if nar.Spec.RestoreSpec == nil {
			return "-"
		}
		return dash(nar.Spec.RestoreSpec.BackupName)
	}},
	requestPhaseColumn(func(nar *v1alpha1.NonAdminRestore) v1alpha1.NonAdminPhase { return nar.Status.Phase }),
	veleroPhaseColumn(restoreOperation, "Velero Restore's phase"),
	planColumn[*v1alpha1.NonAdminRestore](),
	ageColumn[*v1alpha1.NonAdminRestore](),
	veleroNameColumn(restoreOperation, "Restore"),
	itemsColumn(restoreOperation, "items restored of total"),
	queueColumn(restoreOperation),
}

// BSLTable is `kubectl nac bsl get`.
func BSLTable(list client.ObjectList, now time.Time) *metav1.Table {
	return tableOf(list, now, bslColumns)
}

var bslColumns = []column[*v1alpha1.NonAdminBackupStorageLocation]{
	nameColumn[*v1alpha1.NonAdminBackupStorageLocation]("NonAdminBackupStorageLocation name"),
	requestPhaseColumn(func(l *v1alpha1.NonAdminBackupStorageLocation) v1alpha1.NonAdminPhase { return l.Status.Phase }),
	{name: "Velero-Phase", description: "the Velero location's phase (Available, Unavailable)", cell: func(l *v1alpha1.NonAdminBackupStorageLocation, _ time.Time) string {
		if v := l.Status.VeleroBackupStorageLocation; v != nil && v.Status != nil {
			return dash(string(v.Status.Phase))
		}
		return "-"
	}},
	{name: "Approved", description: "the ClusterAdminApproved condition", cell: func(l *v1alpha1.NonAdminBackupStorageLocation, _ time.Time) string {
		approved := ""
		for _, c := range l.Status.Conditions {
			if c.Type == v1alpha1.ConditionClusterAdminApproved {
				approved = string(c.Status)
			}
		}
		return dash(approved)
	}},
	planColumn[*v1alpha1.NonAdminBackupStorageLocation](),
	ageColumn[*v1alpha1.NonAdminBackupStorageLocation](),
	locationColumn("Provider", "spec provider", bslSpecOf, func(s *velerov1.BackupStorageLocationSpec) string { return s.Provider }),
	locationColumn("Bucket", "object storage bucket", bslSpecOf, bucketOf),
	locationColumn("Prefix", "object storage prefix asked for", bslSpecOf, func(s *velerov1.BackupStorageLocationSpec) string {
		if s.ObjectStorage == nil {
			return ""
		}
		return s.ObjectStorage.Prefix
	}),
}

func bslSpecOf(l *v1alpha1.NonAdminBackupStorageLocation) *velerov1.BackupStorageLocationSpec {
	return l.Spec.BackupStorageLocationSpec
}

func bucketOf(s *velerov1.BackupStorageLocationSpec) string {
	if s.ObjectStorage == nil {
		return ""
	}
	return s.ObjectStorage.Bucket
}

// locationColumn is a -o wide column of the storage location spec an
// object holds ("-" when it holds none).
func locationColumn[T any](name, description string, spec func(T) *velerov1.BackupStorageLocationSpec, field func(*velerov1.BackupStorageLocationSpec) string) column[T] {
	return column[T]{name: name, description: description, wide: true, cell: func(obj T, _ time.Time) string {
		if s := spec(obj); s != nil {
			return dash(field(s))
		}
		return "-"
	}}
}

// BSLRequestTable is `kubectl nac bsl request get` (admins).
func BSLRequestTable(list client.ObjectList, now time.Time) *metav1.Table {
	return tableOf(list, now, bslRequestColumns)
}

var bslRequestColumns = []column[*v1alpha1.NonAdminBackupStorageLocationRequest]{
	{name: "Name", description: "request name", cell: func(r *v1alpha1.NonAdminBackupStorageLocationRequest, _ time.Time) string { return r.Name }},
	{name: "Request-Phase", description: "Pending, Approved or Rejected", cell: func(r *v1alpha1.NonAdminBackupStorageLocationRequest, _ time.Time) string {
		return dash(string(r.Status.Phase))
	}},
	{name: "Request-Namespace", description: "the tenant's namespace", cell: func(r *v1alpha1.NonAdminBackupStorageLocationRequest, _ time.Time) string {
		if src := r.Status.SourceNonAdminBSL; src != nil {
			return dash(src.Namespace)
		}
		return "-"
	}},
	{name: "Request-Name", description: "the NonAdminBackupStorageLocation", cell: func(r *v1alpha1.NonAdminBackupStorageLocationRequest, _ time.Time) string {
		if src := r.Status.SourceNonAdminBSL; src != nil {
			return dash(src.Name)
		}
		return "-"
	}},
	{name: "Decision", description: "spec.approvalDecision", cell: func(r *v1alpha1.NonAdminBackupStorageLocationRequest, _ time.Time) string {
		return dash(string(r.Spec.ApprovalDecision))
	}},
	ageColumn[*v1alpha1.NonAdminBackupStorageLocationRequest](),
	locationColumn("Provider", "requested provider", requestedSpecOf, func(s *velerov1.BackupStorageLocationSpec) string { return s.Provider }),
	locationColumn("Bucket", "requested bucket", requestedSpecOf, bucketOf),
}

func requestedSpecOf(r *v1alpha1.NonAdminBackupStorageLocationRequest) *velerov1.BackupStorageLocationSpec {
	if src := r.Status.SourceNonAdminBSL; src != nil {
		return src.RequestedSpec
	}
	return nil
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
