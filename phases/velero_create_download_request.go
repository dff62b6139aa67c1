package phases

import (
	"context"
	"fmt"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
)

// CreateDownloadRequestArgs are the args of CreateDownloadRequest.
type CreateDownloadRequestArgs struct {
	// Kind is the Velero DownloadTarget kind (BackupLog, ...), usually
	// {{ .Phases.validate.Output.kind }}.
	Kind string `json:"kind" doc:"the Velero DownloadTarget kind, usually {{ .Phases.validate.Output.kind }}"`
	// Name is the Velero Backup or Restore whose file it is, usually
	// {{ .Phases.validate.Output.name }}.
	Name string `json:"name" doc:"the Velero Backup or Restore, usually {{ .Phases.validate.Output.name }}"`
}

// CreateDownloadRequest creates (or adopts) the Velero DownloadRequest of a
// NonAdminDownloadRequest in the OADP namespace (OADP NAC):
// v1alpha1.NACObjectName(ns, name, nacuuid), labelled
// openshift.io/oadp-nadr-origin-nacuuid with the origin annotations, its
// target the Velero Backup or Restore args.name. The safety rule checks that
// the target was made for the request's namespace, whatever a blueprint
// renders. Records the link in status.velero and sets status.phase Created.
//
// Outputs: name. Errors: an empty or unknown kind, an empty name, a target of
// another namespace and a name held by another operation's object are
// terminal; API errors are retryable.
type CreateDownloadRequest struct {
	tools tools
}

// Run implements phaseFunc.
func (f *CreateDownloadRequest) Run(ctx context.Context, op *engine.Operation, nadr *v1alpha1.NonAdminDownloadRequest, a *CreateDownloadRequestArgs) (engine.Result, error) {
	kind := velerov1.DownloadTargetKind(a.Kind)
	if v1alpha1.DownloadTargetOf(kind) == "" {
		return engine.Result{}, engine.Terminalf("CreateDownloadRequest: args.kind %q is not a Velero DownloadTarget kind", a.Kind)
	}
	if a.Name == "" {
		return engine.Result{}, engine.Terminalf("CreateDownloadRequest: args.name is empty")
	}
	// A request makes one DownloadRequest: the one OADP NAC made for it
	// ("nadr-<UID>") is adopted (createOrAdoptOwn).
	got, verb, err := createDownloadRequest(ctx, op, f.tools.recent, v1alpha1.NACObjectName(nadr.Namespace, nadr.Name, op.UUID), kind, a.Name, &velerov1.DownloadRequestList{})
	if err != nil {
		return engine.Result{}, err
	}
	nadr.Status.Phase = v1alpha1.NonAdminPhaseCreated
	nadr.Status.VeleroDownloadRequest.NACUUID, nadr.Status.VeleroDownloadRequest.Name = op.UUID, got.Name
	return engine.Done(fmt.Sprintf("%s Velero DownloadRequest %s/%s for the %s of %s", verb, got.Namespace, got.Name, kind, a.Name),
		map[string]string{"name": got.Name}), nil
}

// createDownloadRequest creates (or adopts, createOrAdopt) the Velero
// DownloadRequest name in the OADP namespace for the file kind of the Velero
// Backup or Restore target, with op's origin labels and annotations. own,
// when set (a new DownloadRequestList), is for operations that make one
// DownloadRequest only (createOrAdoptOwn); an existing one adopted that way
// must be for the same file, or it is a terminal error.
func createDownloadRequest(ctx context.Context, op *engine.Operation, recent *recentCreates, name string, kind velerov1.DownloadTargetKind, target string, own client.ObjectList) (*velerov1.DownloadRequest, string, error) {
	want := &velerov1.DownloadRequest{
		ObjectMeta: op.ObjectMeta(name),
		Spec:       velerov1.DownloadRequestSpec{Target: velerov1.DownloadTarget{Kind: kind, Name: target}},
	}
	obj, verb, err := createOrAdoptOwn(ctx, op, recent, "Velero DownloadRequest", want, own)
	if err != nil {
		return nil, "", err
	}
	got := obj.(*velerov1.DownloadRequest)
	if got.Spec.Target != want.Spec.Target {
		return nil, "", engine.Terminalf("Velero DownloadRequest %s/%s of this operation is for the %s of %s, not the %s of %s",
			got.Namespace, got.Name, got.Spec.Target.Kind, got.Spec.Target.Name, kind, target)
	}
	return got, verb, nil
}

// Doc implements engine.Documented.
func (*CreateDownloadRequest) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Creates (or adopts) the Velero DownloadRequest <ns>-<name>-<nacuuid> in the OADP namespace for file args.kind of the Velero Backup or Restore args.name (which must be of the tenant's namespace); status.velero links it, phase Created.",
		Outputs: []string{"name: the Velero DownloadRequest"},
		Errors:  "an unknown kind, an empty name, a target of another namespace and a name held by another operation's object are terminal; " + apiRetried,
	}
}
