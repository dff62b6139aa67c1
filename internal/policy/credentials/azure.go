package credentials

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// azureStatic are the keys accepted in an Azure credential file: the
// subscription, resource group and cloud, a service principal's tenant,
// client and secret (or inline certificate), and a storage account access
// key (Velero v1.18.3 pkg/util/azure util.go CredentialKey*, plus
// AZURE_STORAGE_ACCOUNT_ACCESS_KEY, the name OADP's and Velero's docs give
// with config storageAccountKeyEnvVar).
var azureStatic = map[string]bool{
	"AZURE_SUBSCRIPTION_ID": true, "AZURE_RESOURCE_GROUP": true, "AZURE_CLOUD_NAME": true,
	"AZURE_TENANT_ID": true, "AZURE_CLIENT_ID": true, "AZURE_CLIENT_SECRET": true,
	"AZURE_CLIENT_CERTIFICATE": true, "AZURE_CLIENT_CERTIFICATE_PASSWORD": true, "AZURE_CLIENT_SEND_CERTIFICATE_CHAIN": true,
	"AZURE_STORAGE_KEY": true, "AZURE_STORAGE_ACCOUNT_ACCESS_KEY": true,
}

// AzureStorageKeyNames are the values accepted for config
// storageAccountKeyEnvVar: the credential keys that may hold a storage
// account access key.
var AzureStorageKeyNames = map[string]bool{"AZURE_STORAGE_ACCOUNT_ACCESS_KEY": true, "AZURE_STORAGE_KEY": true}

// azureWhy says what Velero's Azure credential code does with the keys that
// matter most.
var azureWhy = map[string]string{
	"AZURE_CLIENT_CERTIFICATE_PATH":      "Velero reads the certificate from that file in the Velero server",
	"AZURE_FEDERATED_TOKEN_FILE":         "it names a token file in the Velero server (workload identity)",
	"AZURE_CREDENTIALS_FILE":             "it names a file in the Velero server",
	"AZURE_USERNAME":                     "it signs in as a person with a password",
	"AZURE_PASSWORD":                     "it signs in as a person with a password",
	"AZURE_ADDITIONALLY_ALLOWED_TENANTS": "it lets the credential act in other Azure tenants",
	"AZURE_AUTHORITY_HOST":               "it changes where tokens are requested",
}

// azureKeys are the keys of an Azure credential file: azureStatic are
// accepted, and named, sorted, in every refusal.
var azureKeys = keyRules{
	allowed:   azureStatic,
	accepted:  "only " + strings.Join(slices.Sorted(maps.Keys(azureStatic)), ", ") + " are accepted",
	otherwise: "it is not a static key",
	why:       azureWhy,
}

// CheckAzure returns nil when data, read by Velero's dotenv reader
// (pkg/util/dotenv, Velero v1.18.3) as pkg/util/azure LoadCredentials does
// for velero-plugin-for-microsoft-azure, holds only static keys
// (azureStatic) and proves which static credential Velero will use; keyVar
// is the location's config storageAccountKeyEnvVar ("" when unset). The
// rules follow pkg/util/azure storage.go NewStorageClient and credential.go
// NewCredential:
//
//   - with storageAccountKeyEnvVar, it names a key of
//     AzureStorageKeyNames that the file sets (the shared key is used);
//   - otherwise AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET or
//     AZURE_CLIENT_CERTIFICATE are set: without a secret or certificate,
//     Velero falls back to the Velero pod's workload identity
//     (AZURE_FEDERATED_TOKEN_FILE) or managed identity — and, without
//     storageAccountKeyEnvVar, even a file holding AZURE_STORAGE_KEY first
//     exchanges it through that identity.
//
// Lines: split on "\n" (a trailing "\r" dropped, as bufio.ScanLines does),
// trimmed; blank and "#" lines skipped; "#" outside quotes starts a
// comment; "export " is dropped; "=" or, when it comes first, ":"
// separates key and value; one pair of quotes goes; the last value of a
// key wins. A line without a separator, or with an empty key, is refused
// (Velero refuses the whole file), and so is a line of 64 KiB or more
// (bufio.Scanner's limit: Velero fails to read it).
func CheckAzure(data []byte, keyVar string) error {
	vals := map[string]string{}
	for i, line := range strings.Split(string(data), "\n") {
		where := fmt.Sprintf("line %d", i+1)
		if len(line) >= 64<<10 {
			return &Error{Where: where, Why: "it is 64 KiB or longer: Velero cannot read it"}
		}
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = dotenvStripComment(line)
		if strings.HasPrefix(line, "export ") {
			line = strings.TrimSpace(strings.TrimPrefix(line, "export "))
		}
		sep, colon := strings.Index(line, "="), strings.Index(line, ":")
		if sep == -1 || (colon != -1 && colon < sep) {
			sep = colon
		}
		if sep == -1 || strings.TrimSpace(line[:sep]) == "" {
			return azureKeys.refusal("", where, "it is not KEY=VALUE: Velero refuses the file")
		}
		key := strings.TrimSpace(line[:sep])
		if err := azureKeys.checkKey(key, where); err != nil {
			return err
		}
		vals[key] = strings.TrimSpace(line[sep+1:]) // quoting does not matter: only emptiness is tested
	}
	const where = "the Azure credential"
	if keyVar != "" {
		if !AzureStorageKeyNames[keyVar] {
			return &Error{Where: where, Why: fmt.Sprintf("config storageAccountKeyEnvVar %q is not AZURE_STORAGE_ACCOUNT_ACCESS_KEY or AZURE_STORAGE_KEY", keyVar)}
		}
		if dotenvUnquote(vals[keyVar]) == "" {
			return &Error{Where: where, Why: fmt.Sprintf("config storageAccountKeyEnvVar names %s, which the file does not set", keyVar)}
		}
		return nil
	}
	if dotenvUnquote(vals["AZURE_TENANT_ID"]) == "" || dotenvUnquote(vals["AZURE_CLIENT_ID"]) == "" ||
		dotenvUnquote(vals["AZURE_CLIENT_SECRET"]) == "" && dotenvUnquote(vals["AZURE_CLIENT_CERTIFICATE"]) == "" {
		return &Error{Where: where, Why: "it sets no storage account key named by config storageAccountKeyEnvVar, nor AZURE_TENANT_ID, AZURE_CLIENT_ID and " +
			"AZURE_CLIENT_SECRET (or AZURE_CLIENT_CERTIFICATE): Velero would fall back to the Velero server's own workload or managed identity"}
	}
	return nil
}

// dotenvStripComment is pkg/util/dotenv stripInlineComment.
func dotenvStripComment(line string) string {
	inSingle, inDouble := false, false
	for i, r := range line {
		switch r {
		case '\'':
			if !inDouble {
				inSingle = !inSingle
			}
		case '"':
			if !inSingle {
				inDouble = !inDouble
			}
		case '#':
			if !inSingle && !inDouble {
				return strings.TrimSpace(line[:i])
			}
		}
	}
	return line
}

// dotenvUnquote is pkg/util/dotenv parseValue, as far as emptiness goes.
func dotenvUnquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
		return v[1 : len(v)-1]
	}
	return v
}
