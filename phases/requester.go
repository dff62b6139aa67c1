package phases

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/internal/policy/requester"
	"github.com/nacflow/nacflow/internal/policy/restorepolicy"
	"github.com/nacflow/nacflow/internal/velero/tenantmodifiers"
)

// Requesters tell who asked for a NAC object: the record nacflow's
// admission webhook writes (internal/policy/requester), verified with
// nacflow's key, and whether that webhook is installed.
type Requesters struct {
	// Signer verifies records (nil: nacflow keeps no key, the RBAC it runs
	// with does not allow it, and no record is read).
	Signer *requester.Signer
	// Installed reports whether the webhook's MutatingWebhookConfiguration
	// exists, and its name (nil: never).
	Installed func(ctx context.Context) (installed bool, name string, err error)
	// Review sends a SubjectAccessReview (nil: none is sent; set by
	// NewRegistry from its client, outside the safety rule's guard: a
	// review writes nothing).
	Review func(ctx context.Context, review *authorizationv1.SubjectAccessReview) error
	// NotTenants are the users and groups the admin lists as no tenant
	// (nac --non-tenant-users, --non-tenant-groups), besides those
	// NotATenant always counts.
	NotTenants NotTenants
}

// NotTenants are identities whose record names no requester.
type NotTenants struct {
	// Users are user names (exact).
	Users []string
	// Groups are group names (exact): any member is no tenant.
	Groups []string
}

// notATenant returns why user, recorded as the creator of a
// NonAdminRestore, is not a tenant ("" when they are one): the identity
// of Velero, of nacflow or of anything else that acts for the admin
// creates NonAdminRestores only by restoring or copying a tenant's (an
// admin's Velero restore of the namespace, a tenant's resource modifiers
// turning an item into one), and a restore must never run with its
// rights. Not tenants: members of system:masters; service accounts of the
// OADP namespace (Velero's and nacflow's); every other "system:" user
// that is not a service account (the API server, controllers, nodes);
// the users and groups of n; and anyone who may create Velero Restores in
// the OADP namespace (asked with may; nil may asks nothing). Deny by
// default: a review that fails is an error, never a tenant. Errors: may's.
func (n NotTenants) notATenant(ctx context.Context, oadpNamespace string, user authenticationv1.UserInfo, may func(context.Context, authenticationv1.UserInfo, authorizationv1.ResourceAttributes) (bool, error)) (string, error) {
	// The API server's names of service accounts (k8s.io/apiserver
	// pkg/authentication/serviceaccount).
	const saPrefix = "system:serviceaccount:"
	switch {
	case slices.Contains(user.Groups, "system:masters"):
		return "a member of system:masters", nil
	case strings.HasPrefix(user.Username, saPrefix+oadpNamespace+":") || slices.Contains(user.Groups, "system:serviceaccounts:"+oadpNamespace):
		return fmt.Sprintf("a service account of the OADP namespace %s (Velero's or nacflow's own identity)", oadpNamespace), nil
	case strings.HasPrefix(user.Username, "system:") && !strings.HasPrefix(user.Username, saPrefix):
		return "a system identity of the cluster", nil
	case slices.Contains(n.Users, user.Username):
		return "listed by the admin (--non-tenant-users)", nil
	}
	for _, g := range user.Groups {
		if slices.Contains(n.Groups, g) {
			return fmt.Sprintf("a member of group %s, listed by the admin (--non-tenant-groups)", g), nil
		}
	}
	if may == nil {
		return "", nil
	}
	ok, err := may(ctx, user, authorizationv1.ResourceAttributes{Namespace: oadpNamespace, Verb: "create", Group: velerov1.SchemeGroupVersion.Group, Resource: "restores"})
	if err != nil {
		return "", fmt.Errorf("asking whether %s may create Velero Restores in %s: %w", user.Username, oadpNamespace, err)
	}
	if ok {
		return fmt.Sprintf("allowed to create Velero Restores in the OADP namespace %s (an admin)", oadpNamespace), nil
	}
	return "", nil
}

// requesterVerdict is what is known of who asked for a NonAdminRestore.
type requesterVerdict struct {
	// user is the verified requester (nil: none known; the tenant role
	// alone bounds the restore).
	user *authenticationv1.UserInfo
	// reason and message are condition RequesterVerified's (True when
	// user is set).
	reason, message string
	// forged is the refusal of a forged record (nil otherwise).
	forged error
	// record is what the webhook recorded when the NonAdminRestore was
	// created (who, the spec's digest, the modifiers' ConfigMap): set when
	// its signature verifies and it records the spec, whether or not its
	// user is a tenant (user).
	record *requester.Record
}

// verify tells who asked for nar: the user of a record nacflow's webhook
// wrote for it, when that user is a tenant (notATenant) and the record
// holds what the restore was asked with (records written before nacflow
// recorded the spec vouch for no one). tenantRole names the bound in
// messages. Errors: the API server's (reading the webhook configuration,
// a SubjectAccessReview).
func (r Requesters) verify(ctx context.Context, op *engine.Operation, nar *v1alpha1.NonAdminRestore, tenantRole string) (requesterVerdict, error) {
	fallback := fmt.Sprintf("every item is checked against ClusterRole %s alone, whoever asked; namespaceMapping and resourceModifier need a known requester", tenantRole)
	if r.Signer == nil {
		return requesterVerdict{reason: v1alpha1.ReasonWebhookNotInstalled,
			message: "nacflow does not serve its requester webhook (it may not keep its key and certificate in the OADP namespace): " + fallback}, nil
	}
	rec, err := r.Signer.Verify("NonAdminRestore", nar)
	switch {
	case err == nil && rec.Spec == "":
		return requesterVerdict{reason: v1alpha1.ReasonRequesterNotRecorded,
			message: fmt.Sprintf("the record of %s was written before nacflow's webhook recorded what a restore was asked with: %s", rec.User.Username, fallback)}, nil
	case err == nil:
		user := rec.User
		var may func(context.Context, authenticationv1.UserInfo, authorizationv1.ResourceAttributes) (bool, error)
		if reviews := r.reviews(); reviews != nil {
			may = reviews.May
		}
		why, err := r.NotTenants.notATenant(ctx, op.OADPNamespace, user, may)
		if err != nil {
			return requesterVerdict{}, err
		}
		if why != "" {
			return requesterVerdict{reason: v1alpha1.ReasonRequesterNotATenant, record: &rec,
				message: fmt.Sprintf("created by %s, who is not a tenant (%s): a NonAdminRestore runs only with a tenant's rights, so %s", user.Username, why, fallback)}, nil
		}
		msg := fmt.Sprintf("created by %s", user.Username)
		if len(user.Groups) > 0 {
			msg += fmt.Sprintf(" (groups %s)", strings.Join(user.Groups, ", "))
		}
		msg += fmt.Sprintf(", as recorded by nacflow's webhook: every item is checked as %s (SubjectAccessReview), within ClusterRole %s", user.Username, tenantRole)
		return requesterVerdict{user: &user, reason: v1alpha1.ReasonRequesterRecorded, message: msg, record: &rec}, nil
	case errors.Is(err, requester.ErrForged):
		msg := fmt.Sprintf("metadata.annotations[%s]: %v; refusing to restore (delete the NonAdminRestore and create it again)", requester.Annotation, err)
		return requesterVerdict{reason: v1alpha1.ReasonRequesterForged, message: msg, forged: errors.New(msg)}, nil
	}
	installed, name := false, ""
	if r.Installed != nil {
		if installed, name, err = r.Installed(ctx); err != nil {
			return requesterVerdict{}, err
		}
	}
	if !installed {
		if name == "" {
			name = "nacflow-requester"
		}
		return requesterVerdict{reason: v1alpha1.ReasonWebhookNotInstalled,
			message: fmt.Sprintf("nacflow's requester webhook (MutatingWebhookConfiguration %s) is not installed, so no one recorded who asked: %s", name, fallback)}, nil
	}
	return requesterVerdict{reason: v1alpha1.ReasonRequesterNotRecorded,
		message: fmt.Sprintf("no requester recorded (the NonAdminRestore was made before nacflow's webhook %s was installed, or outside its namespace selector): %s", name, fallback)}, nil
}

// verifiedRequester tells who asked for nar (verify, with the tenant
// role's name), and the refusal of a forged record, with condition
// RequesterVerified set from it: a record forged after validation (where
// no webhook keeps it) is acted on by no phase. Errors: verify's.
func (r restoreRules) verifiedRequester(ctx context.Context, op *engine.Operation, nar *v1alpha1.NonAdminRestore) (who requesterVerdict, forged, err error) {
	if who, err = r.requesters.verify(ctx, op, nar, r.tenantRoleName()); err != nil {
		return requesterVerdict{}, nil, err
	}
	if who.forged != nil {
		setRequesterCondition(nar, who)
	}
	return who, who.forged, nil
}

// askedFor returns the refusal of nar's current spec.restoreSpec when it
// is not the one its requester's record says was asked for (nil without a
// record: no one is known, and the tenant role alone bounds the restore),
// naming the field manager that last wrote the spec.
func (v requesterVerdict) askedFor(nar *v1alpha1.NonAdminRestore) error {
	if v.record == nil {
		return nil
	}
	now := v1alpha1.SpecHash(nar.Spec.RestoreSpec)
	if now == v.record.Spec {
		return nil
	}
	return fmt.Errorf("spec.restoreSpec changed after %s created the NonAdminRestore (%s): a restore does only what its requester asked; delete it and create a new NonAdminRestore",
		v.record.User.Username, lastWriter(nar.ManagedFields, "f:spec"))
}

// lastWriter names the field manager that last wrote field (a
// managedFields key such as "f:spec" or "f:data") and when, from
// managedFields: "last written by <manager> (<operation>) at <time>",
// or a sentence saying no manager is known.
func lastWriter(fields []metav1.ManagedFieldsEntry, field string) string {
	var last *metav1.ManagedFieldsEntry
	for i := range fields {
		e := &fields[i]
		if e.Subresource != "" || e.FieldsV1 == nil || !strings.Contains(string(e.FieldsV1.Raw), `"`+field+`"`) {
			continue
		}
		if last == nil || (e.Time != nil && (last.Time == nil || !e.Time.Before(last.Time))) {
			last = e
		}
	}
	if last == nil {
		return "no field manager is known"
	}
	at := "at an unknown time"
	if last.Time != nil {
		at = "at " + last.Time.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("last written by field manager %q (%s) %s", last.Manager, last.Operation, at)
}

// recordedModifiers returns the resource modifiers a tenant asked nar to
// apply, as its requester's record holds them: the ConfigMap (nil when the
// restore was asked without one) and its modifiers, parsed with nacflow's
// rules for a tenant's (tenantmodifiers.Parse). The name comes from the
// record, never from the spec as it is now; the ConfigMap, read now from
// nar's namespace, must be the one recorded at admission (its UID) with
// the content recorded (its digest), else the refusal says who changed
// what. Only a tenant's restore may carry modifiers: a record whose user
// is not a tenant is refused. Errors: the API server's.
func (v requesterVerdict) recordedModifiers(ctx context.Context, op *engine.Operation, nar *v1alpha1.NonAdminRestore) (*corev1.ConfigMap, *tenantmodifiers.Modifiers, error, error) {
	if v.record == nil || v.record.Modifiers == nil {
		return nil, nil, nil, nil
	}
	const field = "spec.restoreSpec.resourceModifier"
	want, who := v.record.Modifiers, v.record.User.Username
	if v.user == nil {
		return nil, nil, fmt.Errorf("%s: a tenant's resource modifiers need a known requester, as whom every item is checked as the modifiers make it (condition RequesterVerified: %s)", field, v.reason), nil
	}
	if want.Digest == "" {
		return nil, nil, fmt.Errorf("%s: no ConfigMap %q existed in namespace %s when %s created the NonAdminRestore, so nothing records what they asked the restore to apply: create the ConfigMap first, then a new NonAdminRestore", field, want.Name, nar.Namespace, who), nil
	}
	cm := &corev1.ConfigMap{}
	switch err := op.APIReader.Get(ctx, client.ObjectKey{Namespace: nar.Namespace, Name: want.Name}, cm); {
	case apierrors.IsNotFound(err):
		return nil, nil, fmt.Errorf("%s: ConfigMap %q was deleted from namespace %s after %s created the NonAdminRestore: refusing to restore without what they asked for", field, want.Name, nar.Namespace, who), nil
	case err != nil:
		return nil, nil, nil, fmt.Errorf("reading ConfigMap %s/%s: %w", nar.Namespace, want.Name, err)
	}
	if cm.UID != want.UID {
		return nil, nil, fmt.Errorf("%s: ConfigMap %q of namespace %s was deleted and created again after %s created the NonAdminRestore (%s): refusing to apply modifiers they did not ask for; create a new NonAdminRestore",
			field, want.Name, nar.Namespace, who, lastWriter(cm.ManagedFields, "f:data")), nil
	}
	if got := requester.ConfigMapDigest(cm); got != want.Digest {
		return nil, nil, fmt.Errorf("%s: ConfigMap %q of namespace %s changed after %s created the NonAdminRestore (content %s, recorded %s; %s): refusing to apply modifiers they did not ask for; create a new NonAdminRestore",
			field, want.Name, nar.Namespace, who, short(got), short(want.Digest), lastWriter(cm.ManagedFields, "f:data")), nil
	}
	m, err := tenantmodifiers.Parse(cm)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %v", field, err), nil
	}
	return cm, m, nil, nil
}

// short is a digest's first 12 hex characters, for messages.
func short(digest string) string {
	d := strings.TrimPrefix(digest, "sha256:")
	if len(d) > 12 {
		d = d[:12]
	}
	return "sha256:" + d
}

// setRequesterCondition writes v as condition RequesterVerified.
func setRequesterCondition(nar *v1alpha1.NonAdminRestore, v requesterVerdict) {
	status := metav1.ConditionFalse
	if v.user != nil {
		status = metav1.ConditionTrue
	}
	setCondition(nar, v1alpha1.ConditionRequesterVerified, status, v.reason, v.message)
}

// reviews returns the SubjectAccessReview cache of one run (nil when r
// sends none).
func (r Requesters) reviews() *restorepolicy.Reviews {
	if r.Review == nil {
		return nil
	}
	return &restorepolicy.Reviews{Create: r.Review}
}
