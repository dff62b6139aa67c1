package credentials

import (
	"fmt"
	"strings"
)

// awsKeys are the keys of an AWS credential file. Only the static key pair
// and session token are accepted (aws-sdk-go-v2 config/shared_config.go
// accessKeyIDKey, secretAccessKey, sessionTokenKey); why says what the AWS
// SDK for Go v2 (config/resolve_credentials.go, shared_config.go) does with
// the keys that matter most; any other key is refused as not known to be
// static.
var awsKeys = keyRules{
	allowed:   map[string]bool{"aws_access_key_id": true, "aws_secret_access_key": true, "aws_session_token": true},
	accepted:  "only aws_access_key_id, aws_secret_access_key and aws_session_token are accepted",
	otherwise: "it is not a static key",
	why:       awsWhy,
}

var awsWhy = map[string]string{
	"credential_process":             "the AWS SDK runs it as a command in the Velero server",
	"web_identity_token_file":        "the AWS SDK reads a token file in the Velero server and assumes a role with it (the Velero pod's web identity)",
	"role_arn":                       "the AWS SDK assumes this role with credentials other than the profile's static keys (the Velero pod's own, or another profile's)",
	"source_profile":                 "the AWS SDK takes the credentials of another profile and assumes a role with them",
	"credential_source":              "the AWS SDK takes the Velero server's own credentials (instance metadata, container or environment)",
	"role_session_name":              "it configures assuming a role",
	"external_id":                    "it configures assuming a role",
	"mfa_serial":                     "it configures assuming a role",
	"duration_seconds":               "it configures assuming a role",
	"sso_session":                    "the AWS SDK reads a cached SSO token file in the Velero server",
	"sso_start_url":                  "the AWS SDK reads a cached SSO token file in the Velero server",
	"sso_account_id":                 "the AWS SDK reads a cached SSO token file in the Velero server",
	"sso_role_name":                  "the AWS SDK reads a cached SSO token file in the Velero server",
	"sso_region":                     "the AWS SDK reads a cached SSO token file in the Velero server",
	"login_session":                  "the AWS SDK reads a cached login token file in the Velero server",
	"ca_bundle":                      "it names a file in the Velero server",
	"endpoint_url":                   "it changes where the AWS SDK connects, past nacflow's endpoint rules (use config.s3Url)",
	"ec2_metadata_service_endpoint":  "it changes where the AWS SDK fetches instance metadata",
	"services":                       "it changes where the AWS SDK connects, past nacflow's endpoint rules (use config.s3Url)",
	"ignore_configured_endpoint_url": "it changes where the AWS SDK connects",
}

// CheckAWS returns nil when data, read by the AWS SDK for Go v2 as both a
// shared credentials file and a shared config file (velero-plugin-for-aws
// config.go WithCredentialsFile), gives profile static keys and nothing
// else. The rules:
//
//   - every property of every section is aws_access_key_id,
//     aws_secret_access_key or aws_session_token with a plain (not nested)
//     value, so no profile of the file, whichever one references another,
//     holds anything but static keys;
//   - no property stands outside a section (the SDK ignores those; nacflow
//     refuses what it would have to explain);
//   - profile's own section (credentials file "[P]", config file
//     "[profile P]", and "[default]" for the default profile) sets both
//     aws_access_key_id and aws_secret_access_key to non-empty values:
//     otherwise the SDK goes on down its chain to the Velero server's own
//     identity (container credentials, instance metadata).
//
// Lines are read exactly as aws-sdk-go-v2 config v1.32.17 internal/ini
// reads them (keys lower-cased, values unquoted, "#"/";" comments, nested
// sub-properties and continuation lines); see parseAWSINI.
func CheckAWS(data []byte, profile string) error {
	f := parseAWSINI(string(data))
	if f.crash != nil {
		return &Error{Key: f.crash.key, Where: fmt.Sprintf("line %d", f.crash.line),
			Why: "its value is a lone quote, on which the AWS SDK's INI reader panics (internal/ini strings.go unquote)"}
	}
	if f.global != nil {
		return awsKeys.refusal(f.global.key, fmt.Sprintf("line %d, outside any profile", f.global.line),
			"the AWS SDK ignores properties before the first [profile] line")
	}
	for _, name := range f.order {
		s := f.sections[name]
		for _, key := range s.order {
			v := s.values[key]
			if err := awsKeys.checkKey(key, sectionWhere(name)); err != nil {
				return err
			}
			if v.nested != nil {
				return awsKeys.refusal(key, sectionWhere(name), "it holds nested settings, not a key")
			}
		}
	}
	// The credentials-file view drops sections named "profile ...", the
	// config-file view reads "[profile P]" as P (shared_config.go
	// processCredentialsSections, processConfigSections).
	candidates := []string{"profile " + profile}
	if !strings.HasPrefix(profile, "profile ") {
		candidates = append(candidates, profile)
	}
	for _, name := range candidates {
		s, ok := f.sections[name]
		if ok && s.values["aws_access_key_id"] != nil && s.values["aws_access_key_id"].str != "" &&
			s.values["aws_secret_access_key"] != nil && s.values["aws_secret_access_key"].str != "" {
			return nil
		}
	}
	return &Error{Where: "profile " + profile,
		Why: "it does not set both aws_access_key_id and aws_secret_access_key: the AWS SDK would fall back to the Velero server's own identity (environment, container credentials, instance metadata)"}
}

// sectionWhere names the section name of a config or credentials file as
// a profile: "profile x" for [x] and [profile x] alike.
func sectionWhere(name string) string {
	return "profile " + strings.TrimPrefix(name, "profile ")
}

// awsValue is a property's value: a string, or the nested sub-properties of
// a property whose own value is empty (e.g. "s3 =" followed by indented
// "endpoint_url = ..."), as aws-sdk-go-v2 internal/ini Value holds it.
type awsValue struct {
	str    string
	nested map[string]string
}

type awsSection struct {
	values map[string]*awsValue
	order  []string // keys in the order first seen
}

type awsProperty struct {
	key  string
	line int
}

// awsFile is a parsed file: sections by name in the order first seen, and
// the first property that stood outside any section.
type awsFile struct {
	sections map[string]*awsSection
	order    []string
	global   *awsProperty
	// crash is the first property whose value is a lone quote character:
	// the SDK's unquote slices it as s[1:0] and panics.
	crash *awsProperty
}

// parseAWSINI parses s as aws-sdk-go-v2 config v1.32.17 internal/ini
// (ini.go Parse, tokenize.go, parse.go, strings.go) does: lines split on
// "\n"; blank lines and lines whose first non-blank is "#" or ";" skipped;
// a line that is "[...]" once its comment ("#" or ";" anywhere) is cut is a
// section, "[type name]" named "type name"; a line not starting with a
// space or tab and holding "=" or ":" is a property (key lower-cased,
// value trimmed and unquoted, " #"/" ;" comments cut); an indented line
// with "=" or ":" is a sub-property, nested under the current key when that
// key's value is empty, a property otherwise; another indented line
// continues the current value. Other lines are ignored, as the SDK
// ignores them. The SDK's rules are copied, not approximated: what this
// function reads is what Velero's plugin will read.
func parseAWSINI(s string) *awsFile {
	f := &awsFile{sections: map[string]*awsSection{}}
	var csection, ckey string
	set := func(key, value string, line int) {
		if csection == "" {
			if f.global == nil {
				f.global = &awsProperty{key: key, line: line}
			}
			return
		}
		ckey = key
		sec := f.sections[csection]
		if _, ok := sec.values[key]; !ok {
			sec.order = append(sec.order, key)
		}
		sec.values[key] = &awsValue{str: value}
	}
	crash := func(key, value string, line int) {
		if (value == `"` || value == "'") && f.crash == nil {
			f.crash = &awsProperty{key: strings.ToLower(key), line: line}
		}
	}
	for i, line := range strings.Split(s, "\n") {
		n := i + 1
		if strings.TrimSpace(line) == "" || iniLineComment(line) {
			continue
		}
		if typ, name, ok := iniProfile(line); ok {
			if typ != "" {
				name = typ + " " + name
			}
			ckey, csection = "", name
			if _, ok := f.sections[name]; !ok {
				f.sections[name] = &awsSection{values: map[string]*awsValue{}}
				f.order = append(f.order, name)
			}
			continue
		}
		indented := iniSpace(rune(line[0]))
		if !indented {
			trimmed := strings.TrimRight(iniTrimPropertyComment(line), " \t")
			if k, v, ok := iniSplitProperty(trimmed); ok {
				crash(k, v, n)
				set(strings.ToLower(k), iniUnquote(v), n)
			}
			continue
		}
		trimmed := strings.TrimLeft(line, " \t")
		if k, v, ok := iniSplitProperty(trimmed); ok {
			// A sub-property (parse.go handleSubProperty).
			crash(k, v, n)
			key, value := strings.ToLower(k), iniUnquote(v)
			if csection == "" {
				continue
			}
			cur := f.sections[csection].values[ckey]
			if ckey == "" || (cur != nil && cur.str != "") {
				set(key, strings.TrimSpace(iniTrimPropertyComment(value)), n)
				continue
			}
			if cur == nil {
				cur = &awsValue{}
				f.sections[csection].values[ckey] = cur
			}
			if cur.nested == nil {
				cur.nested = map[string]string{}
			}
			cur.nested[key] = value
			continue
		}
		// A continuation (parse.go handleContinuation).
		if ckey == "" {
			continue
		}
		if cur := f.sections[csection].values[ckey]; cur != nil && cur.str != "" && cur.nested == nil {
			cur.str += "\n" + trimmed
		}
	}
	return f
}

// iniLineComment is tokenize.go isLineComment.
func iniLineComment(line string) bool {
	t := strings.TrimLeft(line, " \t")
	return strings.HasPrefix(t, "#") || strings.HasPrefix(t, ";")
}

// iniProfile is tokenize.go asProfile with strings.go splitProfile: the
// section's type and name, and whether line is a section line.
func iniProfile(line string) (typ, name string, ok bool) {
	r, _, _ := strings.Cut(line, "#")
	r, _, _ = strings.Cut(r, ";")
	t := strings.TrimSpace(r)
	if !strings.HasPrefix(t, "[") || !strings.HasSuffix(t, "]") || len(t) < 2 {
		return "", "", false
	}
	t = strings.TrimSpace(t[1 : len(t)-1])
	first := 0
	for i, c := range t {
		if iniSpace(c) {
			if first == 0 {
				first = i
			}
		} else if first != 0 {
			return t[:first], t[i:], true
		}
	}
	if first == 0 {
		return "", t, true
	}
	return "", "", true
}

// iniTrimPropertyComment is strings.go trimPropertyComment.
func iniTrimPropertyComment(s string) string {
	r, _, _ := strings.Cut(s, " #")
	r, _, _ = strings.Cut(r, " ;")
	r, _, _ = strings.Cut(r, "\t#")
	r, _, _ = strings.Cut(r, "\t;")
	return r
}

// iniSplitProperty is strings.go splitProperty: "=" or, when it comes
// first, ":" separates key and value.
func iniSplitProperty(s string) (string, string, bool) {
	eq, colon := strings.Index(s, "="), strings.Index(s, ":")
	sep := "="
	if eq == -1 || colon != -1 && colon < eq {
		sep = ":"
	}
	k, v, ok := strings.Cut(s, sep)
	if !ok {
		return "", "", false
	}
	return strings.TrimSpace(k), strings.TrimSpace(v), true
}

// iniUnquote is strings.go legacyStrconv: one pair of matching quotes goes.
func iniUnquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		return s[1 : len(s)-1]
	}
	return s
}

func iniSpace(r rune) bool { return r == ' ' || r == '\t' }
