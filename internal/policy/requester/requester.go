// Package requester records who asked for a NAC object — the user as the
// API server authenticated them — on the object, where the tenant can
// neither set nor change it, so that a later decision (what a restore may
// create) can be held to exactly what that person may do.
//
// The record is written by a mutating admission webhook (Handler) on the
// API server's path of every create and update: on create it replaces
// whatever the request carried with the requesting user (name, UID, groups,
// extra) and the time, signed with a key only nacflow holds; on update it
// puts back the values the object had. The signature is what lets nacflow
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
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

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

// Annotations returns the two annotations that record user as the one who
// asked, at at, for obj of kind (obj's name, or its generateName when it
// has no name yet). Errors: JSON encoding's (none for a UserInfo).
func (s *Signer) Annotations(kind string, obj metav1.Object, user authenticationv1.UserInfo, at time.Time) (map[string]string, error) {
	b, err := json.Marshal(Record{User: user, At: metav1.NewTime(at.UTC().Truncate(time.Second))})
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
// for the object; on update it puts back the record the object had (none
// when it had none), whatever the update says. It never refuses: what it
// cannot decode it answers with an error (400), which the API server treats
// as its failure policy says.
type Handler struct {
	// Signer signs the records.
	Signer *Signer
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Handle implements admission.Handler.
func (h *Handler) Handle(_ context.Context, req admission.Request) admission.Response {
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
		var err error
		if want, err = h.Signer.Annotations(req.Kind.Kind, obj, req.UserInfo, now()); err != nil {
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
