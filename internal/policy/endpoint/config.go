// Package endpoint checks what a tenant's storage location tells Velero's
// object store plugin to do besides its credentials: the keys of the
// location's config (an allow-list per provider, as each plugin's Init reads
// them) and the addresses its URL-valued keys make the Velero server
// connect to (no loopback, link-local, cloud metadata, unspecified or
// multicast address unless an admin allows it; admin denials always win).
//
// Velero connects from its own pod, with its own network position: an
// endpoint on loopback or at the cloud metadata service is a request the
// tenant could not make itself (server-side request forgery), whose error
// text comes back in the location's status.
package endpoint

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// keyRule says how one config key is treated.
type keyRule int

const (
	plain    keyRule = iota // a value the plugin uses as it is, harmless
	boolean                 // strconv.ParseBool
	urlValue                // an endpoint the Velero server connects to: Policy.Check
	hostPart                // pasted by the plugin into a URL it builds: hostParts
)

// hostShape is how a plugin builds a URL from a config value, and the shape
// the value must have so that the URL is the one the plugin means.
type hostShape struct {
	// pattern is what the provider itself accepts for the value.
	pattern *regexp.Regexp
	// what describes pattern for the refusal.
	what string
	// build returns the URL the plugin builds from v, as it builds it.
	build func(v string) string
	// host is the host that URL must have, or "" when the value goes
	// into the path: then the URL must keep build's host and gain no
	// query, fragment or extra path segment.
	host func(v string) string
}

// hostParts are the config values a plugin pastes into a URL it builds
// itself, keyed by provider kind and key: checked as text, the Azure
// plugin turned storageAccount "127.0.0.1:8091/x?" into
// https://127.0.0.1:8091/x?.blob.core.windows.net. Each must have the
// shape its cloud gives it, and the URL built from it must parse back to
// the host (or path) the plugin means:
//
//   - aws region: without s3Url the AWS SDK connects to
//     s3.<region>.amazonaws.com (a region is lower-case letters, digits
//     and dashes);
//   - azure storageAccount: Velero's pkg/util/azure builds
//     https://<account>.blob.<cloud suffix> (3 to 24 lower-case letters
//     and digits, Azure's rule);
//   - azure resourceGroup and subscriptionId: the ARM path
//     /subscriptions/<id>/resourceGroups/<group>/... the plugin asks for
//     the account's keys (a GUID; Azure's resource group characters).
var hostParts = map[string]map[string]hostShape{
	"aws": {
		"region": {
			pattern: regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`),
			what:    "a region name: lower-case letters, digits and dashes, at most 63",
			build:   func(v string) string { return "https://s3." + v + ".amazonaws.com/" },
			host:    func(v string) string { return "s3." + v + ".amazonaws.com" },
		},
	},
	"azure": {
		"storageAccount": {
			pattern: regexp.MustCompile(`^[a-z0-9]{3,24}$`),
			what:    "a storage account name: 3 to 24 lower-case letters and digits",
			build:   func(v string) string { return "https://" + v + ".blob.core.windows.net/" },
			host:    func(v string) string { return v + ".blob.core.windows.net" },
		},
		"resourceGroup": {
			pattern: regexp.MustCompile(`^[-\w._()]{0,89}[-\w_()]$`),
			what:    "a resource group name: letters, digits, '-', '_', '.', '(' and ')', at most 90, not ending with '.'",
			build: func(v string) string {
				return "https://management.azure.com/subscriptions/x/resourceGroups/" + v + "/providers"
			},
		},
		"subscriptionId": {
			pattern: regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`),
			what:    "a subscription ID: a GUID",
			build: func(v string) string {
				return "https://management.azure.com/subscriptions/" + v + "/resourceGroups/x/providers"
			},
		},
	},
}

// checkHostPart reports why v, the value of key of provider kind, would make
// the plugin build a URL it does not mean ("" when it would not).
func checkHostPart(shape hostShape, v string) string {
	if !shape.pattern.MatchString(v) {
		return "is not " + shape.what
	}
	u, err := url.Parse(shape.build(v))
	switch {
	case err != nil:
		return "does not make a URL"
	case u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "":
		return "adds user info, a query or a fragment to the URL the plugin builds"
	case shape.host != nil && u.Host != shape.host(v):
		return "makes the plugin connect to " + u.Host
	case shape.host == nil && (u.Host != "management.azure.com" || strings.Count(u.Path, "/") != 5):
		return "changes the URL path the plugin builds"
	}
	return ""
}

// configKeys are the config keys accepted per provider kind (the
// credentials package's Kind), from each plugin's Init:
//
//   - aws: velero-plugin-for-aws object_store.go (region, s3Url, publicUrl,
//     kmsKeyId, s3ForcePathStyle, signatureVersion, profile,
//     serverSideEncryption, insecureSkipTLSVerify, tagging,
//     checksumAlgorithm). Refused: credentialsFile (a file of the Velero
//     server, and Velero sets it itself), customerKeyEncryptionFile (a file
//     of the Velero server), customerKeyEncryptionSecret (a Secret the
//     plugin reads from the Velero namespace with Velero's rights),
//     enableSharedConfig;
//   - gcp: velero-plugin-for-gcp object_store.go (kmsKeyName,
//     storeEndpoint). Refused: credentialsFile, serviceAccount (an identity
//     to sign as, used with the Velero server's own credentials),
//     universeDomain (the domain of every endpoint);
//   - azure: velero-plugin-for-microsoft-azure object_store.go and Velero
//     pkg/util/azure storage.go (resourceGroup, storageAccount,
//     subscriptionId, blockSizeInBytes, useAAD, storageAccountKeyEnvVar,
//     storageAccountURI, activeDirectoryAuthorityURI). Refused:
//     credentialsFile.
//
// Keys Velero adds itself (bucket, prefix, caCert) are refused in a
// tenant's config too: objectStorage sets them.
var configKeys = map[string]map[string]keyRule{
	"aws": {
		"region": hostPart, "s3Url": urlValue, "publicUrl": urlValue, "kmsKeyId": plain, "s3ForcePathStyle": boolean,
		"signatureVersion": plain, "profile": plain, "serverSideEncryption": plain, "insecureSkipTLSVerify": boolean,
		"tagging": plain, "checksumAlgorithm": plain,
	},
	"gcp": {"kmsKeyName": plain, "storeEndpoint": urlValue},
	"azure": {
		"resourceGroup": hostPart, "storageAccount": hostPart, "subscriptionId": hostPart, "blockSizeInBytes": plain, "useAAD": boolean,
		"storageAccountKeyEnvVar": plain, "storageAccountURI": urlValue, "activeDirectoryAuthorityURI": urlValue,
	},
}

// whyRefused says why the keys plugins know but nacflow refuses are refused.
var whyRefused = map[string]string{
	"credentialsFile":             "it names a file in the Velero server (Velero sets it to the location's own credential)",
	"customerKeyEncryptionFile":   "it names a file in the Velero server",
	"customerKeyEncryptionSecret": "the plugin reads that Secret from Velero's namespace with Velero's rights",
	"enableSharedConfig":          "it makes the AWS SDK read shared config beyond the location's credential",
	"serviceAccount":              "it names a service account the plugin signs as with the Velero server's own credentials",
	"universeDomain":              "it chooses the domain of every endpoint the plugin connects to",
	"bucket":                      "Velero sets it from objectStorage.bucket",
	"prefix":                      "Velero sets it from objectStorage.prefix",
	"caCert":                      "Velero sets it from objectStorage.caCert",
	"caCertEncoded":               "Velero sets it",
}

// URLKeys returns the config keys of provider kind whose values are
// endpoints the Velero server connects to, sorted.
func URLKeys(kind string) []string {
	var out []string
	for k, r := range configKeys[kind] {
		if r == urlValue {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// CheckConfig returns the first key of config (in sorted order) that the
// plugin of provider kind ("aws", "gcp", "azure") may not be given, as an
// error naming the key and why; boolean keys must parse as Go booleans, as
// the plugins parse them. URL-valued keys are only listed here: their
// addresses are Policy.Check's. A kind without an allow-list ("") accepts
// any config: the admin allowed the provider unchecked by name.
func CheckConfig(kind string, config map[string]string) error {
	allowed, ok := configKeys[kind]
	if !ok {
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(config)) {
		rule, ok := allowed[k]
		if !ok {
			why, known := whyRefused[k]
			if !known {
				why = "the " + kind + " plugin does not read it, or nacflow does not know it to be safe"
			}
			return fmt.Errorf("key %q is not allowed: %s; accepted keys for provider %s: %s", k, why, kind, strings.Join(slices.Sorted(maps.Keys(allowed)), ", "))
		}
		switch rule {
		case boolean:
			if _, err := strconv.ParseBool(config[k]); err != nil {
				return fmt.Errorf("key %q: %q is not a boolean", k, config[k])
			}
		case hostPart:
			if why := checkHostPart(hostParts[kind][k], config[k]); why != "" {
				return fmt.Errorf("key %q: %q %s", k, config[k], why)
			}
		}
	}
	return nil
}
