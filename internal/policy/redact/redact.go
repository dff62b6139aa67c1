// Package redact removes what grants access from text nacflow writes where
// tenants, `view` users included, read it: status messages, conditions and
// events. A pre-signed URL of a backup file opens the backup — Secrets
// included — to whoever holds it; Go's HTTP errors print the whole URL, and
// Velero's and the object stores' messages may carry one too. So every
// message is cleaned on its way out, whichever phase or library wrote it
// (deny by default): a URL keeps its scheme, host and path, and loses user
// info, query and fragment; a credential-like parameter outside a URL
// (X-Amz-Signature=…, sig=…, token=…) loses its value; and a token a
// message carries bare — a JSON Web Token (a Kubernetes service account's,
// an OIDC provider's) or whatever follows "Bearer" — is removed whole.
package redact

import (
	"reflect"
	"regexp"
	"strings"
)

// Mark replaces what was removed.
const Mark = "REDACTED"

var (
	// urlPattern is a URL as messages carry one: a scheme (or none),
	// "://", and everything up to white space, a quote or an angle bracket.
	urlPattern = regexp.MustCompile(`(?i)[a-z0-9+.-]*://[^\s"'<>` + "`" + `]+`)
	// paramPattern is a parameter whose value opens something: the
	// signature and credential parameters of AWS SigV4/V2, GCS and Azure SAS
	// URLs, OAuth tokens, and the secret keys of the providers' credential
	// files. Not generic words ("secret=", "token="): nacflow's own records
	// use them for versions (a location's revision holds
	// "secret=<resourceVersion>").
	// jwtPattern is a JSON Web Token: three base64url parts, the first
	// two JSON objects ("eyJ" is the encoding of `{"`), the last possibly
	// empty (an unsigned token).
	jwtPattern = regexp.MustCompile(`eyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*`)
	// bearerPattern is an HTTP bearer credential (RFC 6750's b64token).
	bearerPattern = regexp.MustCompile(`(?i)\b(bearer)\s+[A-Za-z0-9._~+/-]+=*`)
	paramPattern  = regexp.MustCompile(`(?i)\b(x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature|x-goog-credential|signature|awsaccesskeyid|sig|access_token|refresh_token|id_token|aws_secret_access_key|aws_session_token|client_secret|azure_client_secret|azure_storage_account_access_key|azure_storage_key)=([^&\s"'<>;,]+)`)
)

// String returns s with every URL's user info, query and fragment, every
// secret parameter's value, every JSON Web Token and every bearer
// credential replaced by Mark. Text with none of "://", "=", "eyJ" and
// "earer" is returned as it is, without allocating.
func String(s string) string {
	if strings.Contains(s, "eyJ") {
		s = jwtPattern.ReplaceAllString(s, Mark)
	}
	if strings.Contains(s, "earer") || strings.Contains(s, "EARER") {
		s = bearerPattern.ReplaceAllStringFunc(s, bearer)
	}
	if !strings.Contains(s, "://") && !strings.Contains(s, "=") {
		return s
	}
	if strings.Contains(s, "://") {
		s = urlPattern.ReplaceAllStringFunc(s, url)
	}
	if strings.Contains(s, "=") {
		s = paramPattern.ReplaceAllString(s, "${1}="+Mark)
	}
	return s
}

// bearer cleans one match of bearerPattern: a credential is long or holds
// more than letters; "the bearer of" is prose, kept.
func bearer(m string) string {
	i := strings.IndexAny(m, " \t\r\n\v\f")
	word, tok := m[:i], strings.TrimLeft(m[i:], " \t\r\n\v\f")
	if len(tok) < 8 && strings.Trim(tok, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") == "" {
		return m
	}
	return word + " " + Mark
}

// url cleans one URL found by urlPattern, without parsing it (a URL that
// does not parse may still carry a signature).
func url(u string) string {
	i := strings.Index(u, "://") + 3
	scheme, rest := u[:i], u[i:]
	end := strings.IndexAny(rest, "/?#")
	authority := rest
	if end >= 0 {
		authority = rest[:end]
	}
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		rest = Mark + rest[at:]
	}
	if q := strings.IndexAny(rest, "?#"); q >= 0 {
		// A trailing ":" or ")" belongs to the sentence, not the URL.
		tail := ""
		for _, c := range []string{":", ")", ".", ","} {
			if strings.HasSuffix(rest, c) {
				tail = c
			}
		}
		rest = rest[:q+1] + Mark + tail
	}
	return scheme + rest
}

// Strings cleans, in place, every string reachable from v (a pointer to a
// struct, typically an object's status): struct fields, slices, arrays,
// maps' string values and pointers, except struct fields named in keep (Go
// field names, such as "DownloadURL": a value handed out on purpose, to
// readers allowed to hold it). It returns how many strings it changed.
func Strings(v any, keep ...string) int {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return 0
	}
	kept := map[string]bool{}
	for _, k := range keep {
		kept[k] = true
	}
	return walk(rv.Elem(), kept, 0)
}

// maxDepth bounds walk's recursion: statuses nest a few levels.
const maxDepth = 32

func walk(v reflect.Value, keep map[string]bool, depth int) int {
	if depth > maxDepth {
		return 0
	}
	n := 0
	switch v.Kind() {
	case reflect.String:
		if s := v.String(); v.CanSet() {
			if c := String(s); c != s {
				v.SetString(c)
				n++
			}
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			n += walk(v.Elem(), keep, depth+1)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range v.NumField() {
			if !t.Field(i).IsExported() || keep[t.Field(i).Name] {
				continue
			}
			n += walk(v.Field(i), keep, depth+1)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			n += walk(v.Index(i), keep, depth+1)
		}
	case reflect.Map:
		if v.Type().Elem().Kind() != reflect.String {
			for _, k := range v.MapKeys() {
				n += walk(v.MapIndex(k), keep, depth+1) // not settable: only pointers inside change
			}
			return n
		}
		for _, k := range v.MapKeys() {
			s := v.MapIndex(k).String()
			if c := String(s); c != s {
				v.SetMapIndex(k, reflect.ValueOf(c).Convert(v.Type().Elem()))
				n++
			}
		}
	}
	return n
}
