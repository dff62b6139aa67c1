package phases

import (
	"context"
	"fmt"
	"strings"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/internal/policy/endpoint"
)

// ValidateBSLSpecArgs are the args of ValidateBSLSpec.
type ValidateBSLSpecArgs struct {
	// Enforce holds the admin's enforced values, typed as Velero's
	// BackupStorageLocationSpec.
	Enforce *EnforcedBSLSpec `json:"enforce,omitempty" doc:"admin-enforced values, typed as Velero's BackupStorageLocationSpec"`
	// SharedBuckets are the buckets of admin locations that tenants may use
	// too, each with the root their prefixes are forced under.
	SharedBuckets []SharedBucket `json:"sharedBuckets,omitempty" doc:"buckets of admin locations tenants may share: [{bucket, root}]; a tenant prefix on one is forced to <root>/<namespace>[/<prefix>]"`
	// Endpoints are endpoint rules added to nac's --endpoint-* flags for
	// the locations this blueprint serves (package endpoint: deny wins).
	Endpoints *endpoint.Lists `json:"endpoints,omitempty" doc:"endpoint rules added to nac's --endpoint-* flags: {allowCIDRs, denyCIDRs, allowHosts, denyHosts}; CIDRs or addresses, hosts as name, *.domain or address with an optional :port; a deny always wins"`
}

// SharedBucket is a bucket an admin shares with tenants (ValidateBSLSpec
// args.sharedBuckets).
type SharedBucket struct {
	// Bucket is the bucket's name.
	Bucket string `json:"bucket"`
	// Root is the folder of the bucket tenant prefixes are forced under:
	// "<root>/<namespace>[/<prefix>]". It must lie outside every admin
	// location's prefix on the bucket.
	Root string `json:"root"`
}

// Validate implements engine.ArgsValidator: every shared bucket names a
// bucket once and a clean root.
func (a ValidateBSLSpecArgs) Validate() error {
	seen := map[string]bool{}
	for i, b := range a.SharedBuckets {
		field := fmt.Sprintf("sharedBuckets[%d]", i)
		if err := v1alpha1.CheckBucket(field+".bucket", b.Bucket); err != nil {
			return err
		}
		if seen[b.Bucket] {
			return fmt.Errorf("%s.bucket: %q is listed twice", field, b.Bucket)
		}
		seen[b.Bucket] = true
		if err := v1alpha1.CheckPrefix(field+".root", b.Root); err != nil {
			return err
		}
	}
	_, err := a.endpoints()
	return err
}

// endpoints returns args.endpoints compiled (the zero Policy when unset).
func (a *ValidateBSLSpecArgs) endpoints() (endpoint.Policy, error) {
	if a.Endpoints == nil {
		return endpoint.Policy{}, nil
	}
	return a.Endpoints.Compile("endpoints")
}

// root returns the root tenant prefixes are forced under on bucket ("" when
// the bucket is not shared) and whether it is shared.
func (a *ValidateBSLSpecArgs) root(bucket string) (string, bool) {
	for _, b := range a.SharedBuckets {
		if b.Bucket == bucket {
			return b.Root, true
		}
	}
	return "", false
}

// ValidateBSLSpec checks a NonAdminBackupStorageLocation (seed design
// non_admin_backupstoragelocation.md): default must be false; provider,
// objectStorage.bucket and the credential's name and key are required; the
// credential Secret must exist in the location's own namespace (read from
// the API server, never a cluster-wide cache) and hold the key. It applies
// args.enforce and forces the prefix in object storage under the tenant's
// namespace ("<ns>" or "<ns>/<prefix>", OADP NAC's mapping;
// "<root>/<ns>[/<prefix>]" on a bucket of args.sharedBuckets), so tenants
// sharing a bucket never share a prefix.
//
// The storage rule (DESIGN §4): the bucket must be a plain bucket name and
// the prefix, once forced, a clean relative path (v1alpha1.CheckBucket,
// CheckPrefix); a bucket used by an admin's BackupStorageLocation is refused
// unless args.sharedBuckets lists it; and the location's storage may not
// overlap that of any admin location or of an older tenant's location
// (v1alpha1.StorageHolders, Storage.Overlaps): one tenant must never make
// Velero mark another's or the admin's location Unavailable. The check runs
// on every run of the action, so an admin location added later turns an
// existing tenant location BackingOff.
//
// The effective spec goes to status.veleroBackupStorageLocation.spec;
// condition Accepted is set. A refusal is terminal: Accepted=False, phase
// BackingOff, and the Velero BSL and copied Secret an earlier run made are
// removed, so a location that now overlaps stops writing at once.
//
// Content rules (DESIGN §3 Safety: Velero acts with the admin's power, so
// what it will interpret is checked as it will read it): the effective
// config may hold only the keys the provider's plugin reads that are safe
// from a tenant (package endpoint, CheckConfig); every URL-valued key
// (s3Url, publicUrl, storeEndpoint, storageAccountURI,
// activeDirectoryAuthorityURI) must be http(s) to a host that resolves,
// now, to no loopback, link-local, metadata, unspecified or multicast
// address, under nac's --endpoint-* flags and args.endpoints (Policy.Check);
// and the credential Secret's key must hold only static key material as the
// provider's SDK reads it (package credentials). A provider without a
// parser is refused unless nac --unchecked-credential-providers names it.
// Every run of the action checks again (a new generation, a rotated
// Secret, an admin's decision or setting, an endpoint name that resolves
// elsewhere: EndpointRevision), and CopySecret checks the bytes it copies
// once more.
//
// Without args.enforce, the enforceBSLSpec of OADP's
// DataProtectionApplication applies, when there is one (package dpa).
type ValidateBSLSpec struct {
	settings Settings
	content  contentRules
}

// SafetyExceptions implements engine.Excepted: the storage rule reads the
// NonAdminBackupStorageLocation behind each tenant BSL in the OADP
// namespace, in its own namespace, to learn which location came first
// (v1alpha1.StorageHolders: its creation time only).
func (*ValidateBSLSpec) SafetyExceptions() []engine.Exception {
	return []engine.Exception{{Verbs: []string{"get"}, Kind: v1alpha1.GroupVersion.WithKind("NonAdminBackupStorageLocation").GroupKind(),
		Scope: engine.InAnyNamespace, Why: "the storage rule: of two overlapping locations the older one stays (their creation times)"}}
}

// Run implements phaseFunc.
func (f *ValidateBSLSpec) Run(ctx context.Context, op *engine.Operation, nabsl *v1alpha1.NonAdminBackupStorageLocation, a *ValidateBSLSpecArgs) (engine.Result, error) {
	var effective *velerov1.BackupStorageLocationSpec
	refusal := validateBSLSpec(nabsl)
	if refusal == nil {
		refusal = outsideOADPNamespace(op)
	}
	enforce, source, err := bslEnforcement.inForce(ctx, f.settings, a.Enforce)
	if err != nil {
		return waitForSettings(err)
	}
	if refusal == nil {
		effective = nabsl.Spec.BackupStorageLocationSpec.DeepCopy()
		refusal = enforce.Apply(effective)
	}
	if refusal == nil {
		recorded := ""
		if v := nabsl.Status.VeleroBackupStorageLocation; v != nil && v.Spec != nil && v.Spec.ObjectStorage != nil {
			recorded = v.Spec.ObjectStorage.Prefix
		}
		refusal = forcePrefix(a, nabsl.Namespace, recorded, effective)
	}
	if refusal == nil {
		if refusal, err = f.checkStorage(ctx, a, op, nabsl, effective); err != nil {
			return engine.Result{}, err
		}
	}
	if refusal == nil {
		extra, err := a.endpoints()
		if err != nil {
			return engine.Result{}, engine.Terminal(fmt.Errorf("args.%w", err))
		}
		if refusal, err = f.content.checkConfig(ctx, effective, extra); err != nil {
			return engine.Result{}, err
		}
	}
	if refusal == nil {
		if refusal, err = f.checkSecret(ctx, op, nabsl, effective); err != nil {
			return engine.Result{}, err
		}
	}
	if refusal != nil {
		if err := withdrawBSL(ctx, op); err != nil {
			return engine.Result{}, err
		}
		return engine.Result{}, refuse(nabsl, v1alpha1.ReasonInvalidBSLSpec, refusal)
	}
	effective.Default = false
	accept(nabsl, v1alpha1.ReasonBSLAccepted, "backup storage location accepted")
	if nabsl.Status.VeleroBackupStorageLocation == nil {
		nabsl.Status.VeleroBackupStorageLocation = &v1alpha1.VeleroBackupStorageLocation{}
	}
	nabsl.Status.VeleroBackupStorageLocation.Spec = effective
	msg := fmt.Sprintf("backupStorageLocationSpec accepted; prefix in object storage: %s", effective.ObjectStorage.Prefix)
	if enforce != nil {
		msg += enforcedBy(source, append(append([]string{}, enforce.Fields...), prefixed("objectStorage.", enforce.ObjectStorageFields)...))
	}
	return engine.Done(msg, map[string]string{"prefix": effective.ObjectStorage.Prefix}), nil
}

// forcePrefix checks the bucket and the tenant's prefix of spec and forces
// the prefix under namespace ns (and the shared root, for a shared bucket),
// in place. It returns the rule the bucket or the forced prefix breaks.
//
// recorded is the prefix the location was accepted with before ("" for a
// new location): when it is what earlier nacflow builds made of the same
// asked prefix (legacyTenantPrefix: "ns" and "ns/x" kept as they were), it
// stays, so that an upgrade never moves an existing location's folder;
// every other location gets OADP's mapping (tenantPrefix).
func forcePrefix(a *ValidateBSLSpecArgs, ns, recorded string, spec *velerov1.BackupStorageLocationSpec) error {
	const field = "spec.backupStorageLocationSpec.objectStorage."
	if err := v1alpha1.CheckBucket(field+"bucket", spec.ObjectStorage.Bucket); err != nil {
		return err
	}
	asked := strings.Trim(spec.ObjectStorage.Prefix, "/")
	if asked != "" {
		// What the tenant wrote must already be clean: "a//b" or "./a" are
		// refused rather than cleaned into something they did not ask for.
		if err := v1alpha1.CheckPrefix(field+"prefix", asked); err != nil {
			return err
		}
	}
	prefix, legacy := tenantPrefix(ns, asked), legacyTenantPrefix(ns, asked)
	if root, ok := a.root(spec.ObjectStorage.Bucket); ok {
		prefix, legacy = root+"/"+prefix, root+"/"+legacy
	}
	if recorded != "" && recorded == legacy {
		prefix = legacy
	}
	if err := v1alpha1.CheckPrefix(field+"prefix (forced under the namespace)", prefix); err != nil {
		return err
	}
	spec.ObjectStorage.Prefix = prefix
	return nil
}

// checkStorage returns a refusal when spec's storage may not be used by nabsl:
// a bucket of an admin location that args.sharedBuckets does not list, or
// storage overlapping another location's (v1alpha1.StorageHolders). It reads
// the locations from the API server: the manager's cache holds only the
// NAC-labelled ones, and the admin's must be seen too. err is the API
// server's (retryable).
func (f *ValidateBSLSpec) checkStorage(ctx context.Context, a *ValidateBSLSpecArgs, op *engine.Operation,
	nabsl *v1alpha1.NonAdminBackupStorageLocation, spec *velerov1.BackupStorageLocationSpec) (refusal, err error) {
	holders, err := v1alpha1.StorageHolders(ctx, op.APIReader, op.OADPNamespace, nabsl, op.UUID)
	if err != nil {
		return nil, err
	}
	mine := v1alpha1.StorageOf(spec)
	_, shared := a.root(mine.Bucket)
	for _, h := range holders {
		if h.Admin && !shared && h.Storage.SameBucket(mine) {
			return fmt.Errorf("spec.backupStorageLocationSpec.objectStorage.bucket: bucket %q is used by %s; "+
				"a tenant location may use an admin's bucket only when an admin shares it (ValidateBSLSpec args.sharedBuckets)", mine.Bucket, h.Description), nil
		}
	}
	for _, h := range holders {
		if h.Storage.Overlaps(mine) {
			return fmt.Errorf("spec.backupStorageLocationSpec.objectStorage.prefix: %s overlaps %s (%s): "+
				"locations may not share a bucket folder, one would make Velero mark the other Unavailable", mine, h.Description, h.Storage), nil
		}
	}
	return nil, nil
}

func prefixed(p string, l []string) []string {
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = p + s
	}
	return out
}

// tenantPrefix returns prefix forced under namespace ns: ns itself for no
// prefix, else "<ns>/<prefix>", even when prefix already starts with ns (so
// "ns/x" becomes "ns/ns/x"). The mapping is OADP NAC's
// (ComputePrefixForObjectStorage), so a location OADP wrote is read in place
// after a move to nacflow.
func tenantPrefix(ns, prefix string) string {
	prefix = strings.Trim(prefix, "/")
	if prefix == "" {
		return ns
	}
	return ns + "/" + prefix
}

// legacyTenantPrefix is the mapping of nacflow builds before OADP's was
// adopted: a prefix that already was "ns" or started with "ns/" was kept as
// it was. Only locations accepted with it keep it (see forcePrefix).
func legacyTenantPrefix(ns, prefix string) string {
	prefix = strings.Trim(prefix, "/")
	switch {
	case prefix == "" || prefix == ns:
		return ns
	case strings.HasPrefix(prefix, ns+"/"):
		return prefix
	default:
		return ns + "/" + prefix
	}
}

// validateBSLSpec returns the first rule nabsl's spec breaks.
func validateBSLSpec(nabsl *v1alpha1.NonAdminBackupStorageLocation) error {
	spec := nabsl.Spec.BackupStorageLocationSpec
	if err := checkTenantSpec("spec.backupStorageLocationSpec", spec); err != nil {
		return err
	}
	switch {
	case spec.Default:
		return fmt.Errorf("spec.backupStorageLocationSpec.default must be false: a tenant's location is never the default")
	case spec.Credential == nil || spec.Credential.Name == "" || spec.Credential.Key == "":
		return fmt.Errorf("spec.backupStorageLocationSpec.credential name and key are required: a Secret in namespace %s", nabsl.Namespace)
	case spec.Provider == "":
		return fmt.Errorf("spec.backupStorageLocationSpec.provider is required")
	case spec.ObjectStorage == nil || spec.ObjectStorage.Bucket == "":
		return fmt.Errorf("spec.backupStorageLocationSpec.objectStorage.bucket is required")
	case spec.ObjectStorage.CACertRef != nil:
		return fmt.Errorf("spec.backupStorageLocationSpec.objectStorage.caCertRef is not supported: use caCert")
	}
	return nil
}

// checkSecret returns a refusal when the credential Secret is missing from
// nabsl's namespace, lacks the key, or its key holds more than static key
// material for the effective spec's provider (contentRules.checkCredential).
func (f *ValidateBSLSpec) checkSecret(ctx context.Context, op *engine.Operation, nabsl *v1alpha1.NonAdminBackupStorageLocation,
	effective *velerov1.BackupStorageLocationSpec) (refusal, err error) {
	cred := nabsl.Spec.BackupStorageLocationSpec.Credential
	s := &corev1.Secret{}
	found, err := read(ctx, op.APIReader, nabsl.Namespace, cred.Name, s)
	if err != nil {
		return nil, err
	}
	if !found {
		return fmt.Errorf("spec.backupStorageLocationSpec.credential: Secret %q not found in namespace %s", cred.Name, nabsl.Namespace), nil
	}
	data, ok := s.Data[cred.Key]
	if !ok {
		return fmt.Errorf("spec.backupStorageLocationSpec.credential: Secret %q has no key %q", cred.Name, cred.Key), nil
	}
	return f.content.checkCredential(effective.Provider, effective.Config, data, fmt.Sprintf("Secret %s/%s", cred.Name, cred.Key)), nil
}

// Doc implements engine.Documented.
func (*ValidateBSLSpec) Doc() engine.FuncDoc {
	return engine.FuncDoc{
		Summary: "Checks a NonAdminBackupStorageLocation (default false; provider, bucket, credential name and key required; the Secret exists in the namespace), applies args.enforce, forces the prefix under the namespace; checks what Velero will interpret: config keys by the provider plugin's allow-list, URL-valued keys (s3Url, publicUrl, ...) resolved against the endpoint rules (nac --endpoint-* flags plus args.endpoints), and the credential file as static key material only, as the provider's SDK parses it (aws, gcp, azure; others only with nac --unchecked-credential-providers); sets Accepted and status.veleroBackupStorageLocation.spec.",
		Outputs: []string{"prefix: the effective prefix in object storage"},
		Errors:  "a refusal is terminal (Accepted=False naming the field or key and why, phase BackingOff; the Velero BSL and copied Secret of an earlier run are removed); a DNS failure that may pass is retried; " + apiRetried,
	}
}
