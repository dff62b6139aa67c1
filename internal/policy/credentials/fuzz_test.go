package credentials

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/vmware-tanzu/velero/pkg/util/dotenv"
)

// FuzzCheckAWS: any file and profile is checked without a panic, and a file
// CheckAWS accepts is, read by the AWS SDK for Go v2 itself as both shared
// credentials and config file (as velero-plugin-for-aws gives it), a
// profile with static keys and no other credential source: the parser
// agrees with the SDK on everything that matters.
func FuzzCheckAWS(f *testing.F) {
	f.Add("[default]\n"+static, "default")
	f.Add("[profile team]\n"+static+"[default]\ncredential_process = x\n", "team")
	f.Add("[default]\naws_access_key_id = A\n  credential_process = x\naws_secret_access_key = S\n", "default")
	f.Add("[default]\naws_access_key_id =\n  x = y\naws_secret_access_key = S\n", "default")
	f.Add("[default]\n"+static+"services = s\n[services s]\ns3 =\n  endpoint_url = http://x\n", "default")
	f.Add("[ profile  team ] # c\nAWS_ACCESS_KEY_ID: 'A'\naws_secret_access_key=S ;c\n", "team")
	f.Add("[default]\naws_access_key_id = A\n\taws_secret_access_key = S\n", "default")
	f.Add("[profile team]\n"+static, "profile team")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data, profile string) {
		if CheckAWS([]byte(data), profile) != nil {
			return
		}
		path := filepath.Join(dir, "cloud")
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.LoadSharedConfigProfile(context.Background(), profile, func(o *config.LoadSharedConfigOptions) {
			o.CredentialsFiles, o.ConfigFiles = []string{path}, []string{path}
		})
		if err != nil {
			t.Fatalf("accepted, but the AWS SDK refuses profile %q: %v", profile, err)
		}
		if !cfg.Credentials.HasKeys() {
			t.Fatalf("accepted, but the AWS SDK finds no static keys in profile %q", profile)
		}
		if cfg.Source != nil || cfg.CredentialProcess != "" || cfg.CredentialSource != "" || cfg.WebIdentityTokenFile != "" ||
			cfg.RoleARN != "" || cfg.SSOSessionName != "" || cfg.SSOStartURL != "" || cfg.LoginSession != "" {
			t.Fatalf("accepted, but the AWS SDK reads a credential source besides static keys: %+v", cfg)
		}
	})
}

// FuzzCheckGCP: any file is checked without a panic, and an accepted one,
// decoded as Go's encoding/json decodes Google's credentials struct (field
// names matched case-insensitively), is a service account key with no
// external credential source and Google's token endpoint.
func FuzzCheckGCP(f *testing.F) {
	f.Add(serviceAccount)
	f.Add(`{"type":"external_account","credential_source":{"file":"/x"}}`)
	f.Add(`{"type":"service_account","client_email":"a@b","private_key":"k","TYPE":"authorized_user"}`)
	f.Add(`{"type":"service_account","client_email":"a@b","private_key":"k","token_uri":"http://127.0.0.1"}`)
	f.Fuzz(func(t *testing.T, data string) {
		if CheckGCP([]byte(data)) != nil {
			return
		}
		var got struct {
			Type                           string          `json:"type"`
			ClientEmail                    string          `json:"client_email"`
			PrivateKey                     string          `json:"private_key"`
			TokenURL                       string          `json:"token_uri"`
			TokenURLExternal               string          `json:"token_url"`
			CredentialSource               json.RawMessage `json:"credential_source"`
			ServiceAccountImpersonationURL string          `json:"service_account_impersonation_url"`
			RefreshToken                   string          `json:"refresh_token"`
			UniverseDomain                 string          `json:"universe_domain"`
		}
		if err := json.Unmarshal([]byte(data), &got); err != nil {
			t.Fatalf("accepted, but encoding/json refuses it: %v", err)
		}
		if got.Type != "service_account" || got.ClientEmail == "" || got.PrivateKey == "" || got.CredentialSource != nil ||
			got.TokenURLExternal != "" || got.ServiceAccountImpersonationURL != "" || got.RefreshToken != "" ||
			(got.TokenURL != "" && !gcpTokenURIs[got.TokenURL]) || (got.UniverseDomain != "" && got.UniverseDomain != "googleapis.com") {
			t.Fatalf("accepted, but Google's libraries read %+v", got)
		}
	})
}

// FuzzCheckAzure: any file is checked without a panic, and an accepted one,
// read by Velero's own dotenv reader, holds only static keys and a static
// credential Velero will use.
func FuzzCheckAzure(f *testing.F) {
	f.Add("AZURE_TENANT_ID=t\nAZURE_CLIENT_ID=c\nAZURE_CLIENT_SECRET=s\n", "")
	f.Add("AZURE_STORAGE_ACCOUNT_ACCESS_KEY=k\n", "AZURE_STORAGE_ACCOUNT_ACCESS_KEY")
	f.Add("export AZURE_TENANT_ID='t' # x\nAZURE_CLIENT_ID: \"c#\"\nAZURE_CLIENT_SECRET=\"\"\n", "")
	f.Add("AZURE_TENANT_ID=t\nAZURE_CLIENT_ID=c\nAZURE_FEDERATED_TOKEN_FILE=/x\n", "")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data, keyVar string) {
		if CheckAzure([]byte(data), keyVar) != nil {
			return
		}
		path := filepath.Join(dir, "cloud")
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		creds, err := dotenv.Read(path)
		if err != nil {
			t.Fatalf("accepted, but Velero cannot read it: %v", err)
		}
		for k := range creds {
			if !azureStatic[k] {
				t.Fatalf("accepted, but Velero reads key %q", k)
			}
		}
		if keyVar != "" {
			if !AzureStorageKeyNames[keyVar] || creds[keyVar] == "" {
				t.Fatalf("accepted, but Velero finds no storage key in %q: %v", keyVar, creds)
			}
			return
		}
		if creds["AZURE_TENANT_ID"] == "" || creds["AZURE_CLIENT_ID"] == "" || creds["AZURE_CLIENT_SECRET"] == "" && creds["AZURE_CLIENT_CERTIFICATE"] == "" {
			t.Fatalf("accepted, but Velero would fall back to its own identity: %v", creds)
		}
	})
}
