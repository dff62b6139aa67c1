// Package requester records who asked for a NAC object — the user as the
// API server authenticated them — on the object, where the tenant can
// neither set nor change it, so that a later decision (what a restore may
// create) can be held to exactly what that person may do.
//
// The record is written by a mutating admission webhook (Handler) on the
// API server's path of every create and update: on create it replaces
// whatever the request carried with the requesting user (name, UID, groups,
// extra), the time and what the request was asked with — the digest of
// spec.restoreSpec and of the content of the resource-modifier ConfigMap it
// names, as they were at that moment — signed with a key only nacflow
// holds; on update it puts back the values the object had, and refuses a
// change of spec.restoreSpec. A restore is then decided once, on that
// snapshot: what others change later (the spec, the ConfigMap) is refused
// at use, never acted on. The signature is what lets nacflow
// tell a record its webhook wrote from one a tenant wrote while the webhook
// was not installed (an install without webhooks, OADP's image swap); the
// time, checked against the object's creationTimestamp, keeps a record
// copied from an earlier object of the same name from passing.
package requester

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// Kinds whose requests carry more than who asked.
const restoreKind = "NonAdminRestore"

const (
	// Annotation holds the record: the JSON of Record.
	Annotation = v1alpha1.RequesterAnnotation
	// SignatureAnnotation holds the record's signature: base64 of the
	// HMAC-SHA256, under nacflow's key, of the object's kind, namespace,
	// name (or generateName) and the record's JSON.
	SignatureAnnotation = v1alpha1.RequesterSignatureAnnotation
)

// MaxSkew is how far apart the record's time and the object's
// creationTimestamp may be (the webhook's clock and the API server's, the
// webhook's round trip): 2 minutes. A record copied from an object made
// earlier than that does not verify.
const MaxSkew = 2 * time.Minute

// MinKeyLength is the shortest signing key NewSigner accepts, in bytes.
const MinKeyLength = 32

// Record is who asked for a NAC object and when.
type Record struct {
	// User is the requesting user as the API server authenticated them
	// (the admission request's userInfo): username, UID, groups, extra.
	User authenticationv1.UserInfo `json:"user"`
	// At is when the webhook admitted the create, to the second (UTC).
	At metav1.Time `json:"at"`
	// Spec is, for a NonAdminRestore, v1alpha1.SpecHash of
	// spec.restoreSpec as admitted (64 hex characters). Empty on records
	// written before nacflow recorded it: such a record vouches for no
	// spec, and its restore is treated as having no requester.
	Spec string `json:"spec,omitempty"`
	// Modifiers is, for a NonAdminRestore whose spec.restoreSpec names a
	// resource-modifier ConfigMap, that ConfigMap as it was at admission.
	Modifiers *ConfigMapRecord `json:"modifiers,omitempty"`
}

// ConfigMapRecord is a ConfigMap of the object's namespace as it was when
// the object was admitted.
type ConfigMapRecord struct {
	// Name of the ConfigMap.
	Name string `json:"name"`
	// UID of the ConfigMap; empty when it did not exist.
	UID types.UID `json:"uid,omitempty"`
	// Digest is ConfigMapDigest of its content; empty when it did not
	// exist.
	Digest string `json:"digest,omitempty"`
}

// ConfigMapDigest returns "sha256:" and the hex SHA-256 of cm's content
// (data and binaryData, JSON-encoded with sorted keys): what a restore's
// resource modifiers are, whatever the ConfigMap's metadata says.
func ConfigMapDigest(cm *corev1.ConfigMap) string {
	b, _ := json.Marshal(struct {
		Data       map[string]string `json:"data,omitempty"`
		BinaryData map[string][]byte `json:"binaryData,omitempty"`
	}{cm.Data, cm.BinaryData})
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Errors of Verify.
var (
	// ErrNotRecorded: the object carries no record (made before the
	// webhook was installed, or without it).
	ErrNotRecorded = errors.New("no requester is recorded")
	// ErrForged: the object carries a record nacflow's webhook did not
	// write for it (no or a wrong signature, another object's record, or a
	// record of another time).
	ErrForged = errors.New("the requester record was not written by nacflow's admission webhook for this object")
)

// Signer signs and verifies records with nacflow's key.
type Signer struct {
	key []byte
}

// NewSigner returns a Signer using key (at least MinKeyLength bytes, kept
// in a Secret of the OADP namespace). Errors: a shorter key.
func NewSigner(key []byte) (*Signer, error) {
	if len(key) < MinKeyLength {
		return nil, fmt.Errorf("the requester signing key has %d bytes, at least %d are needed", len(key), MinKeyLength)
	}
	return &Signer{key: append([]byte(nil), key...)}, nil
}

// identity is what a signature binds a record to: the kind and namespace of
// the object and its name, or its generateName when the API server is still
// to choose the name (admission comes before that).
func identity(kind string, obj metav1.Object) string {
	name := "name:" + obj.GetName()
	if obj.GetName() == "" {
		name = "generateName:" + obj.GetGenerateName()
	}
	return kind + "\x00" + obj.GetNamespace() + "\x00" + name
}

// sign returns the signature of record (its JSON) on obj of kind.
func (s *Signer) sign(kind string, obj metav1.Object, record string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(identity(kind, obj)))
	m.Write([]byte{0})
	m.Write([]byte(record))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// Annotations returns the two annotations that record r (its time truncated
// to the second, in UTC) for obj of kind (obj's name, or its generateName
// when it has no name yet). Errors: JSON encoding's (none for a Record).
func (s *Signer) Annotations(kind string, obj metav1.Object, r Record) (map[string]string, error) {
	r.At = metav1.NewTime(r.At.UTC().Truncate(time.Second))
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encoding the requester record: %w", err)
	}
	return map[string]string{Annotation: string(b), SignatureAnnotation: s.sign(kind, obj, string(b))}, nil
}

// Verify returns who asked for obj, an object of kind made through the API
// server: the record of its annotations when nacflow's webhook wrote it for
// this object. Errors: ErrNotRecorded when there is no record; ErrForged
// (wrapped, with why) when the signature does not match the record and the
// object's kind, namespace and name (or the generateName its name was made
// from), or when the record's time is more than MaxSkew from the object's
// creationTimestamp.
func (s *Signer) Verify(kind string, obj metav1.Object) (Record, error) {
	a := obj.GetAnnotations()
	raw, sig := a[Annotation], a[SignatureAnnotation]
	if raw == "" && sig == "" {
		return Record{}, ErrNotRecorded
	}
	ok := hmac.Equal([]byte(sig), []byte(s.sign(kind, obj, raw)))
	if !ok && obj.GetGenerateName() != "" && strings.HasPrefix(obj.GetName(), obj.GetGenerateName()) {
		// Signed at admission, before the API server chose the name.
		unnamed := &metav1.ObjectMeta{Namespace: obj.GetNamespace(), GenerateName: obj.GetGenerateName()}
		ok = hmac.Equal([]byte(sig), []byte(s.sign(kind, unnamed, raw)))
	}
	if !ok {
		return Record{}, fmt.Errorf("%w: its signature does not match", ErrForged)
	}
	var r Record
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return Record{}, fmt.Errorf("%w: %v", ErrForged, err)
	}
	created := obj.GetCreationTimestamp().Time
	if skew := created.Sub(r.At.Time).Abs(); skew > MaxSkew {
		return Record{}, fmt.Errorf("%w: it was written at %s, %s from the object's creation at %s",
			ErrForged, r.At.UTC().Format(time.RFC3339), skew.Round(time.Second), created.UTC().Format(time.RFC3339))
	}
	return r, nil
}

// Handler is the mutating admission webhook that writes the record
// (controller-runtime's admission.Handler; served for the NAC kinds whose
// decisions depend on who asked, on create and update). On create it
// replaces the request's record, if any, with the requesting user's, signed
// for the object; for a NonAdminRestore the record also holds the digest of
// spec.restoreSpec and the resource-modifier ConfigMap the spec names, read
// from the API server at that moment. On update it puts back the record the
// object had (none when it had none), whatever the update says, and refuses
// an update of a NonAdminRestore that changes spec.restoreSpec
// (v1alpha1.SpecHash: zero values another client writes are no change).
// What it cannot decode or read it answers with an error (400 or 500),
// which the API server treats as its failure policy says.
type Handler struct {
	// Signer signs the records.
	Signer *Signer
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// ConfigMaps reads a ConfigMap from the API server (not a cache: the
	// record is of what exists at admission); a missing one is an error
	// for which apierrors.IsNotFound holds. nil: no ConfigMap is recorded,
	// and a restore naming resource modifiers is refused at use.
	ConfigMaps func(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
}

// restoreSpecOf decodes the restoreSpec of a NonAdminRestore's JSON.
func restoreSpecOf(raw []byte) (*velerov1.RestoreSpec, error) {
	var nar struct {
		Spec struct {
			RestoreSpec *velerov1.RestoreSpec `json:"restoreSpec"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(raw, &nar); err != nil {
		return nil, err
	}
	return nar.Spec.RestoreSpec, nil
}

// snapshot fills r with what the NonAdminRestore of raw in namespace ns was
// asked with: its spec's digest and its resource-modifier ConfigMap.
// Errors: decoding's, and the ConfigMap's read other than not found.
func (h *Handler) snapshot(ctx context.Context, ns string, raw []byte, r *Record) error {
	spec, err := restoreSpecOf(raw)
	if err != nil {
		return fmt.Errorf("decoding spec.restoreSpec: %w", err)
	}
	r.Spec = v1alpha1.SpecHash(spec)
	if spec == nil || spec.ResourceModifier == nil || spec.ResourceModifier.Name == "" {
		return nil
	}
	r.Modifiers = &ConfigMapRecord{Name: spec.ResourceModifier.Name}
	if h.ConfigMaps == nil || !strings.EqualFold(spec.ResourceModifier.Kind, "configmap") {
		return nil
	}
	cm, err := h.ConfigMaps(ctx, ns, spec.ResourceModifier.Name)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading ConfigMap %s/%s, the restore's resource modifiers: %w", ns, spec.ResourceModifier.Name, err)
	}
	r.Modifiers.UID, r.Modifiers.Digest = cm.UID, ConfigMapDigest(cm)
	return nil
}

// Handle implements admission.Handler.
func (h *Handler) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(req.Object.Raw); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the %s: %w", req.Kind.Kind, err))
	}
	want := map[string]string{}
	switch req.Operation {
	case admissionv1.Create:
		now := time.Now
		if h.Now != nil {
			now = h.Now
		}
		r := Record{User: req.UserInfo, At: metav1.NewTime(now())}
		if req.Kind.Kind == restoreKind {
			if err := h.snapshot(ctx, req.Namespace, req.Object.Raw, &r); err != nil {
				return admission.Errored(http.StatusInternalServerError, err)
			}
		}
		var err error
		if want, err = h.Signer.Annotations(req.Kind.Kind, obj, r); err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
	case admissionv1.Update:
		old := &unstructured.Unstructured{}
		if err := old.UnmarshalJSON(req.OldObject.Raw); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the %s as it was: %w", req.Kind.Kind, err))
		}
		for _, k := range []string{Annotation, SignatureAnnotation} {
			if v, ok := old.GetAnnotations()[k]; ok {
				want[k] = v
			}
		}
		if req.Kind.Kind == restoreKind {
			was, err1 := restoreSpecOf(req.OldObject.Raw)
			is, err2 := restoreSpecOf(req.Object.Raw)
			if err := errors.Join(err1, err2); err != nil {
				return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding spec.restoreSpec: %w", err))
			}
			if v1alpha1.SpecHash(was) != v1alpha1.SpecHash(is) {
				return admission.Denied("spec.restoreSpec is immutable: a restore is decided on what was asked when the NonAdminRestore was created; create a new NonAdminRestore instead")
			}
		}
	}
	ann := obj.GetAnnotations()
	changed := false
	for _, k := range []string{Annotation, SignatureAnnotation} {
		v, ok := want[k]
		if got, had := ann[k]; had == ok && got == v {
			continue
		}
		changed = true
		if ann == nil {
			ann = map[string]string{}
		}
		if ok {
			ann[k] = v
		} else {
			delete(ann, k)
		}
	}
	if !changed {
		return admission.Allowed("")
	}
	obj.SetAnnotations(ann)
	patched, err := obj.MarshalJSON()
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, patched)
}
