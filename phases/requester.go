package phases

import (
	"context"
	"errors"
	"fmt"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/internal/policy/requester"
	"github.com/nacflow/nacflow/internal/policy/restorepolicy"
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
}

// verify tells who asked for nar. tenantRole names the bound in messages.
// Errors: the API server's (reading the webhook configuration).
func (r Requesters) verify(ctx context.Context, nar *v1alpha1.NonAdminRestore, tenantRole string) (requesterVerdict, error) {
	fallback := fmt.Sprintf("every item is checked against ClusterRole %s alone, whoever asked; namespaceMapping and resourceModifier need a known requester", tenantRole)
	if r.Signer == nil {
		return requesterVerdict{reason: v1alpha1.ReasonWebhookNotInstalled,
			message: "nacflow does not serve its requester webhook (it may not keep its key and certificate in the OADP namespace): " + fallback}, nil
	}
	rec, err := r.Signer.Verify("NonAdminRestore", nar)
	switch {
	case err == nil:
		user := rec.User
		msg := fmt.Sprintf("created by %s", user.Username)
		if len(user.Groups) > 0 {
			msg += fmt.Sprintf(" (groups %s)", strings.Join(user.Groups, ", "))
		}
		msg += fmt.Sprintf(", as recorded by nacflow's webhook: every item is checked as %s (SubjectAccessReview), within ClusterRole %s", user.Username, tenantRole)
		return requesterVerdict{user: &user, reason: v1alpha1.ReasonRequesterRecorded, message: msg}, nil
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
