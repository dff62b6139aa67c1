package v1alpha1

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"unicode"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MaxPrefixBytes is the longest prefix in object storage a tenant location
// may end up with, in bytes, after it was forced under its namespace.
const MaxPrefixBytes = 512

// Storage is where a BackupStorageLocation keeps its data: the store
// (provider and endpoint), the bucket and the prefix inside it. Two
// locations share storage when their store and bucket are equal and one
// prefix is equal to, inside or around the other; no prefix is the whole
// bucket (Velero requires the root of a location to hold only its own
// folders: a location inside another one makes that one Unavailable with
// "Backup store contains invalid top-level directories").
type Storage struct {
	// Provider is the object store plugin, without the "velero.io/" prefix,
	// lower-case ("aws", "gcp", "azure", ...).
	Provider string
	// Endpoint identifies the store within the provider: config s3Url for
	// S3-compatible stores (scheme and host lower-cased, default port and
	// trailing "/" dropped), config storageAccount for Azure; "" for the
	// provider's public service.
	Endpoint string
	// Bucket is objectStorage.bucket.
	Bucket string
	// Prefix is objectStorage.prefix without leading or trailing "/"; "" is
	// the whole bucket.
	Prefix string
}

// StorageOf returns where spec keeps its data (the zero Storage for a spec
// without objectStorage).
func StorageOf(spec *velerov1.BackupStorageLocationSpec) Storage {
	if spec == nil || spec.ObjectStorage == nil {
		return Storage{}
	}
	s := Storage{
		Provider: strings.ToLower(strings.TrimPrefix(spec.Provider, "velero.io/")),
		Bucket:   spec.ObjectStorage.Bucket,
		Prefix:   strings.Trim(spec.ObjectStorage.Prefix, "/"),
	}
	switch {
	case spec.Config["s3Url"] != "":
		s.Endpoint = normalizeEndpoint(spec.Config["s3Url"])
	case spec.Config["storageAccount"] != "":
		s.Endpoint = "storageAccount=" + strings.ToLower(spec.Config["storageAccount"])
	}
	return s
}

// normalizeEndpoint returns raw with scheme and host lower-cased, the
// scheme's default port and any trailing "/" dropped, so that spellings of
// the same URL compare equal. A value that is no URL is only lower-cased.
func normalizeEndpoint(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" {
		return strings.TrimRight(strings.ToLower(strings.TrimSpace(raw)), "/")
	}
	scheme, host := strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	switch {
	case scheme == "http" && strings.HasSuffix(host, ":80"):
		host = strings.TrimSuffix(host, ":80")
	case scheme == "https" && strings.HasSuffix(host, ":443"):
		host = strings.TrimSuffix(host, ":443")
	}
	return scheme + "://" + host + strings.TrimRight(u.EscapedPath(), "/")
}

// SameBucket reports whether s and o are the same bucket of the same store.
func (s Storage) SameBucket(o Storage) bool {
	return s.Provider == o.Provider && s.Endpoint == o.Endpoint && s.Bucket == o.Bucket
}

// Overlaps reports whether s and o share storage: the same bucket of the same
// store, and one prefix equal to or inside the other (by whole path
// segments: "a" holds "a/b", not "ab").
func (s Storage) Overlaps(o Storage) bool {
	if !s.SameBucket(o) {
		return false
	}
	return within(s.Prefix, o.Prefix) || within(o.Prefix, s.Prefix)
}

// within reports whether prefix p is equal to or inside prefix outer.
func within(p, outer string) bool {
	return outer == "" || p == outer || strings.HasPrefix(p, outer+"/")
}

// String returns "provider:endpoint/bucket/prefix" for messages.
func (s Storage) String() string {
	where := s.Bucket
	if s.Endpoint != "" {
		where = s.Endpoint + " bucket " + s.Bucket
	}
	if s.Prefix == "" {
		return fmt.Sprintf("%s %s (whole bucket)", s.Provider, where)
	}
	return fmt.Sprintf("%s %s prefix %s", s.Provider, where, s.Prefix)
}

// CheckPrefix returns an error naming the rule prefix breaks, nil when it is
// a clean relative path: not empty, at most MaxPrefixBytes bytes, no
// leading, trailing or doubled "/", no "." or ".." segment, no backslash, no
// control or space character. Stores and plugins that map keys to paths (and
// Velero's repository paths) would resolve anything else differently than
// the overlap check of Storage does. field names the field for the message.
func CheckPrefix(field, prefix string) error {
	switch {
	case prefix == "":
		return fmt.Errorf("%s must not be empty", field)
	case len(prefix) > MaxPrefixBytes:
		return fmt.Errorf("%s is %d bytes long, at most %d are allowed", field, len(prefix), MaxPrefixBytes)
	case strings.ContainsRune(prefix, '\\'):
		return fmt.Errorf("%s %q must not contain a backslash", field, prefix)
	}
	for _, r := range prefix {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			return fmt.Errorf("%s %q must not contain control or space characters", field, prefix)
		}
	}
	for _, seg := range strings.Split(prefix, "/") {
		switch seg {
		case "":
			return fmt.Errorf("%s %q must be a clean relative path: no leading, trailing or doubled \"/\"", field, prefix)
		case ".", "..":
			return fmt.Errorf("%s %q must be a clean relative path: no %q segment", field, prefix, seg)
		}
	}
	return nil
}

// CheckBucket returns an error naming the rule bucket breaks, nil for a
// plain bucket name: 1 to 222 bytes of letters, digits, '.', '-' and '_',
// starting and ending with a letter or digit (the union of what S3, GCS and
// Azure accept). A "/" would move the location into another bucket's
// folder, out of reach of the overlap check.
func CheckBucket(field, bucket string) error {
	if bucket == "" || len(bucket) > 222 {
		return fmt.Errorf("%s must be 1 to 222 bytes long", field)
	}
	for i, r := range bucket {
		alnum := r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r))
		if alnum || ((r == '.' || r == '-' || r == '_') && i > 0 && i < len(bucket)-1) {
			continue
		}
		return fmt.Errorf("%s %q must be a bucket name: letters, digits, '.', '-' and '_', starting and ending with a letter or digit", field, bucket)
	}
	return nil
}

// StorageHolder is a BackupStorageLocation in the OADP namespace that holds
// storage a tenant location must stay out of.
type StorageHolder struct {
	// Description names the location for messages: "BackupStorageLocation
	// openshift-adp/default (admin)" or "NonAdminBackupStorageLocation
	// team-a/bucket".
	Description string
	// Admin is true for a location nacflow did not make for a tenant.
	Admin bool
	// Storage is where the location keeps its data.
	Storage Storage
}

// StorageHolders lists the BackupStorageLocations of oadpNamespace whose
// storage self (a NonAdminBackupStorageLocation running operation nacuuid)
// must not overlap, sorted by description: every admin location; the
// locations nacflow made for other NonAdminBackupStorageLocations created
// before self (older first wins: of two tenants asking for the same storage
// the later one is refused, so a refusal never moves to the one already in
// use); and orphans nacflow made whose location is gone. self's own
// location is left out. Errors are the reader's.
func StorageHolders(ctx context.Context, r client.Reader, oadpNamespace string, self *NonAdminBackupStorageLocation, nacuuid string) ([]StorageHolder, error) {
	list := &velerov1.BackupStorageLocationList{}
	if err := r.List(ctx, list, client.InNamespace(oadpNamespace)); err != nil {
		return nil, fmt.Errorf("listing BackupStorageLocations in %s: %w", oadpNamespace, err)
	}
	var out []StorageHolder
	for i := range list.Items {
		bsl := &list.Items[i]
		id, nac := bsl.Labels[NabslOriginNACUUIDLabel]
		if nac && id == nacuuid {
			continue
		}
		h := StorageHolder{Storage: StorageOf(&bsl.Spec),
			Description: fmt.Sprintf("BackupStorageLocation %s/%s (admin)", bsl.Namespace, bsl.Name)}
		if nac {
			ns, name := bsl.Annotations[NabslOriginNamespaceAnnotation], bsl.Annotations[NabslOriginNameAnnotation]
			owner := &NonAdminBackupStorageLocation{}
			err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, owner)
			switch {
			case client.IgnoreNotFound(err) != nil:
				return nil, fmt.Errorf("reading NonAdminBackupStorageLocation %s/%s: %w", ns, name, err)
			case err == nil && !olderThan(owner, self):
				continue
			}
			h.Description = fmt.Sprintf("NonAdminBackupStorageLocation %s/%s", ns, name)
		} else {
			h.Admin = true
		}
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Description < out[j].Description })
	return out, nil
}

// olderThan reports whether a was created before b (ties: by namespace, then
// name), so that every pair of locations agrees on which came first.
func olderThan(a, b *NonAdminBackupStorageLocation) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}
