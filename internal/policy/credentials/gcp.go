package credentials

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// gcpFields are the fields of a Google service account key file (as the
// Cloud console writes it; golang.org/x/oauth2/google credentialsFile reads
// the ones it needs). Every one is a string.
var gcpFields = map[string]bool{
	"type": true, "project_id": true, "private_key_id": true, "private_key": true, "client_email": true, "client_id": true,
	"auth_uri": true, "token_uri": true, "auth_provider_x509_cert_url": true, "client_x509_cert_url": true, "universe_domain": true,
}

// gcpTokenURIs are the token endpoints Google's key files name: the OAuth
// library posts the signed assertion to token_uri, so any other value would
// be a request from the Velero server to an address the tenant chose.
var gcpTokenURIs = map[string]bool{"https://oauth2.googleapis.com/token": true, "https://accounts.google.com/o/oauth2/token": true}

// gcpKeys are the fields of a key file: gcpFields are accepted; why says
// what Google's auth libraries do with the fields that matter.
var gcpKeys = keyRules{
	allowed:   gcpFields,
	accepted:  "only service account key files (type service_account) are accepted",
	otherwise: "it is not a field of a service account key",
	why:       gcpWhy,
}

var gcpWhy = map[string]string{
	"credential_source":                 "the auth library reads a file, a URL or runs an executable in the Velero server to get a token",
	"service_account_impersonation_url": "the auth library impersonates another service account",
	"token_url":                         "the auth library posts to a URL the file chooses",
	"audience":                          "it configures workload identity federation",
	"subject_token_type":                "it configures workload identity federation",
	"source_credentials":                "the auth library impersonates a service account with other credentials",
	"refresh_token":                     "it is a person's OAuth refresh token",
	"delegates":                         "it configures impersonation",
	"quota_project_id":                  "it bills another project",
	"workforce_pool_user_project":       "it configures workforce identity federation",
}

// CheckGCP returns nil when data is a Google service account key file and
// nothing more, as velero-plugin-for-gcp reads it (object_store.go Init:
// google.CredentialsFromJSON, then JWTConfigFromJSON for signed URLs). The
// rules:
//
//   - one JSON object of strings; no key twice, whatever its case
//     (encoding/json matches struct fields case-insensitively, the last
//     wins), every key spelt exactly as in gcpFields;
//   - type is "service_account". Refused: "external_account" (workload
//     identity federation: credential_source reads files, URLs or runs an
//     executable in the Velero server), "impersonated_service_account",
//     "external_account_authorized_user", "gdch_service_account", and
//     "authorized_user": a person's refresh token is static, but the rule
//     is that Velero acts for a tenant only as a service account, whose
//     whole key is in the file and whose only network use is a token
//     endpoint nacflow pins;
//   - client_email and private_key are set (else the plugin would fall back
//     to the Velero server's own identity for signed URLs);
//   - token_uri, when set, is Google's (gcpTokenURIs); universe_domain, when
//     set, is "googleapis.com" (it chooses the storage endpoint's domain).
func CheckGCP(data []byte) error {
	const where = "the service account key (JSON)"
	fields, err := readJSONStrings(data)
	if err != nil {
		return gcpKeys.refusal("", where, err.Error())
	}
	get := func(k string) string {
		for _, f := range fields {
			if f.key == k {
				return f.value
			}
		}
		return ""
	}
	switch t := get("type"); t {
	case "service_account":
	case "external_account", "external_account_authorized_user":
		return gcpKeys.refusal("type", where, fmt.Sprintf("type %q gets tokens from a file, URL or command of the Velero server (workload identity federation)", t))
	case "impersonated_service_account":
		return gcpKeys.refusal("type", where, fmt.Sprintf("type %q impersonates a service account with other credentials", t))
	case "authorized_user":
		return gcpKeys.refusal("type", where, fmt.Sprintf("type %q is a person's refresh token", t))
	default:
		return gcpKeys.refusal("type", where, fmt.Sprintf("type %q is not a service account key", t))
	}
	for _, f := range fields {
		if err := gcpKeys.checkKey(f.key, where); err != nil {
			return err
		}
		if !f.isString {
			return gcpKeys.refusal(f.key, where, "its value is not a string")
		}
	}
	if get("client_email") == "" || get("private_key") == "" {
		return gcpKeys.refusal("", where, "it has no client_email or no private_key: the plugin would use the Velero server's own identity")
	}
	if u := get("token_uri"); u != "" && !gcpTokenURIs[u] {
		return &Error{Key: "token_uri", Where: where, Why: fmt.Sprintf("%q is not Google's token endpoint (https://oauth2.googleapis.com/token): the Velero server would post to it", u)}
	}
	if d := get("universe_domain"); d != "" && d != "googleapis.com" {
		return &Error{Key: "universe_domain", Where: where, Why: fmt.Sprintf("%q is not googleapis.com: it chooses the host the Velero server connects to", d)}
	}
	return nil
}

type jsonField struct {
	key, value string
	isString   bool
}

// readJSONStrings reads data as one JSON object, its keys in order with
// their string values ("" and isString false for other values), refusing a key seen twice (case-insensitively, as
// encoding/json matches struct fields) and anything after the object.
func readJSONStrings(data []byte) ([]jsonField, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("it is not a JSON object")
	}
	var out []jsonField
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("it is not valid JSON")
		}
		key, _ := tok.(string)
		if seen[strings.ToLower(key)] {
			return nil, fmt.Errorf("key %q appears twice", key)
		}
		seen[strings.ToLower(key)] = true
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("it is not valid JSON")
		}
		s, ok := v.(string)
		out = append(out, jsonField{key: key, value: s, isString: ok})
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("it is not valid JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("it holds more than one JSON value")
	}
	return out, nil
}
