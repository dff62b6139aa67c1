// Package itemdigest is nacflow's record of what a backup held when nacflow
// verified it: a digest of every item of its contents tarball, kept in a
// ConfigMap of the OADP namespace (Name), so that a restore from a bucket
// another editor of the namespace writes restores only items nacflow saw
// (docs/security.md, content written by someone else than the requester).
//
// A digest is the SHA-256, cut to 16 bytes, of the item's canonical JSON:
// the item file decoded as Velero decodes it (archive.Unmarshal: the JSON
// into an *unstructured.Unstructured, numbers int64 or float64), encoded as
// Velero's gRPC client hands it to a restore item action (encoding/json of
// the map: keys sorted), decoded by the plugin's server as
// ItemFromBackup, and encoded again. Of computes it from the tarball's
// bytes; OfObject from the ItemFromBackup a plugin receives: both give the
// same digest for the same item (the package tests prove the round trip).
//
// The package imports only the standard library and apimachinery: the
// controller's phases and velero-plugin-nacflow both use it.
package itemdigest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

const (
	// Size is the length of a digest: SHA-256 cut to 16 bytes.
	Size = 16
	// MaxDigests bounds a set: 60,000 digests encode in 960,001 bytes,
	// under a ConfigMap's 1 MiB. A backup with more distinct items gets no
	// set (Manifest.Unrecorded says why).
	MaxDigests = 60000
	// Version is the first byte of an encoded set.
	Version byte = 1

	// DataKey is the binaryData key of the encoded set.
	DataKey = "digests"
	// RestoreAnnotation, on a Velero Restore nacflow made, names the
	// ConfigMap (in the Restore's namespace, the OADP namespace) of the
	// digests of its backup: velero-plugin-nacflow restores only the items
	// whose digest it holds.
	RestoreAnnotation = "nacflow.io/restore-verified-items"
	// BackupAnnotation, on the ConfigMap, is the Velero Backup's name.
	BackupAnnotation = "nacflow.io/verified-backup"
	// BackupUIDAnnotation, on the ConfigMap, is the Velero Backup's UID:
	// a reader uses the set only for that very Backup.
	BackupUIDAnnotation = "nacflow.io/verified-backup-uid"
	// UnrecordedAnnotation, on a ConfigMap without a set, says why no
	// digests were recorded (more than MaxDigests items, contents
	// unreadable).
	UnrecordedAnnotation = "nacflow.io/verified-items-unrecorded"

	// nameSuffix ends the ConfigMap's name.
	nameSuffix = "-verified-items"
	// maxName is a ConfigMap name's longest (a DNS subdomain).
	maxName = 253
)

// Name is the name of the ConfigMap of the digests of Velero Backup
// backup: "<backup>-verified-items"; a name too long for that is cut and
// told apart by 8 hex digits of its SHA-256. It is the one rule the
// writer (VerifyBackupContents) and the readers (the restore pre-check,
// CreateVeleroRestore, velero-plugin-nacflow) name it by.
func Name(backup string) string {
	if len(backup)+len(nameSuffix) <= maxName {
		return backup + nameSuffix
	}
	sum := sha256.Sum256([]byte(backup))
	tag := hex.EncodeToString(sum[:4])
	cut := strings.TrimRight(backup[:maxName-len(nameSuffix)-len(tag)-1], ".-")
	return cut + "-" + tag + nameSuffix
}

// Digest is one item's digest.
type Digest [Size]byte

// String is the digest in hex.
func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// Of returns the digest of an item file of a backup tarball, as
// velero-plugin-nacflow sees the item: decoded as Velero's
// archive.Unmarshal decodes it (an item without kind, or not a JSON object,
// is an error: Velero restores no such item), copied as Velero's
// restoreItem copies it into ItemFromBackup, encoded as Velero's
// restore item action client sends it, decoded as the plugin's server
// receives it, and then OfObject.
func Of(raw []byte) (Digest, error) {
	var fromTarball unstructured.Unstructured
	if err := json.Unmarshal(raw, &fromTarball); err != nil {
		return Digest{}, err
	}
	wire, err := json.Marshal(fromTarball.DeepCopy().UnstructuredContent())
	if err != nil {
		return Digest{}, err
	}
	var received unstructured.Unstructured
	if err := json.Unmarshal(wire, &received); err != nil {
		return Digest{}, err
	}
	return OfObject(received.UnstructuredContent())
}

// OfObject returns the digest of an item as a restore item action receives
// it (ItemFromBackup's content): the SHA-256 of encoding/json's encoding of
// obj (map keys sorted), cut to Size bytes.
func OfObject(obj map[string]any) (Digest, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return Digest{}, err
	}
	sum := sha256.Sum256(raw)
	var d Digest
	copy(d[:], sum[:Size])
	return d, nil
}

// Set is a sorted set of digests. The zero value is the empty set.
type Set struct {
	digests []Digest
}

// ErrTooMany is NewSet's and Decode's error for more than MaxDigests
// digests.
var ErrTooMany = fmt.Errorf("more than %d distinct items", MaxDigests)

// NewSet returns the set of ds (in any order, repeats allowed; ds is
// sorted in place). Errors: ErrTooMany.
func NewSet(ds []Digest) (Set, error) {
	slices.SortFunc(ds, compare)
	ds = slices.Compact(ds)
	if len(ds) > MaxDigests {
		return Set{}, ErrTooMany
	}
	return Set{digests: ds}, nil
}

func compare(a, b Digest) int { return bytes.Compare(a[:], b[:]) }

// Len is the number of digests.
func (s Set) Len() int { return len(s.digests) }

// Contains reports whether d is in s (a binary search).
func (s Set) Contains(d Digest) bool {
	_, found := slices.BinarySearchFunc(s.digests, d, compare)
	return found
}

// Encode returns Version and the digests in order.
func (s Set) Encode() []byte {
	out := make([]byte, 0, 1+len(s.digests)*Size)
	out = append(out, Version)
	for _, d := range s.digests {
		out = append(out, d[:]...)
	}
	return out
}

// Decode reads what Encode wrote. Errors: another version, a length that
// is not whole digests, more than MaxDigests (ErrTooMany), digests out of
// order or repeated.
func Decode(b []byte) (Set, error) {
	if len(b) == 0 {
		return Set{}, errors.New("an empty digest set (no version byte)")
	}
	if b[0] != Version {
		return Set{}, fmt.Errorf("digest set version %d (this nacflow reads version %d)", b[0], Version)
	}
	b = b[1:]
	if len(b)%Size != 0 {
		return Set{}, fmt.Errorf("a digest set of %d bytes is not whole %d-byte digests", len(b), Size)
	}
	n := len(b) / Size
	if n > MaxDigests {
		return Set{}, ErrTooMany
	}
	ds := make([]Digest, n)
	for i := range ds {
		copy(ds[i][:], b[i*Size:])
		if i > 0 && compare(ds[i-1], ds[i]) >= 0 {
			return Set{}, fmt.Errorf("digest %d of the set is not above the one before it", i)
		}
	}
	return Set{digests: ds}, nil
}

// Manifest is what a verified-items ConfigMap records of one Velero Backup.
type Manifest struct {
	// Backup and BackupUID are the Velero Backup's name and UID.
	Backup    string
	BackupUID types.UID
	// Set is the digests (empty when Unrecorded).
	Set Set
	// Unrecorded, when not empty, says why no digests were recorded.
	Unrecorded string
}

// ConfigMap returns the immutable ConfigMap of m with meta (its name
// should be Name(m.Backup); its annotations are added to).
func (m Manifest) ConfigMap(meta metav1.ObjectMeta) *corev1.ConfigMap {
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[BackupAnnotation] = m.Backup
	meta.Annotations[BackupUIDAnnotation] = string(m.BackupUID)
	immutable := true
	if m.Unrecorded != "" {
		meta.Annotations[UnrecordedAnnotation] = m.Unrecorded
		return &corev1.ConfigMap{ObjectMeta: meta, Immutable: &immutable}
	}
	cm := &corev1.ConfigMap{ObjectMeta: meta, Immutable: &immutable}
	cm.BinaryData = map[string][]byte{DataKey: m.Set.Encode()}
	return cm
}

// FromConfigMap reads the Manifest of cm. Errors: no backup UID, or
// neither a set that decodes nor a reason why none was recorded.
func FromConfigMap(cm *corev1.ConfigMap) (Manifest, error) {
	m := Manifest{Backup: cm.Annotations[BackupAnnotation], BackupUID: types.UID(cm.Annotations[BackupUIDAnnotation]),
		Unrecorded: cm.Annotations[UnrecordedAnnotation]}
	if m.BackupUID == "" {
		return Manifest{}, fmt.Errorf("ConfigMap %s/%s has no annotation %s", cm.Namespace, cm.Name, BackupUIDAnnotation)
	}
	if m.Unrecorded != "" {
		return m, nil
	}
	raw, ok := cm.BinaryData[DataKey]
	if !ok {
		return Manifest{}, fmt.Errorf("ConfigMap %s/%s has no binaryData %s", cm.Namespace, cm.Name, DataKey)
	}
	set, err := Decode(raw)
	if err != nil {
		return Manifest{}, fmt.Errorf("ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	m.Set = set
	return m, nil
}
