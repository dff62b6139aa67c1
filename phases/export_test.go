package phases

import (
	"context"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/internal/policy/itemdigest"
	"github.com/nacflow/nacflow/internal/policy/restorepolicy"
	"github.com/nacflow/nacflow/internal/velero/restorejudge"
)

// AsFunc returns fn as the registry gives it to the engine (unguarded), for
// tests that run a phase function through the engine.Func contract.
func AsFunc[O engine.Object, A any](fn phaseFunc[O, A]) engine.Func { return bind(fn) }

// checkContents is judgeContents with the judge of p, lk and verified (no
// resource modifiers), for tests of the walk that build no
// NonAdminRestore.
func checkContents(ctx context.Context, hc *storeClient, url string, p restorepolicy.Policy, skip func(schema.GroupResource) bool, lk precheckLookup,
	verified *itemdigest.Set) (total int, excluded, changed []string, err error) {
	lk.backupRole = map[string][]rbacv1.PolicyRule{}
	spec := &velerov1.RestoreSpec{NamespaceMapping: map[string]string{p.Namespace: p.Target}}
	if p.UpdateExisting {
		spec.ExistingResourcePolicy = velerov1.PolicyTypeUpdate
	}
	j, err := restorejudge.New(restorejudge.Config{Namespace: p.Namespace, Spec: spec, Requester: p.Requester, Bound: p.Bound,
		AdminOwned: p.AdminOwned, BucketOnly: p.BucketOnly, Verified: verified, Lookup: &lk})
	if err != nil {
		return 0, nil, nil, err
	}
	return judgeContents(ctx, hc, url, &restoreJudgement{judge: j, lookup: &lk}, skip)
}
