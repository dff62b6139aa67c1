package phases

import (
	"context"
	"fmt"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"

	"github.com/nacflow/nacflow/internal/policy/credentials"
	"github.com/nacflow/nacflow/internal/policy/endpoint"
)

// contentRules are the admin's rules for what a tenant's storage location
// may hand Velero besides names (DESIGN §3 Safety): its config and
// endpoints (package endpoint) and its credential file (package
// credentials). ValidateBSLSpec and CopySecret share them.
type contentRules struct {
	// endpoints are the admin's endpoint rules from nac's flags.
	endpoints endpoint.Policy
	// unchecked are the providers (short and full names) whose credentials
	// and config the admin lets through unchecked.
	unchecked map[string]bool
	// resolver resolves endpoint host names (nil: net.DefaultResolver).
	resolver endpoint.Resolver
}

func newContentRules(o Options) contentRules {
	r := contentRules{endpoints: o.Endpoints, resolver: o.Resolver, unchecked: map[string]bool{}}
	for _, p := range o.UncheckedCredentialProviders {
		r.unchecked[p], r.unchecked[credentials.FullName(p)] = true, true
	}
	return r
}

// isUnchecked reports whether provider has no parser and the admin let it
// through by name (nac --unchecked-credential-providers).
func (r contentRules) isUnchecked(provider string) bool {
	return credentials.Kind(provider) == "" && (r.unchecked[provider] || r.unchecked[credentials.FullName(provider)])
}

// checkConfig returns a refusal when spec's config holds a key its
// provider's plugin may not be given from a tenant (endpoint.CheckConfig) or
// a URL-valued key whose endpoint the rules (flags merged with extra, a
// blueprint's args.endpoints) refuse, resolving host names now. err is a
// resolver failure that may pass (retryable).
func (r contentRules) checkConfig(ctx context.Context, spec *velerov1.BackupStorageLocationSpec, extra endpoint.Policy) (refusal, err error) {
	const field = "spec.backupStorageLocationSpec.config"
	kind := credentials.Kind(spec.Provider)
	if kind == "" {
		if r.isUnchecked(spec.Provider) {
			return nil, nil
		}
		return fmt.Errorf("spec.backupStorageLocationSpec.provider: %q: %w", spec.Provider, credentials.ErrUnknownProvider), nil
	}
	if err := endpoint.CheckConfig(kind, spec.Config); err != nil {
		return fmt.Errorf("%s: %w", field, err), nil
	}
	policy := r.endpoints.Merge(extra)
	for _, k := range endpoint.URLKeys(kind) {
		v, ok := spec.Config[k]
		if !ok {
			continue
		}
		refusal, err := policy.Check(ctx, r.resolver, v)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", field, k, err)
		}
		if refusal != nil {
			return fmt.Errorf("%s.%s: %w: Velero would connect to it from its own pod", field, k, refusal), nil
		}
	}
	return nil, nil
}

// checkCredential returns a refusal when data, the credential file of a
// location of provider with config, read from source (e.g. `Secret
// creds/cloud`), is not static key material its plugin's SDK reads as
// such (credentials.Check), unless the admin let provider through unchecked.
func (r contentRules) checkCredential(provider string, config map[string]string, data []byte, source string) error {
	if r.isUnchecked(provider) {
		return nil
	}
	err := credentials.Check(provider, data, config)
	if err == nil {
		return nil
	}
	if ce, ok := err.(*credentials.Error); ok {
		return fmt.Errorf("spec.backupStorageLocationSpec.credential: %s", ce.Describe(source))
	}
	return fmt.Errorf("spec.backupStorageLocationSpec.credential: %s: %w", source, err)
}

// EndpointRevision returns a function giving, for a location's spec, a
// fingerprint of what its URL-valued config keys' host names resolve to now
// (endpoint.Fingerprint; "" when it has none), resolved with r (nil:
// net.DefaultResolver), each lookup bounded by 2 s. The
// NonAdminBackupStorageLocation controller puts it in a location's
// revision (cmd wires it), so a name that comes to resolve elsewhere after
// validation re-runs ValidateBSLSpec and its endpoint rules.
func EndpointRevision(r endpoint.Resolver) func(ctx context.Context, spec *velerov1.BackupStorageLocationSpec) string {
	return func(ctx context.Context, spec *velerov1.BackupStorageLocationSpec) string {
		if spec == nil {
			return ""
		}
		var urls []string
		for _, k := range endpoint.URLKeys(credentials.Kind(spec.Provider)) {
			if v, ok := spec.Config[k]; ok {
				urls = append(urls, v)
			}
		}
		return endpoint.Fingerprint(ctx, r, urls, 2*time.Second)
	}
}
