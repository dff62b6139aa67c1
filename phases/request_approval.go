package phases

import (
	"context"
	"fmt"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// recheckApproval is the fallback recheck while a request is pending; a
// watch on requests wakes the controller as soon as an admin decides.
const recheckApproval = time.Minute

// RequestApproval is the admin approval gate of a
// NonAdminBackupStorageLocation (OADP's approval flow). It creates (or
// adopts) a NonAdminBackupStorageLocationRequest in the OADP namespace, named
// like the location's other objects, whose status shows the admin the
// effective spec asked for. Without --require-approval-for-bsl the request is
// created approved. Then, by the request's spec.approvalDecision:
//   - approve: done; ClusterAdminApproved=True.
//   - pending: waits (phase New, ClusterAdminApproved=False/PendingApproval);
//   - reject: terminal (phase BackingOff, ClusterAdminApproved=False/Rejected).
//
// On pending or reject it first removes the Velero BSL and copied Secret an
// earlier approval made: an approval withdrawn later takes them away.
type RequestApproval struct {
	clients Clients
	// required is --require-approval-for-bsl.
	required bool
}

// Name implements engine.Func.
func (*RequestApproval) Name() string { return "RequestApproval" }

// NewArgs implements engine.Func: the function takes no args.
func (*RequestApproval) NewArgs() any { return &noArgs{} }

// Run implements engine.Func.
func (f *RequestApproval) Run(ctx context.Context, op *engine.Operation, _ any) (engine.Result, error) {
	nabsl, err := asBSL(f.Name(), op)
	if err != nil {
		return engine.Result{}, err
	}
	labels, annotations := nacBSLMeta(nabsl, op.UUID)
	decision := v1alpha1.ApprovalApprove
	if f.required {
		decision = v1alpha1.ApprovalPending
	}
	want := &v1alpha1.NonAdminBackupStorageLocationRequest{
		ObjectMeta: metav1.ObjectMeta{
			Name: v1alpha1.NACObjectName(nabsl.Namespace, nabsl.Name, op.UUID), Namespace: op.OADPNamespace,
			Labels: labels, Annotations: annotations,
		},
		Spec: v1alpha1.NonAdminBackupStorageLocationRequestSpec{ApprovalDecision: decision},
	}
	obj, _, err := createOrAdopt(ctx, f.clients, "NonAdminBackupStorageLocationRequest", want, op.UUID)
	if err != nil {
		return engine.Result{}, err
	}
	req := obj.(*v1alpha1.NonAdminBackupStorageLocationRequest)
	status := v1alpha1.NonAdminBackupStorageLocationRequestStatus{NACUUID: op.UUID, Namespace: nabsl.Namespace, Name: nabsl.Name}
	if vb := nabsl.Status.VeleroBackupStorageLocation; vb != nil {
		status.RequestedSpec = vb.Spec
	}
	if !equality.Semantic.DeepEqual(req.Status, status) {
		before := req.DeepCopy()
		req.Status = status
		if err := f.clients.Client.Status().Patch(ctx, req, client.MergeFrom(before)); err != nil {
			return engine.Result{}, fmt.Errorf("recording the requested spec in %s/%s: %w", req.Namespace, req.Name, err)
		}
	}

	switch req.Spec.ApprovalDecision {
	case v1alpha1.ApprovalApprove:
		setApproval(nabsl, metav1.ConditionTrue, v1alpha1.ReasonApproved, "approved by a cluster admin (NonAdminBackupStorageLocationRequest "+req.Name+")")
		return engine.Done("approved: NonAdminBackupStorageLocationRequest "+req.Name, map[string]string{"request": req.Name}), nil
	case v1alpha1.ApprovalReject:
		if err := f.withdraw(ctx, op); err != nil {
			return engine.Result{}, err
		}
		nabsl.Status.Phase = v1alpha1.NonAdminPhaseBackingOff
		msg := fmt.Sprintf("rejected by a cluster admin (NonAdminBackupStorageLocationRequest %s/%s)", req.Namespace, req.Name)
		setApproval(nabsl, metav1.ConditionFalse, v1alpha1.ReasonRejected, msg)
		return engine.Result{}, engine.Terminalf("%s", msg)
	default:
		if err := f.withdraw(ctx, op); err != nil {
			return engine.Result{}, err
		}
		nabsl.Status.Phase = v1alpha1.NonAdminPhaseNew
		msg := fmt.Sprintf("waiting for a cluster admin to approve NonAdminBackupStorageLocationRequest %s/%s", req.Namespace, req.Name)
		setApproval(nabsl, metav1.ConditionFalse, v1alpha1.ReasonPendingApproval, msg)
		return engine.Wait(msg, recheckApproval), nil
	}
}

// withdraw removes the Velero BSL and copied Secret of the operation.
func (f *RequestApproval) withdraw(ctx context.Context, op *engine.Operation) error {
	for _, obj := range []client.Object{&velerov1.BackupStorageLocation{}, &corev1.Secret{}} {
		err := f.clients.Client.DeleteAllOf(ctx, obj, client.InNamespace(op.OADPNamespace),
			client.MatchingLabels{v1alpha1.NabslOriginNACUUIDLabel: op.UUID})
		if err != nil {
			return fmt.Errorf("removing %T of %s after approval was withdrawn: %w", obj, op.UUID, err)
		}
	}
	return nil
}

func setApproval(nabsl *v1alpha1.NonAdminBackupStorageLocation, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&nabsl.Status.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionClusterAdminApproved, Status: status, Reason: reason, Message: msg, ObservedGeneration: nabsl.Generation,
	})
}
