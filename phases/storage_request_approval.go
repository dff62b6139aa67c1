package phases

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/dpa"
	"github.com/nacflow/nacflow/engine"
)

// recheckApproval is the fallback recheck while a request is pending; a
// watch on requests wakes the controller as soon as an admin decides.
const recheckApproval = time.Minute

// RequestApprovalArgs are the args of RequestApproval.
type RequestApprovalArgs struct {
	// OnSpecChange is what a change of an approved spec does: "pending" (the
	// default) resets the request to pending and withdraws the location until
	// an admin approves the new spec; "refuse" refuses the change (OADP NAC's
	// behaviour) and withdraws the location until the tenant restores the
	// approved spec or makes a new location.
	OnSpecChange string `json:"onSpecChange,omitempty" doc:"pending (default): a change of an approved spec needs a new approval; refuse: the change is refused"`
}

// Values of RequestApprovalArgs.OnSpecChange.
const (
	OnSpecChangePending = "pending"
	OnSpecChangeRefuse  = "refuse"
)

// Validate implements engine.ArgsValidator.
func (a RequestApprovalArgs) Validate() error {
	switch a.OnSpecChange {
	case "", OnSpecChangePending, OnSpecChangeRefuse:
		return nil
	}
	return fmt.Errorf("onSpecChange: %q is neither %q nor %q", a.OnSpecChange, OnSpecChangePending, OnSpecChangeRefuse)
}

// RequestApproval is the admin approval gate of a
// NonAdminBackupStorageLocation (OADP's approval flow). It creates (or
// adopts) a NonAdminBackupStorageLocationRequest in the OADP namespace, named
// like the location's other objects (its NACUUID, OADP NAC's
// "<namespace>-<name>-<uuid>"), whose status shows the admin the effective
// spec asked for, and links the location to it
// (status.veleroBackupStorageLocation nacuuid, name, namespace). Without --require-approval-for-bsl the request is
// created approved. Then, by the request's spec.approvalDecision:
//   - approve: the request records the spec approved (status.approvedSpec:
//     the requestedSpec the admin saw); done, ClusterAdminApproved=True.
//   - pending: waits (phase New, ClusterAdminApproved=False/PendingApproval);
//   - reject: terminal (phase BackingOff, Accepted=False/Rejected,
//     ClusterAdminApproved=False/Rejected).
//
// An approval covers the spec it approved: when what it covers (provider,
// objectStorage, config, credential name and key, accessMode) changed since,
// args.onSpecChange decides: "pending" sets the request back to pending and
// waits for a new approval; "refuse" refuses the change (Accepted=False,
// SpecUpdateApproved=False/SpecUpdateRejected, BackingOff). Without
// --require-approval-for-bsl every spec is approved as it comes. Rotating the
// credential Secret's content needs no new approval.
//
// On pending, reject or a refused change it first removes the Velero BSL
// and copied Secret an earlier approval made: an approval withdrawn later,
// or no longer covering the spec, takes them away.
//
// Errors: API errors are retryable; reject and a refused change are terminal.
//
// Whether approval is required is resolved on each run: the
// --require-approval-for-bsl flag when given, else the requireApprovalForBSL
// of OADP's DataProtectionApplication (package dpa), else not required. When
// it is explicitly turned off (requireApprovalForBSL: false in the DPA, or
// the flag given as false), a pending request is approved (OADP NAC's
// behaviour); a rejected one stays rejected, and a DPA that is deleted
// approves nothing.
type RequestApproval struct {
	tools tools
	// required is --require-approval-for-bsl, used when settings is
	// noSettings.
	required bool
	// settings resolves the flag and the DPA's requireApprovalForBSL.
	settings Settings
}

// isRequired resolves whether approval is required, and its source.
func (f *RequestApproval) isRequired(ctx context.Context) (bool, string, error) {
	if _, none := f.settings.(noSettings); none || f.settings == nil {
		if !f.required {
			return false, dpa.FromDefault, nil
		}
		return true, "flag --require-approval-for-bsl", nil
	}
	required, source, err := f.settings.RequireApprovalForBSL(ctx)
	if err == nil {
		f.settings.Report(ctx, "requireApprovalForBSL", source)
	}
	return required, source, err
}

// Run implements phaseFunc.
func (f *RequestApproval) Run(ctx context.Context, op *engine.Operation, nabsl *v1alpha1.NonAdminBackupStorageLocation, a *RequestApprovalArgs) (engine.Result, error) {
	required, requiredBy, err := f.isRequired(ctx)
	if err != nil {
		return engine.Result{}, err
	}
	decision := v1alpha1.ApprovalApprove
	if required {
		decision = v1alpha1.ApprovalPending
	}
	want := &v1alpha1.NonAdminBackupStorageLocationRequest{
		ObjectMeta: op.ObjectMeta(v1alpha1.OperationObjectName(nabsl, op.UUID)),
		Spec:       v1alpha1.NonAdminBackupStorageLocationRequestSpec{ApprovalDecision: decision},
	}
	obj, _, err := createOrAdoptOwn(ctx, op, f.tools.recent, "NonAdminBackupStorageLocationRequest", want, &v1alpha1.NonAdminBackupStorageLocationRequestList{})
	if err != nil {
		return engine.Result{}, err
	}
	req := obj.(*v1alpha1.NonAdminBackupStorageLocationRequest)
	linkLocation(op, nabsl)
	if !required && requiredBy != dpa.FromDefault && req.Spec.ApprovalDecision == v1alpha1.ApprovalPending {
		// Approval was explicitly turned off (a DPA edit, a flag): what
		// waited is approved, as it would have been when created. A DPA
		// deleted, or its CRD briefly not found, approves nothing.
		before := req.DeepCopy()
		req.Spec.ApprovalDecision = v1alpha1.ApprovalApprove
		if err := op.Client.Patch(ctx, req, client.MergeFrom(before)); err != nil {
			return engine.Result{}, fmt.Errorf("approving %s/%s (approval is no longer required: %s): %w", req.Namespace, req.Name, requiredBy, err)
		}
	}
	var current *velerov1.BackupStorageLocationSpec
	if vb := nabsl.Status.VeleroBackupStorageLocation; vb != nil {
		current = vb.Spec
	}
	status := v1alpha1.NonAdminBackupStorageLocationRequestStatus{
		SourceNonAdminBSL: &v1alpha1.SourceNonAdminBSL{NACUUID: op.UUID, Namespace: nabsl.Namespace, Name: nabsl.Name, RequestedSpec: current},
		ApprovedSpec:      req.Status.ApprovedSpec}
	changed := false
	if req.Spec.ApprovalDecision == v1alpha1.ApprovalApprove {
		switch {
		case !required:
			// Nothing to approve by hand: every spec is approved as it comes.
			status.ApprovedSpec = current
		case status.ApprovedSpec == nil:
			// Approved what the admin saw: the spec requested before this run
			// (a change made meanwhile is caught below), else the current one.
			status.ApprovedSpec = asForced(req.Status.Requested(), nabsl.Namespace, current)
			if status.ApprovedSpec == nil {
				status.ApprovedSpec = current
			}
		}
		changed = !approvalCovers(status.ApprovedSpec, current)
	}
	approved := status.ApprovedSpec
	if changed && a.OnSpecChange != OnSpecChangeRefuse {
		// Back to pending: the admin approves the new spec or not.
		before := req.DeepCopy()
		req.Spec.ApprovalDecision = v1alpha1.ApprovalPending
		if err := op.Client.Patch(ctx, req, client.MergeFrom(before)); err != nil {
			return engine.Result{}, fmt.Errorf("resetting %s/%s to pending after a spec change: %w", req.Namespace, req.Name, err)
		}
		status.ApprovedSpec = nil
	}
	status.Phase = v1alpha1.RequestPhaseOf(req.Spec.ApprovalDecision)
	if !equality.Semantic.DeepEqual(req.Status, status) {
		before := req.DeepCopy()
		req.Status = status
		if err := op.Client.Status().Patch(ctx, req, client.MergeFrom(before)); err != nil {
			return engine.Result{}, fmt.Errorf("recording the requested spec in %s/%s: %w", req.Namespace, req.Name, err)
		}
	}

	switch {
	case changed:
		if err := withdrawBSL(ctx, op); err != nil {
			return engine.Result{}, err
		}
		fields := strings.Join(approvalDiff(approved, current), ", ")
		if a.OnSpecChange == OnSpecChangeRefuse {
			msg := fmt.Sprintf("spec.backupStorageLocationSpec: changing %s of an approved location is not allowed; "+
				"restore the approved spec or create a new NonAdminBackupStorageLocation (NonAdminBackupStorageLocationRequest %s/%s)", fields, req.Namespace, req.Name)
			setSpecUpdate(nabsl, metav1.ConditionFalse, v1alpha1.ReasonSpecUpdateRejected, msg)
			return engine.Result{}, refuse(nabsl, v1alpha1.ReasonSpecUpdateRejected, errors.New(msg))
		}
		nabsl.Status.Phase = v1alpha1.NonAdminPhaseNew
		msg := fmt.Sprintf("spec changed after approval (%s): waiting for a cluster admin to approve NonAdminBackupStorageLocationRequest %s/%s again",
			fields, req.Namespace, req.Name)
		setSpecUpdate(nabsl, metav1.ConditionFalse, v1alpha1.ReasonSpecChangePendingApproval, msg)
		setApproval(nabsl, metav1.ConditionFalse, v1alpha1.ReasonSpecChangePendingApproval, msg)
		return engine.Wait(msg, recheckApproval), nil
	case req.Spec.ApprovalDecision == v1alpha1.ApprovalApprove:
		setSpecUpdate(nabsl, metav1.ConditionTrue, v1alpha1.ReasonSpecApproved, "the spec in force is the approved one")
		setApproval(nabsl, metav1.ConditionTrue, v1alpha1.ReasonApproved, "approved by a cluster admin (NonAdminBackupStorageLocationRequest "+req.Name+")")
		return engine.Done("approved: NonAdminBackupStorageLocationRequest "+req.Name, map[string]string{"request": req.Name}), nil
	case req.Spec.ApprovalDecision == v1alpha1.ApprovalReject:
		if err := withdrawBSL(ctx, op); err != nil {
			return engine.Result{}, err
		}
		msg := fmt.Sprintf("rejected by a cluster admin (NonAdminBackupStorageLocationRequest %s/%s)", req.Namespace, req.Name)
		setApproval(nabsl, metav1.ConditionFalse, v1alpha1.ReasonRejected, msg)
		return engine.Result{}, refuse(nabsl, v1alpha1.ReasonRejected, errors.New(msg))
	default:
		if err := withdrawBSL(ctx, op); err != nil {
			return engine.Result{}, err
		}
		nabsl.Status.Phase = v1alpha1.NonAdminPhaseNew
		msg := fmt.Sprintf("waiting for a cluster admin to approve NonAdminBackupStorageLocationRequest %s/%s (approval required by %s)", req.Namespace, req.Name, requiredBy)
		setApproval(nabsl, metav1.ConditionFalse, v1alpha1.ReasonPendingApproval, msg)
		return engine.Wait(msg, recheckApproval), nil
	}
}

// approvalCovers reports whether the approved spec covers spec: provider,
// objectStorage (bucket, prefix, caCert), config (endpoint, region, ...),
// credential (name and key) and accessMode are equal. Periods and the
// credential Secret's content are not part of an approval.
// asForced returns requested, the spec an admin approved, with its prefix
// as ValidateBSLSpec forces it under namespace ns, when current's prefix is
// that forced form: OADP NAC records the tenant's spec as written (prefix
// "team") in the request it has the admin approve, nacflow the spec in force
// ("ns/team"), and an approval of the one is an approval of the other. Any
// other difference stays, and needs a new approval. nil stays nil.
func asForced(requested *velerov1.BackupStorageLocationSpec, ns string, current *velerov1.BackupStorageLocationSpec) *velerov1.BackupStorageLocationSpec {
	if requested == nil || requested.ObjectStorage == nil || current == nil || current.ObjectStorage == nil {
		return requested
	}
	out := requested.DeepCopy()
	asked, now := out.ObjectStorage.Prefix, current.ObjectStorage.Prefix
	if now == tenantPrefix(ns, asked) || now == legacyTenantPrefix(ns, asked) || strings.HasSuffix(now, "/"+tenantPrefix(ns, asked)) {
		out.ObjectStorage.Prefix = now
	}
	return out
}

func approvalCovers(approved, spec *velerov1.BackupStorageLocationSpec) bool {
	return len(approvalDiff(approved, spec)) == 0
}

// approvalDiff returns the JSON names of the fields approvalCovers compares
// that differ between approved and spec, sorted.
func approvalDiff(approved, spec *velerov1.BackupStorageLocationSpec) []string {
	if approved == nil || spec == nil {
		if approved == spec {
			return nil
		}
		return []string{"backupStorageLocationSpec"}
	}
	var out []string
	add := func(name string, a, b any) {
		if !equality.Semantic.DeepEqual(a, b) {
			out = append(out, name)
		}
	}
	add("accessMode", approved.AccessMode, spec.AccessMode)
	add("config", approved.Config, spec.Config)
	add("credential", approved.Credential, spec.Credential)
	var ao, so velerov1.ObjectStorageLocation
	if approved.ObjectStorage != nil {
		ao = *approved.ObjectStorage
	}
	if spec.ObjectStorage != nil {
		so = *spec.ObjectStorage
	}
	add("objectStorage.bucket", ao.Bucket, so.Bucket)
	add("objectStorage.caCert", ao.CACert, so.CACert)
	add("objectStorage.prefix", ao.Prefix, so.Prefix)
	add("provider", approved.Provider, spec.Provider)
	return out
}

func setSpecUpdate(nabsl *v1alpha1.NonAdminBackupStorageLocation, status metav1.ConditionStatus, reason, msg string) {
	setCondition(nabsl, v1alpha1.ConditionSpecUpdateApproved, status, reason, msg)
}

func setApproval(nabsl *v1alpha1.NonAdminBackupStorageLocation, status metav1.ConditionStatus, reason, msg string) {
	setCondition(nabsl, v1alpha1.ConditionClusterAdminApproved, status, reason, msg)
}

// Doc implements engine.Documented.
func (*RequestApproval) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "The admin approval gate: creates the NonAdminBackupStorageLocationRequest named by the location's NACUUID (approved at once without --require-approval-for-bsl) and links status.veleroBackupStorageLocation to it, then goes on when approved, waits while pending, fails when rejected; pending or reject also remove the Velero BSL and copied Secret of an earlier approval.",
		Outputs: []string{"request: the request's name"},
		Errors:  "reject is terminal; " + apiRetried,
		Waits:   true,
	}
}

// linkLocation records in nabsl's status.veleroBackupStorageLocation the
// operation's NACUUID, the OADP namespace and the name its Velero BSL has
// (or will have) — where empty — once its request exists, before any
// approval: OADP NAC links a location so (setVeleroBSLUUIDInNaBSLStatus,
// before creating the request), and OADP's CLI finds a pending request by
// that NACUUID (`kubectl oadp nabsl-request get`). A NonAdminBackup uses a
// location only once it is approved, Created and Available, whatever the
// link says.
func linkLocation(op *engine.Operation, nabsl *v1alpha1.NonAdminBackupStorageLocation) {
	if nabsl.Status.VeleroBackupStorageLocation == nil {
		nabsl.Status.VeleroBackupStorageLocation = &v1alpha1.VeleroBackupStorageLocation{}
	}
	vb := nabsl.Status.VeleroBackupStorageLocation
	if vb.NACUUID == "" {
		vb.NACUUID = op.UUID
	}
	if vb.Name == "" {
		vb.Name = v1alpha1.OperationObjectName(nabsl, op.UUID)
	}
	if vb.Namespace == "" {
		vb.Namespace = op.OADPNamespace
	}
}
