// Package dpa reads the non-admin settings of OADP's DataProtectionApplication
// (DPA) so that an admin moving from OADP keeps them: when a DPA with
// spec.nonAdmin exists in the OADP namespace (and its CRD is installed), its
// enforceBackupSpec, enforceRestoreSpec, enforceBSLSpec,
// requireApprovalForBSL, garbageCollectionPeriod and backupSyncPeriod apply
// as if the admin had written the equivalent blueprint args and flags
// (seed design admin_enforced_spec.md; OADP operator's NonAdmin type).
//
// Precedence, per setting: a blueprint's own args and a flag given on the
// command line win; the DPA comes next; the built-in default last. Unlike
// OADP, which restarts its controller's pod on a DPA change, the DPA is read
// live: an edit applies to the next operation and the next periodic pass.
package dpa

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// GroupVersionKind is OADP's DataProtectionApplication.
var GroupVersionKind = schema.GroupVersionKind{Group: "oadp.openshift.io", Version: "v1alpha1", Kind: "DataProtectionApplication"}

// NonAdmin is the part of a DPA's spec.nonAdmin nacflow reads: a minimal
// typed copy of NonAdmin in openshift/oadp-operator api/v1alpha1 (the
// operator's Go module is not served by the module proxy, and it would pull
// OpenShift's APIs in). The enforce specs stay raw JSON: the phases decode
// them strictly, and need to know which fields the admin set.
type NonAdmin struct {
	// Enable turns OADP's own Non-Admin Controller on. nacflow applies the
	// settings whatever it says (run one of the two controllers, not both).
	Enable *bool `json:"enable,omitempty"`
	// EnforceBackupSpec is a Velero BackupSpec of enforced values.
	EnforceBackupSpec json.RawMessage `json:"enforceBackupSpec,omitempty"`
	// EnforceRestoreSpec is a Velero RestoreSpec of enforced values.
	EnforceRestoreSpec json.RawMessage `json:"enforceRestoreSpec,omitempty"`
	// EnforceBSLSpec holds enforced BackupStorageLocationSpec values.
	EnforceBSLSpec json.RawMessage `json:"enforceBSLSpec,omitempty"`
	// RequireApprovalForBSL makes tenants' locations wait for an admin.
	RequireApprovalForBSL *bool `json:"requireApprovalForBSL,omitempty"`
	// GarbageCollectionPeriod is how often garbage collection runs; 0
	// disables it.
	GarbageCollectionPeriod *metav1.Duration `json:"garbageCollectionPeriod,omitempty"`
	// BackupSyncPeriod is how often backup sync runs; 0 disables it.
	BackupSyncPeriod *metav1.Duration `json:"backupSyncPeriod,omitempty"`
}

// Settings are the non-admin settings of one DPA.
type Settings struct {
	// Namespace and Name of the DPA.
	Namespace, Name string
	// ResourceVersion of the DPA read.
	ResourceVersion string
	// NonAdmin is its spec.nonAdmin.
	NonAdmin NonAdmin
}

// Field returns "DataProtectionApplication <ns>/<name> spec.nonAdmin.<field>",
// how messages name the source of a setting.
func (s *Settings) Field(field string) string {
	return fmt.Sprintf("DataProtectionApplication %s/%s spec.nonAdmin.%s", s.Namespace, s.Name, field)
}

// set lists the JSON names of the fields s sets, sorted.
func (s *Settings) set() []string {
	raw, _ := json.Marshal(s.NonAdmin)
	var m map[string]json.RawMessage
	_ = json.Unmarshal(raw, &m)
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Flags are the settings given on nac's command line; nil when a flag was
// not given (its default then yields to the DPA).
type Flags struct {
	// RequireApprovalForBSL is --require-approval-for-bsl.
	RequireApprovalForBSL *bool
	// GarbageCollectionPeriod is --garbage-collection-period.
	GarbageCollectionPeriod *time.Duration
	// BackupSyncPeriod is --backup-sync-period.
	BackupSyncPeriod *time.Duration
}

// Default ages of what Source read (see Source.MaxAge).
const (
	DefaultMaxAge       = time.Second
	DefaultAbsentMaxAge = 30 * time.Second
)

// Source reads the DPA settings of the OADP namespace from the API server
// (DPAs are few and not cached by the manager), at most once per MaxAge, and
// resolves each setting's precedence. A nil *Source has no DPA and no flags.
// It is safe for concurrent use.
type Source struct {
	// Reader lists DPAs: the manager's API reader.
	Reader client.Reader
	// Namespace is the OADP namespace.
	Namespace string
	// Flags are the settings given on the command line.
	Flags Flags
	// MaxAge is how long a read is reused (default DefaultMaxAge): an edit
	// of the DPA reaches operations within it.
	MaxAge time.Duration
	// AbsentMaxAge is how long "no DPA CRD" is reused (default
	// DefaultAbsentMaxAge): each check costs a discovery request.
	AbsentMaxAge time.Duration

	mu       sync.Mutex
	readAt   time.Time
	absent   bool
	settings *Settings
	logged   string
	won      map[string]string
}

// Get returns the settings of the DPA in the OADP namespace that has
// spec.nonAdmin (the first by name when several do, as OADP NAC picks the
// first), or nil when there is none or the DPA CRD is not installed.
// Errors: the API server's (retryable), or a spec.nonAdmin that does not
// decode (its message names the DPA). A change of the DPA read is logged.
func (s *Source) Get(ctx context.Context) (*Settings, error) {
	if s == nil || s.Reader == nil {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	maxAge := s.MaxAge
	if maxAge <= 0 {
		maxAge = DefaultMaxAge
	}
	if s.absent {
		maxAge = s.AbsentMaxAge
		if maxAge <= 0 {
			maxAge = DefaultAbsentMaxAge
		}
	}
	if !s.readAt.IsZero() && time.Since(s.readAt) < maxAge {
		return s.settings, nil
	}
	settings, absent, err := s.read(ctx)
	if err != nil {
		return nil, err
	}
	s.readAt, s.absent, s.settings = time.Now(), absent, settings
	s.logChange(ctx)
	return settings, nil
}

// read lists the DPAs of the namespace.
func (s *Source) read(ctx context.Context) (settings *Settings, absent bool, err error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(GroupVersionKind.GroupVersion().WithKind(GroupVersionKind.Kind + "List"))
	if err := s.Reader.List(ctx, list, client.InNamespace(s.Namespace)); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, true, nil
		}
		return nil, false, fmt.Errorf("listing DataProtectionApplications in %s: %w", s.Namespace, err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].GetName() < list.Items[j].GetName() })
	for _, d := range list.Items {
		raw, found, err := unstructured.NestedFieldNoCopy(d.Object, "spec", "nonAdmin")
		if err != nil || !found || raw == nil {
			continue
		}
		data, err := json.Marshal(raw)
		if err != nil {
			return nil, false, fmt.Errorf("DataProtectionApplication %s/%s spec.nonAdmin: %w", d.GetNamespace(), d.GetName(), err)
		}
		out := &Settings{Namespace: d.GetNamespace(), Name: d.GetName(), ResourceVersion: d.GetResourceVersion()}
		if err := json.Unmarshal(data, &out.NonAdmin); err != nil {
			return nil, false, fmt.Errorf("DataProtectionApplication %s/%s spec.nonAdmin: %w", d.GetNamespace(), d.GetName(), err)
		}
		return out, false, nil
	}
	return nil, false, nil
}

// logChange logs the settings read when they differ from the last logged.
func (s *Source) logChange(ctx context.Context) {
	key := "none"
	if s.settings != nil {
		key = s.settings.Namespace + "/" + s.settings.Name + "@" + s.settings.ResourceVersion
	}
	if key == s.logged {
		return
	}
	s.logged = key
	logger := log.FromContext(ctx).WithName("dpa")
	if s.settings == nil {
		logger.Info("no DataProtectionApplication with spec.nonAdmin in the OADP namespace: blueprints, flags and defaults apply", "namespace", s.Namespace)
		return
	}
	logger.Info("non-admin settings read from DataProtectionApplication (blueprint args and flags given on the command line take precedence)",
		"dataProtectionApplication", s.settings.Namespace+"/"+s.settings.Name, "resourceVersion", s.settings.ResourceVersion,
		"fields", strings.Join(s.settings.set(), ","))
}

// Revision returns a string that changes whenever the DPA's spec.nonAdmin
// changes ("none" without a DPA; other edits of the DPA, its status
// included, leave it alone), for reconcilers that re-run when their inputs
// change. Errors: Get's.
func (s *Source) Revision(ctx context.Context) (string, error) {
	settings, err := s.Get(ctx)
	if err != nil || settings == nil {
		return "none", err
	}
	raw, err := json.Marshal(settings.NonAdmin)
	if err != nil {
		return "", err
	}
	h := fnv.New64a()
	_, _ = h.Write(raw)
	return fmt.Sprintf("%s/%x", settings.Name, h.Sum64()), nil
}

// Origins of a resolved setting, as RequireApprovalForBSL and the periods
// report them.
const (
	FromDefault = "default"
)

// RequireApprovalForBSL resolves whether tenants' locations need an admin's
// approval: --require-approval-for-bsl when given, else the DPA's
// requireApprovalForBSL, else false. It returns the value and where it came
// from ("flag --require-approval-for-bsl", the DPA field, or "default").
// Errors: Get's; callers must not treat an error as "no approval needed".
func (s *Source) RequireApprovalForBSL(ctx context.Context) (bool, string, error) {
	if s != nil && s.Flags.RequireApprovalForBSL != nil {
		return *s.Flags.RequireApprovalForBSL, "flag --require-approval-for-bsl", nil
	}
	settings, err := s.Get(ctx)
	if err != nil {
		return false, "", err
	}
	if settings != nil && settings.NonAdmin.RequireApprovalForBSL != nil {
		return *settings.NonAdmin.RequireApprovalForBSL, settings.Field("requireApprovalForBSL"), nil
	}
	return false, FromDefault, nil
}

// Period names a periodic loop's setting.
type Period int

// The periods a DPA may set.
const (
	BackupSyncPeriod Period = iota
	GarbageCollectionPeriod
)

// Period resolves a loop's period: its flag when given, else the DPA's
// field, else def. 0 disables the loop. It returns the period and where it
// came from. On an error reading the DPA it returns def's resolution and
// the error (a loop keeps running on what it knows).
func (s *Source) Period(ctx context.Context, which Period, def time.Duration) (time.Duration, string, error) {
	flagName, field := "backup-sync-period", "backupSyncPeriod"
	var flag *time.Duration
	if s != nil {
		flag = s.Flags.BackupSyncPeriod
	}
	if which == GarbageCollectionPeriod {
		flagName, field = "garbage-collection-period", "garbageCollectionPeriod"
		flag = nil
		if s != nil {
			flag = s.Flags.GarbageCollectionPeriod
		}
	}
	if flag != nil {
		return *flag, "flag --" + flagName, nil
	}
	settings, err := s.Get(ctx)
	if err != nil {
		return def, FromDefault, err
	}
	if settings != nil {
		d := settings.NonAdmin.BackupSyncPeriod
		if which == GarbageCollectionPeriod {
			d = settings.NonAdmin.GarbageCollectionPeriod
		}
		if d != nil {
			return d.Duration, settings.Field(field), nil
		}
	}
	return def, FromDefault, nil
}

// Report logs which source won a setting ("enforceBackupSpec",
// "requireApprovalForBSL", ...) when it differs from the last one reported
// for that setting, so the log tells when a DPA starts or stops applying
// without a line per operation.
func (s *Source) Report(ctx context.Context, setting, source string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	if s.won == nil {
		s.won = map[string]string{}
	}
	changed := s.won[setting] != source
	s.won[setting] = source
	s.mu.Unlock()
	if changed {
		log.FromContext(ctx).WithName("dpa").Info("non-admin setting in force", "setting", setting, "source", source)
	}
}
