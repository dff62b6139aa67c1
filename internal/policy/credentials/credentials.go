// Package credentials checks the credential file a tenant's storage location
// hands Velero, as the Velero plugin of its provider and that plugin's cloud
// SDK will read it, and accepts only static key material: Velero runs with
// the cluster admin's power, so a credential that makes the SDK run a
// command, read a file of the Velero server or fall back to the Velero
// server's own cloud identity (instance metadata, web identity, managed
// identity) would let a tenant act as the admin.
//
// Every rule is an allow-list: a key that is not known to be static is
// refused with its name and why. The parsers mirror the SDKs' own:
//
//   - AWS (velero-plugin-for-aws gives the file to the AWS SDK for Go v2 as
//     both its shared credentials and its shared config file): the INI
//     reader of github.com/aws/aws-sdk-go-v2/config internal/ini
//     (tokenize.go, parse.go, strings.go of config v1.32.17), profile
//     sections as config/shared_config.go maps them;
//   - GCP (velero-plugin-for-gcp, google.CredentialsFromJSON): JSON;
//   - Azure (velero-plugin-for-microsoft-azure, Velero's pkg/util/azure
//     LoadCredentials): the dotenv reader of Velero's pkg/util/dotenv
//     (Velero v1.18.3).
//
// The package is pure: no I/O, no clients.
package credentials

import (
	"fmt"
	"strings"
)

// MaxSize is the largest credential file checked, in bytes (64 KiB; a
// static key file is well under 4 KiB). Larger files are refused unread.
const MaxSize = 64 << 10

// Provider kinds nacflow can parse.
const (
	AWS   = "aws"
	GCP   = "gcp"
	Azure = "azure"
)

// Kind returns which parser reads the credentials of a BackupStorageLocation
// provider: "aws", "gcp" or "azure" for Velero's own plugins (written "aws"
// or "velero.io/aws", as Velero resolves a provider without a "/" to
// "velero.io/<provider>"), "" for any other provider.
func Kind(provider string) string {
	p := strings.ToLower(strings.TrimSpace(provider))
	p = strings.TrimPrefix(p, "velero.io/")
	switch p {
	case AWS, GCP, Azure:
		return p
	}
	return ""
}

// FullName returns provider as Velero names its plugin: "velero.io/<p>"
// for a provider without a "/", provider itself otherwise. Admins allow
// unparsed providers by this name or by the short one.
func FullName(provider string) string {
	if strings.Contains(provider, "/") {
		return provider
	}
	return "velero.io/" + provider
}

// keyRules is one provider's allow-list of credential keys: the keys
// accepted, what the provider's SDK or plugin does with the refused keys
// that matter most, the reason given for any other key, and the sentence
// naming what is accepted, which ends every refusal.
type keyRules struct {
	allowed   map[string]bool
	why       map[string]string
	otherwise string
	accepted  string
}

// checkKey returns the refusal of key, found at where, or nil when the key
// is allowed.
func (r keyRules) checkKey(key, where string) error {
	if r.allowed[key] {
		return nil
	}
	why, ok := r.why[key]
	if !ok {
		why = r.otherwise
	}
	return r.refusal(key, where, why)
}

// refusal returns the refusal of key ("" for the file as a whole) found at
// where, for why, followed by what is accepted.
func (r keyRules) refusal(key, where, why string) *Error {
	return &Error{Key: key, Where: where, Why: why + "; " + r.accepted}
}

// Error is a refusal: the key (when one key is to blame) and where it was
// found, and why. Its Error() reads "key "K" in WHERE is not allowed: WHY"
// or "WHERE: WHY".
type Error struct {
	// Key is the refused key, as the SDK reads it ("" when the file as a
	// whole is refused, e.g. when it holds no static key pair).
	Key string
	// Where is where it was found: "profile default", "line 3", "the JSON
	// object", ...
	Where string
	// Why says what the SDK or plugin would do with it, and what is accepted.
	Why string
}

// Error implements error.
func (e *Error) Error() string { return e.Describe("") }

// Describe returns the refusal naming the file as source (e.g. `Secret
// creds/cloud`), placed after Where.
func (e *Error) Describe(source string) string {
	where := e.Where
	if source != "" {
		if where != "" {
			where += " of " + source
		} else {
			where = source
		}
	}
	if e.Key != "" {
		return fmt.Sprintf("key %q in %s is not allowed: %s", e.Key, where, e.Why)
	}
	return fmt.Sprintf("%s: %s", where, e.Why)
}

// Check returns nil when data, the credential file of a location of
// provider with Velero BSL config, holds only static key material for the
// plugin of that provider, and an *Error naming the first key (in file
// order) that is not, or why the file as a whole is refused. A provider
// Kind does not know is refused (ErrUnknownProvider); the caller decides
// whether the admin allowed it unchecked.
//
// config is the location's config: the AWS profile ("profile"; default
// "default") and Azure's storageAccountKeyEnvVar choose what is read.
func Check(provider string, data []byte, config map[string]string) error {
	if len(data) > MaxSize {
		return &Error{Where: "the credential", Why: fmt.Sprintf("it is %d bytes; at most %d are accepted", len(data), MaxSize)}
	}
	switch Kind(provider) {
	case AWS:
		profile := config["profile"]
		if profile == "" {
			profile = "default"
		}
		return CheckAWS(data, profile)
	case GCP:
		return CheckGCP(data)
	case Azure:
		return CheckAzure(data, config["storageAccountKeyEnvVar"])
	}
	return &Error{Where: fmt.Sprintf("provider %q", provider), Why: ErrUnknownProvider.Error()}
}

// ErrUnknownProvider is why a provider without a parser is refused.
var ErrUnknownProvider = fmt.Errorf("nacflow cannot check the credentials of this provider for keys that make Velero run commands, " +
	"read its own files or use its own identity; only aws, gcp and azure are checked, and an admin may allow others by name " +
	"(nac --unchecked-credential-providers)")
