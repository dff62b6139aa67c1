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
	"reflect"
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
	// NonAdmin is its spec.nonAdmin, each field decoded on its own: a field
	// that does not decode is left unset here and reported in Invalid.
	NonAdmin NonAdmin
	// Invalid maps the JSON name of each field of spec.nonAdmin that does not
	// decode to its error; the settings that depend on one fail rather than
	// fall back (an admin's policy is never dropped silently).
	Invalid map[string]error
}

// Field returns "DataProtectionApplication <ns>/<name> spec.nonAdmin.<field>",
// how messages name the source of a setting.
func (s *Settings) Field(field string) string {
	return fmt.Sprintf("DataProtectionApplication %s/%s spec.nonAdmin.%s", s.Namespace, s.Name, field)
}

// invalid returns the error of field, nil when it decoded.
func (s *Settings) invalid(field string) error {
	if err := s.Invalid[field]; err != nil {
		return fmt.Errorf("%s: %w", s.Field(field), err)
	}
	return nil
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

// Default ages of what Source read (see Source.MaxAge), and the shortest
// period a DPA may give a periodic loop.
const (
	DefaultMaxAge       = time.Second
	DefaultAbsentMaxAge = 30 * time.Second
	MinPeriod           = 10 * time.Second
)

// Source reads the DPA settings of the OADP namespace from the API server
// (DPAs are few and not cached by the manager), at most once per MaxAge, and
// resolves each setting's precedence. A nil *Source has no DPA and no flags.
// It is safe for concurrent use: one read at a time, and a failed read is
// reused for MaxAge too, so that an unhealthy API server is not asked once
// per reconcile.
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

	mu          sync.Mutex
	readAt      time.Time
	absent      bool
	settings    *Settings
	readErr     error
	logged      string
	won         map[string]string
	lastPeriods map[Period]time.Duration
}

// logger is the Source's own: what it logs is the admin's, never subject to
// one object's log level (NonAdminBackup spec.logLevel).
var logger = log.Log.WithName("dpa")

// Get returns the settings of the DPA in the OADP namespace that has
// spec.nonAdmin (the first by name when several do, as OADP NAC picks the
// first), or nil when there is none or the DPA CRD is not installed.
// Errors: the API server's (retryable). A change of the DPA read is logged.
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
	if s.absent && s.readErr == nil {
		maxAge = s.AbsentMaxAge
		if maxAge <= 0 {
			maxAge = DefaultAbsentMaxAge
		}
	}
	if !s.readAt.IsZero() && time.Since(s.readAt) < maxAge {
		return s.settings, s.readErr
	}
	settings, absent, err := s.read(ctx)
	s.readAt, s.readErr = time.Now(), err
	if err != nil {
		return nil, err
	}
	s.absent, s.settings = absent, settings
	s.logChange()
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
		out := &Settings{Namespace: d.GetNamespace(), Name: d.GetName(), ResourceVersion: d.GetResourceVersion(), Invalid: map[string]error{}}
		fields, ok := raw.(map[string]any)
		if !ok {
			out.Invalid["*"] = fmt.Errorf("spec.nonAdmin is not an object")
			return out, false, nil
		}
		// Field by field: one that does not decode spoils only itself.
		target := reflect.ValueOf(&out.NonAdmin).Elem()
		for name, value := range fields {
			f, known := fieldByJSONName(target, name)
			if !known {
				continue // OADP's other fields (enable, ...) or newer ones
			}
			data, err := json.Marshal(value)
			if err == nil {
				err = json.Unmarshal(data, f.Addr().Interface())
			}
			if err != nil {
				out.Invalid[name] = err
				f.Set(reflect.Zero(f.Type()))
			}
		}
		return out, false, nil
	}
	return nil, false, nil
}

// fieldByJSONName returns the field of struct v whose JSON name is name.
func fieldByJSONName(v reflect.Value, name string) (reflect.Value, bool) {
	for i := range v.NumField() {
		tag, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		if tag == name {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// logChange logs the settings read when they differ from the last logged,
// and forgets which source won each setting (so each is logged again).
func (s *Source) logChange() {
	key := "none"
	if s.settings != nil {
		key = s.settings.Namespace + "/" + s.settings.Name + "@" + s.settings.ResourceVersion
	}
	if key == s.logged {
		return
	}
	s.logged, s.won = key, nil
	if s.settings == nil {
		logger.Info("no DataProtectionApplication with spec.nonAdmin in the OADP namespace: blueprints, flags and defaults apply", "namespace", s.Namespace)
		return
	}
	logger.Info("non-admin settings read from DataProtectionApplication (blueprint args and flags given on the command line take precedence)",
		"dataProtectionApplication", s.settings.Namespace+"/"+s.settings.Name, "resourceVersion", s.settings.ResourceVersion,
		"fields", strings.Join(s.settings.set(), ","))
	for field, err := range s.settings.Invalid {
		logger.Error(err, "DataProtectionApplication field does not decode: what depends on it fails until it is fixed", "field", s.settings.Field(field))
	}
}

// Revision returns a string that changes whenever the DPA settings a
// storage location depends on change — enforceBSLSpec and
// requireApprovalForBSL — ("none" without a DPA; other edits of the DPA
// leave it alone), for reconcilers that re-run when their inputs change.
// Errors: Get's.
func (s *Source) Revision(ctx context.Context) (string, error) {
	settings, err := s.Get(ctx)
	if err != nil || settings == nil {
		return "none", err
	}
	raw, err := json.Marshal(NonAdmin{EnforceBSLSpec: settings.NonAdmin.EnforceBSLSpec, RequireApprovalForBSL: settings.NonAdmin.RequireApprovalForBSL})
	if err != nil {
		return "", err
	}
	h := fnv.New64a()
	_, _ = h.Write(raw)
	for _, field := range []string{"enforceBSLSpec", "requireApprovalForBSL"} {
		if settings.Invalid[field] != nil {
			_, _ = h.Write([]byte(field + " invalid"))
		}
	}
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
// from ("flag --require-approval-for-bsl", the DPA field, or FromDefault).
// Errors: Get's, and a requireApprovalForBSL that does not decode; callers
// must not treat an error as "no approval needed".
func (s *Source) RequireApprovalForBSL(ctx context.Context) (bool, string, error) {
	if s != nil && s.Flags.RequireApprovalForBSL != nil {
		return *s.Flags.RequireApprovalForBSL, "flag --require-approval-for-bsl", nil
	}
	settings, err := s.Get(ctx)
	if err != nil {
		return false, "", err
	}
	if settings != nil {
		if err := settings.invalid("requireApprovalForBSL"); err != nil {
			return false, "", err
		}
		if settings.NonAdmin.RequireApprovalForBSL != nil {
			return *settings.NonAdmin.RequireApprovalForBSL, settings.Field("requireApprovalForBSL"), nil
		}
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
// field (at least MinPeriod unless 0), else def. 0 disables the loop. It
// returns the period and where it came from. When the DPA cannot be read,
// or its field does not decode, it returns the period it resolved last
// (def before any) with the error: a loop keeps running on what it knows,
// and a loop the DPA disabled stays disabled.
func (s *Source) Period(ctx context.Context, which Period, def time.Duration) (time.Duration, string, error) {
	flagName, field := "backup-sync-period", "backupSyncPeriod"
	if which == GarbageCollectionPeriod {
		flagName, field = "garbage-collection-period", "garbageCollectionPeriod"
	}
	var flag *time.Duration
	if s != nil {
		flag = map[Period]*time.Duration{BackupSyncPeriod: s.Flags.BackupSyncPeriod, GarbageCollectionPeriod: s.Flags.GarbageCollectionPeriod}[which]
	}
	if flag != nil {
		return *flag, "flag --" + flagName, nil
	}
	settings, err := s.Get(ctx)
	if err == nil && settings != nil {
		err = settings.invalid(field)
	}
	if err != nil {
		return s.lastPeriod(which, def), "the last period resolved", err
	}
	d, source := def, FromDefault
	if settings != nil {
		p := map[Period]*metav1.Duration{BackupSyncPeriod: settings.NonAdmin.BackupSyncPeriod,
			GarbageCollectionPeriod: settings.NonAdmin.GarbageCollectionPeriod}[which]
		if p != nil {
			d, source = p.Duration, settings.Field(field)
			if d > 0 && d < MinPeriod {
				d, source = MinPeriod, source+" (raised to the minimum, "+MinPeriod.String()+")"
			}
		}
	}
	if s != nil {
		s.mu.Lock()
		if s.lastPeriods == nil {
			s.lastPeriods = map[Period]time.Duration{}
		}
		s.lastPeriods[which] = d
		s.mu.Unlock()
	}
	return d, source, nil
}

// lastPeriod returns the period resolved last for which, def before any.
func (s *Source) lastPeriod(which Period, def time.Duration) time.Duration {
	if s == nil {
		return def
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.lastPeriods[which]; ok {
		return d
	}
	return def
}

// Report logs which source won a setting ("enforceBackupSpec",
// "requireApprovalForBSL", ...) the first time that source wins it since
// the DPA read last changed, so the log tells when a DPA starts or stops
// applying without a line per operation (per-tenant blueprints may make
// several sources win the same setting: each is logged once).
func (s *Source) Report(_ context.Context, setting, source string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	if s.won == nil {
		s.won = map[string]string{}
	}
	key := setting + "\x00" + source
	_, seen := s.won[key]
	s.won[key] = source
	s.mu.Unlock()
	if !seen {
		logger.Info("non-admin setting in force", "setting", setting, "source", source)
	}
}
