// Package capabilities finds what the API server nacflow runs against lets
// it do: which CRDs it serves (nacflow's or OADP NAC's), whether their
// status keeps a plan, and what nacflow's RBAC allows; cmd/nac starts only
// the controllers that can run and says what is off.
package capabilities

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// Capabilities are what the API server's installed CRDs let nacflow do.
// Installed with nacflow's own CRDs, everything; installed by the OADP
// operator, with OADP NAC's CRDs (openshift/oadp-operator, spec.nonAdmin of
// the DataProtectionApplication, the controller image swapped through
// spec.unsupportedOverrides.nonAdminControllerImageFqin), less: OADP ships
// no Blueprint nor NonAdminSchedule CRD, and its NAC kinds' status schemas
// have no status.plan, so the API server prunes the plan nacflow writes.
type Capabilities struct {
	// Served holds the NAC kinds (v1alpha1.Kinds' Kind names), Blueprint
	// and NonAdminBackupStorageLocationRequest when the API server serves
	// them in oadp.openshift.io/v1alpha1.
	Served map[string]bool
	// Plan holds the served NAC kinds whose status schema keeps
	// status.plan (nacflow's CRDs); a kind served without it gets its plan
	// pruned at every status write.
	Plan map[string]bool
	// Events is true when nacflow may create Events (OADP's role for its
	// non-admin controller grants none: the phase-by-phase story is then
	// only in nacflow's log).
	Events bool
	// RestorePrecheck is true when nacflow may do the restore pre-check
	// (CheckRestoreItems): ServerStatusRequests in the OADP namespace,
	// ClusterRoles, Roles and PersistentVolumes, none of which OADP's role
	// grants.
	RestorePrecheck bool
	// TenantLocations is true when the TenantLocations CRD is served and
	// nacflow may create and patch them in the OADP namespace: it then
	// records each tenant location's namespace for the admission policy
	// nacflow-pod-volume-backups (internal/velero/tenantlocations). OADP's role for
	// its non-admin controller grants none.
	TenantLocations bool
	// Webhook is true when nacflow may serve its requester webhook: keep
	// its signing key and certificate in Secrets of the OADP namespace
	// (get, list, watch, create, update) and inject the certificate's CA
	// into MutatingWebhookConfigurations (get, list, watch, update).
	// OADP's role for its non-admin controller grants neither.
	Webhook bool
	// PlanUnknown, when not empty, says why the NAC kinds' status schemas
	// could not be read; Plan then holds the served kinds when the
	// Blueprint CRD is served too (nacflow's CRDs come as a set, and OADP
	// ships no Blueprint CRD), none otherwise.
	PlanUnknown string
}

// All returns the capabilities of nacflow's own CRDs: every kind
// served, every plan kept.
func All() Capabilities {
	c := Capabilities{Served: map[string]bool{"Blueprint": true, "NonAdminBackupStorageLocationRequest": true, "TenantLocations": true}, Plan: map[string]bool{}}
	for _, k := range v1alpha1.Kinds() {
		c.Served[k.Kind], c.Plan[k.Kind] = true, true
	}
	c.Events, c.RestorePrecheck, c.TenantLocations, c.Webhook = true, true, true, true
	return c
}

// Detect asks the API server, through dc, which kinds of
// oadp.openshift.io/v1alpha1 it serves (discovery) and which of the NAC
// kinds' status schemas have a plan property (the group's OpenAPI v3
// document, which the API server builds from the CRDs' schemas). Both are
// readable by any authenticated user (the system:discovery ClusterRole), so
// OADP's RBAC for its non-admin controller needs nothing more. It returns
// an error when the API server cannot be asked; a group not served at all is
// no error (nothing is served).
func Detect(ctx context.Context, dc discovery.DiscoveryInterface, cl client.Client, oadpNamespace string) (Capabilities, error) {
	c := Capabilities{Served: map[string]bool{}, Plan: map[string]bool{}}
	var err error
	if c.Events, err = mayAll(ctx, cl, access{"create", "", "events", "", ""}, access{"patch", "", "events", "", ""}); err != nil {
		return c, err
	}
	ssr := func(verb string) access { return access{verb, "velero.io", "serverstatusrequests", oadpNamespace, ""} }
	if c.RestorePrecheck, err = mayAll(ctx, cl, ssr("create"), ssr("get"), ssr("list"), ssr("watch"), ssr("delete"),
		access{"get", "rbac.authorization.k8s.io", "clusterroles", "", ""}, access{"get", "rbac.authorization.k8s.io", "roles", "", ""},
		access{"get", "", "persistentvolumes", "", ""}); err != nil {
		return c, err
	}
	cm := func(verb string) access {
		return access{verb, v1alpha1.GroupVersion.Group, "tenantlocations", oadpNamespace, ""}
	}
	if c.TenantLocations, err = mayAll(ctx, cl, cm("create"), cm("patch")); err != nil {
		return c, err
	}
	secret := func(verb string) access { return access{verb, "", "secrets", oadpNamespace, ""} }
	hooks := func(verb string) access {
		return access{verb, "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", ""}
	}
	// nac's ClusterRole lets it update its own configuration only.
	update := access{"update", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", RequesterConfiguration}
	if c.Webhook, err = mayAll(ctx, cl, secret("get"), secret("list"), secret("watch"), secret("create"), secret("update"),
		hooks("get"), hooks("list"), hooks("watch"), update); err != nil {
		return c, err
	}
	gv := v1alpha1.GroupVersion.String()
	list, err := dc.ServerResourcesForGroupVersion(gv)
	if apierrors.IsNotFound(err) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("discovering %s: %w", gv, err)
	}
	for _, r := range list.APIResources {
		c.Served[r.Kind] = true
	}
	c.TenantLocations = c.TenantLocations && c.Served["TenantLocations"]
	if err := c.detectPlans(ctx, dc); err != nil {
		// Without the schema, the CRDs are told apart by the kind only
		// nacflow's have: OADP ships no Blueprint CRD.
		c.PlanUnknown = err.Error()
		for _, k := range v1alpha1.Kinds() {
			c.Plan[k.Kind] = c.Served[k.Kind] && c.Served["Blueprint"]
		}
	}
	return c, nil
}

// detectPlans sets c.Plan from the OpenAPI v3 document of
// oadp.openshift.io/v1alpha1, waiting openAPIWait for it to be published.
// It returns an error when it cannot be read.
func (c *Capabilities) detectPlans(ctx context.Context, dc discovery.DiscoveryInterface) error {
	gv := v1alpha1.GroupVersion.String()
	// The API server publishes a CRD's schema a moment after it serves the
	// CRD (its OpenAPI controller): wait for it, a while.
	var doc openapi.GroupVersion
	for deadline := time.Now().Add(openAPIWait); ; {
		paths, err := dc.OpenAPIV3().Paths()
		if err != nil {
			return fmt.Errorf("listing the OpenAPI v3 documents: %w", err)
		}
		var ok bool
		if doc, ok = paths["apis/"+gv]; ok {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the API server publishes no OpenAPI v3 document for %s (waited %s)", gv, openAPIWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	raw, err := doc.Schema("application/json")
	if err != nil {
		return fmt.Errorf("reading the OpenAPI v3 document of %s: %w", gv, err)
	}
	var document struct {
		Components struct {
			Schemas map[string]schema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &document); err != nil {
		return fmt.Errorf("decoding the OpenAPI v3 document of %s: %w", gv, err)
	}
	// CRD schemas are published under the reversed group and the version:
	// io.openshift.oadp.v1alpha1.NonAdminBackup.
	for _, k := range v1alpha1.Kinds() {
		s, ok := document.Components.Schemas["io.openshift.oadp.v1alpha1."+k.Kind]
		if !ok {
			continue
		}
		if _, ok := s.Properties["status"].Properties["plan"]; ok {
			c.Plan[k.Kind] = true
		}
	}
	return nil
}

// openAPIWait bounds Detect' wait for the OpenAPI document of
// CRDs just installed.
const openAPIWait = 10 * time.Second

// access is one verb on one resource (namespace "": every namespace;
// name "": any).
type access struct {
	verb, group, resource, namespace, name string
}

// RequesterConfiguration is the MutatingWebhookConfiguration of nacflow's
// requester webhook, the only one nac's ClusterRole lets it update
// (internal/runtime/webhooks.DefaultConfiguration).
const RequesterConfiguration = "nacflow-requester"

// mayAll reports whether cl's user may do every one of want, asking the API
// server (SelfSubjectAccessReview, which any authenticated user may create).
func mayAll(ctx context.Context, cl client.Client, want ...access) (bool, error) {
	for _, a := range want {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: a.verb, Group: a.group, Resource: a.resource, Namespace: a.namespace, Name: a.name},
		}}
		if err := cl.Create(ctx, review); err != nil {
			return false, fmt.Errorf("asking whether nacflow may %s %s: %w", a.verb, a.resource, err)
		}
		if !review.Status.Allowed {
			return false, nil
		}
	}
	return true, nil
}

// schema is the part of an OpenAPI v3 schema Detect reads.
type schema struct {
	Properties map[string]schema `json:"properties"`
}

// Limits returns one sentence per thing nacflow cannot do with c, sorted,
// none with nacflow's own CRDs: for cmd/nac to log at start.
func (c Capabilities) Limits() []string {
	var out []string
	if !c.Served["Blueprint"] {
		out = append(out, "no Blueprint CRD: every operation runs its built-in blueprint, admin overrides and per-tenant blueprints are off, and the Blueprint controller does not run")
	}
	for _, k := range v1alpha1.Kinds() {
		switch {
		case !c.Served[k.Kind]:
			out = append(out, fmt.Sprintf("no %s CRD: the %s controller does not run", k.Kind, k.Kind))
		case !c.Plan[k.Kind]:
			out = append(out, fmt.Sprintf("the %s CRD has no status.plan: tenants see no per-phase status (the API server prunes it); nacflow keeps each object's plan in a Secret %s<object UID> in the OADP namespace", k.Kind, v1alpha1.PlanSecretPrefix))
		}
	}
	if c.PlanUnknown != "" {
		out = append(out, "the NAC kinds' status schemas are unknown ("+c.PlanUnknown+"): status.plan is taken to be kept if and only if the Blueprint CRD is served (nacflow's CRDs have both, OADP's neither)")
	}
	if !c.Events {
		out = append(out, "may not create Events: none is attempted, and the phase-by-phase story of each operation is only in nacflow's log (at debug level, or at info for an object whose spec.logLevel is debug), not in kubectl describe")
	}
	if !c.RestorePrecheck {
		out = append(out, "may not use ServerStatusRequests, ClusterRoles, Roles and PersistentVolumes: the restore pre-check (CheckRestoreItems) is off, and a NonAdminRestore is checked as OADP NAC checks it (its spec only)")
	}
	if !c.TenantLocations {
		out = append(out, "no TenantLocations CRD, or may not create and patch TenantLocations in the OADP namespace: tenant locations are not recorded, and where the admission policy nacflow-pod-volume-backups is installed no PodVolumeBackup on a tenant location is admitted (file-system backups to tenants' locations fail)")
	}
	if !c.Webhook {
		out = append(out, "may not keep Secrets in the OADP namespace or update MutatingWebhookConfigurations: the requester webhook is not served, no NonAdminRestore records who asked for it, and every restore is bounded by the tenant role alone (condition RequesterVerified=False/WebhookNotInstalled)")
	}
	for _, k := range v1alpha1.Kinds() {
		for _, r := range k.Requires {
			if c.Served[k.Kind] && !c.Served[r] {
				out = append(out, fmt.Sprintf("no %s CRD: the %s controller does not run", r, k.Kind))
			}
		}
	}
	sort.Strings(out)
	return out
}

// Runs reports whether the controller of kind (a NAC kind, or Blueprint)
// can run with c: its CRD is served, and those of the kinds it requires
// (v1alpha1.Kind.Requires: for NonAdminBackupStorageLocation, its request
// kind's) too.
func (c Capabilities) Runs(kind string) bool {
	if !c.Served[kind] {
		return false
	}
	k, _ := v1alpha1.KindNamed(kind)
	for _, r := range k.Requires {
		if !c.Served[r] {
			return false
		}
	}
	return true
}

// BlueprintReader returns what the blueprint resolver should read
// Blueprints from: cache itself when the Blueprint CRD is served, else a
// reader that finds none (every operation runs its built-in), so that no
// resolve fails for want of the kind.
func (c Capabilities) BlueprintReader(cache client.Reader) client.Reader {
	if c.Served["Blueprint"] {
		return cache
	}
	return noBlueprints{cache}
}

// noBlueprints reads as its Reader does, except that a list of Blueprints
// is empty.
type noBlueprints struct{ client.Reader }

// List implements client.Reader: a BlueprintList is empty; any other list
// is read by the wrapped Reader.
func (r noBlueprints) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if l, ok := list.(*v1alpha1.BlueprintList); ok {
		l.Items = nil
		return nil
	}
	return r.Reader.List(ctx, list, opts...)
}

// TrimCache returns opts (CacheOptions' result) without its settings for
// the oadp.openshift.io kinds c does not serve: controller-runtime's cache
// refuses to start with settings for a kind the API server does not know.
func (c Capabilities) TrimCache(opts cache.Options) cache.Options {
	for obj := range opts.ByObject {
		if kind, ok := v1alpha1.APIKindOf(obj); ok && !c.Served[kind] {
			delete(opts.ByObject, obj)
		}
	}
	return opts
}

// Collector returns the gauge nacflow_capability, one series per
// capability of c, 1 when nacflow has it and 0 when not: capability is a
// kind's name (its CRD is served: Blueprint, the NAC kinds,
// NonAdminBackupStorageLocationRequest), "<kind>.status.plan" (the kind's
// CRD keeps the plan in status; 0: it is kept in a Secret, PlanStore),
// "events" (nacflow may create Events), "restorePrecheck" (it may do the
// restore pre-check) or "tenantLocations" (it records tenant locations'
// namespaces). The values are fixed at start.
func (c Capabilities) Collector() prometheus.Collector {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "nacflow_capability",
		Help: "1 when the installed CRDs and RBAC give nacflow the capability, 0 when not (docs/oadp.md): a kind's CRD, <kind>.status.plan, events, restorePrecheck, tenantLocations, webhook.",
	}, []string{"capability"})
	set := func(name string, ok bool) {
		v := 0.0
		if ok {
			v = 1
		}
		g.WithLabelValues(name).Set(v)
	}
	set("Blueprint", c.Served["Blueprint"])
	set("NonAdminBackupStorageLocationRequest", c.Served["NonAdminBackupStorageLocationRequest"])
	for _, k := range v1alpha1.Kinds() {
		set(k.Kind, c.Served[k.Kind])
		set(k.Kind+".status.plan", c.Plan[k.Kind])
	}
	set("events", c.Events)
	set("restorePrecheck", c.RestorePrecheck)
	set("tenantLocations", c.TenantLocations)
	set("webhook", c.Webhook)
	return g
}

// Off returns the NAC kinds whose controller does not run with c (Runs
// false), for GarbageCollector.Off.
func (c Capabilities) Off() map[string]bool {
	off := map[string]bool{}
	for _, k := range v1alpha1.Kinds() {
		if !c.Runs(k.Kind) {
			off[k.Kind] = true
		}
	}
	return off
}
