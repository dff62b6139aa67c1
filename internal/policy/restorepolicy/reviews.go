package restorepolicy

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
)

// Reviews answers Lookup.May with SubjectAccessReviews, each question
// asked of the API server once (cached by user and request, for the life
// of the Reviews: one restore). Create sends one review and fills its
// status (a controller-runtime client's Create does).
type Reviews struct {
	Create func(ctx context.Context, review *authorizationv1.SubjectAccessReview) error

	mu      sync.Mutex
	answers map[string]bool
}

// maxCachedReviews bounds the answers one Reviews keeps.
const maxCachedReviews = 10000

// May implements Lookup.May: the review's status.allowed for user (name,
// UID, groups and extra, all passed: a review without groups would judge a
// user in none). Errors: the API server's, and a review it could not
// evaluate (status.evaluationError with no decision), which is never read
// as allowed.
func (r *Reviews) May(ctx context.Context, user authenticationv1.UserInfo, a authorizationv1.ResourceAttributes) (bool, error) {
	b, err := json.Marshal(struct {
		U authenticationv1.UserInfo
		A authorizationv1.ResourceAttributes
	}{user, a})
	if err != nil {
		return false, err
	}
	key := string(b)
	r.mu.Lock()
	ok, cached := r.answers[key]
	r.mu.Unlock()
	if cached {
		return ok, nil
	}
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		ResourceAttributes: &a, User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra}}
	if err := r.Create(ctx, review); err != nil {
		return false, fmt.Errorf("asking whether %s may %s %s: %w", user.Username, a.Verb, a.Resource, err)
	}
	st := review.Status
	if !st.Allowed && !st.Denied && st.EvaluationError != "" {
		return false, fmt.Errorf("asking whether %s may %s %s: the API server could not decide: %s", user.Username, a.Verb, a.Resource, st.EvaluationError)
	}
	r.mu.Lock()
	if r.answers == nil {
		r.answers = map[string]bool{}
	}
	if len(r.answers) < maxCachedReviews {
		r.answers[key] = st.Allowed
	}
	r.mu.Unlock()
	return st.Allowed, nil
}
