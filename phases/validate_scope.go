package phases

import (
	"fmt"
	"slices"
	"strings"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// ClusterExcludedResources are the cluster-scoped kinds that never travel
// with a tenant's backup or restore: granting security (SCCs, ClusterRoles,
// ClusterRoleBindings), scheduling (PriorityClasses) or extending the API
// (CustomResourceDefinitions) for the whole cluster, and KubeVirt's
// cluster-wide instance types and preferences. The list is OADP NAC's
// (alwaysExcludedClusterResources in migtools/oadp-non-admin); every Velero
// Backup and Restore made for a tenant excludes them.
var ClusterExcludedResources = []string{
	"securitycontextconstraints",
	"clusterroles",
	"clusterrolebindings",
	"priorityclasses",
	"customresourcedefinitions",
	"virtualmachineclusterinstancetypes",
	"virtualmachineclusterpreferences",
}

// nacResources are the NAC kinds every Velero Backup and Restore made for
// a tenant excludes, "<resource>.oadp.openshift.io" in OADP NAC's order:
// the kind registry's (v1alpha1.ExcludedResources), read once. Restoring a
// NonAdminBackup object would replay the request (OADP NAC excludes them
// the same way).
var nacResources = v1alpha1.ExcludedResources()

// NACResources is a copy of the NAC kinds every Velero Backup and Restore
// made for a tenant excludes (nacResources), for other packages to read:
// phases never reads it, so that changing it changes no backup.
var NACResources = slices.Clone(nacResources)

// restoreExcluded are excluded from every tenant restore: the NAC kinds
// (restoring one would replay a request), volumesnapshotclasses (OADP NAC
// excludes them from restores) and ClusterExcludedResources.
var restoreExcluded = slices.Concat(nacResources, []string{"volumesnapshotclasses.snapshot.storage.k8s.io"}, ClusterExcludedResources)

// knownClusterScoped are resource names and short names, as a tenant may
// write them in includedResources, of cluster-scoped kinds found on most
// clusters; names not listed are looked up with the API server's RESTMapper.
var knownClusterScoped = map[string]bool{
	"namespaces": true, "ns": true, "nodes": true, "no": true,
	"persistentvolumes": true, "pv": true, "storageclasses": true, "sc": true,
	"storageclasses.storage.k8s.io": true, "persistentvolumes.v1": true,
	"customresourcedefinitions": true, "crd": true, "crds": true,
	"customresourcedefinitions.apiextensions.k8s.io": true,
	"clusterroles": true, "clusterroles.rbac.authorization.k8s.io": true,
	"clusterrolebindings": true, "clusterrolebindings.rbac.authorization.k8s.io": true,
	"priorityclasses": true, "pc": true, "priorityclasses.scheduling.k8s.io": true,
	"volumesnapshotclasses": true, "volumesnapshotclasses.snapshot.storage.k8s.io": true,
	"volumesnapshotcontents": true, "volumesnapshotcontents.snapshot.storage.k8s.io": true,
	"securitycontextconstraints": true, "scc": true, "securitycontextconstraints.security.openshift.io": true,
	"mutatingwebhookconfigurations": true, "validatingwebhookconfigurations": true,
	"apiservices": true, "certificatesigningrequests": true, "csr": true,
	"csidrivers": true, "csinodes": true, "ingressclasses": true, "runtimeclasses": true,
}

// clusterScopedIn returns the entries of resources (Velero's
// "resource[.group]" names, as in includedResources) that name a
// cluster-scoped kind: a well-known name or short name, or one the
// RESTMapper resolves to a cluster-scoped kind. "*" and names the mapper
// does not know are not reported (Velero skips what it cannot resolve, and
// the kinds that matter are excluded from every tenant operation anyway).
// mapper may be nil (well-known names only). Errors: the mapper's, other
// than "no match" (retryable: discovery may be briefly unavailable).
func clusterScopedIn(mapper meta.RESTMapper, resources []string) ([]string, error) {
	var out []string
	for _, r := range resources {
		name := strings.ToLower(strings.TrimSpace(r))
		if name == "" || name == "*" {
			continue
		}
		if knownClusterScoped[name] {
			out = append(out, r)
			continue
		}
		if mapper == nil {
			continue
		}
		gr := schema.ParseGroupResource(name)
		gvk, err := mapper.KindFor(gr.WithVersion(""))
		if err != nil {
			if meta.IsNoMatchError(err) {
				continue
			}
			return nil, fmt.Errorf("looking up resource %q: %w", r, err)
		}
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			if meta.IsNoMatchError(err) {
				continue
			}
			return nil, fmt.Errorf("looking up kind %s: %w", gvk, err)
		}
		if mapping.Scope.Name() == meta.RESTScopeNameRoot {
			out = append(out, r)
		}
	}
	return out, nil
}

// excludeForTenant adds the NAC kinds and ClusterExcludedResources to spec's
// exclusions, in the filter style spec uses: the newer
// excludedNamespaceScopedResources / excludedClusterScopedResources when any
// of Velero's scoped filters is set, else the old-style excludedResources
// (Velero refuses a backup that mixes the two styles; OADP NAC does the
// same). Entries already present are not repeated.
func excludeForTenant(spec *velerov1.BackupSpec) {
	add := func(list *[]string, items []string) {
		for _, r := range items {
			if !slices.Contains(*list, r) {
				*list = append(*list, r)
			}
		}
	}
	if len(spec.IncludedClusterScopedResources) > 0 || len(spec.ExcludedClusterScopedResources) > 0 ||
		len(spec.IncludedNamespaceScopedResources) > 0 || len(spec.ExcludedNamespaceScopedResources) > 0 {
		add(&spec.ExcludedNamespaceScopedResources, nacResources)
		add(&spec.ExcludedClusterScopedResources, ClusterExcludedResources)
		return
	}
	add(&spec.ExcludedResources, nacResources)
	add(&spec.ExcludedResources, ClusterExcludedResources)
}

// SyncedBackupSpec returns the spec a NonAdminBackup of namespace ns asks
// for, given the spec of a Velero Backup made for it (by nacflow or OADP
// NAC) as Velero stored it, and what was removed, by field name (the JSON
// names of velerov1.BackupSpec), for the sync to record. It removes what
// others added and the NonAdminBackup CRD refuses or does not need:
//   - volumeSnapshotLocations, which Velero fills in whenever a
//     VolumeSnapshotLocation exists, and excludedNamespaces, which Velero
//     fills with the namespaces labelled velero.io/exclude-from-backup
//     (Velero's backup controller, prepareBackupRequest);
//   - includedNamespaces other than ns (a NAB backs up its own namespace
//     only; nacflow and OADP NAC set [ns]);
//   - the exclusions nacflow and OADP NAC add to every tenant backup
//     (NACResources, ClusterExcludedResources), in either filter style.
//
// storageLocation is left as it is: the caller maps it back to a
// NonAdminBackupStorageLocation name. spec is not modified.
func SyncedBackupSpec(spec *velerov1.BackupSpec, ns string) (*velerov1.BackupSpec, map[string][]string) {
	out := spec.DeepCopy()
	dropped := map[string][]string{}
	drop := func(field string, list *[]string, remove func(string) bool) {
		kept := (*list)[:0:0]
		for _, v := range *list {
			if remove(v) {
				dropped[field] = append(dropped[field], v)
				continue
			}
			kept = append(kept, v)
		}
		if len(kept) == 0 {
			kept = nil
		}
		*list = kept
	}
	all := func(string) bool { return true }
	added := func(v string) bool {
		return slices.Contains(nacResources, v) || slices.Contains(ClusterExcludedResources, v) ||
			slices.Contains(nacResources, v+"."+v1alpha1.GroupVersion.Group)
	}
	drop("volumeSnapshotLocations", &out.VolumeSnapshotLocations, all)
	drop("excludedNamespaces", &out.ExcludedNamespaces, all)
	drop("includedNamespaces", &out.IncludedNamespaces, func(v string) bool { return v != ns })
	drop("excludedResources", &out.ExcludedResources, added)
	drop("excludedNamespaceScopedResources", &out.ExcludedNamespaceScopedResources, added)
	drop("excludedClusterScopedResources", &out.ExcludedClusterScopedResources, added)
	return out, dropped
}
