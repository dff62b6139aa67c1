package credentials

import (
	"strings"
	"testing"

	. "gopkg.in/check.v1"
)

func Test(t *testing.T) { TestingT(t) }

type CredentialsSuite struct{}

var _ = Suite(&CredentialsSuite{})

const static = "aws_access_key_id = AKIA\naws_secret_access_key = s3cr3t\n"

// Each case: a credential file, the profile Velero uses, and the key
// (or, for a file refused as a whole, a fragment of why) the refusal names;
// "" accepts.
func (s *CredentialsSuite) TestAWS(c *C) {
	for _, t := range []struct {
		name, data, profile, refused string
	}{
		{"static default", "[default]\n" + static, "default", ""},
		{"with session token, comments, CRLF", "# mine\r\n[default] ; x\r\naws_access_key_id=AKIA\r\naws_secret_access_key=\"s\"\r\naws_session_token = t # c\r\n", "default", ""},
		{"config-file spelling", "[profile default]\n" + static, "default", ""},
		{"named profile, credentials spelling", "[default]\n" + static + "[team]\n" + static, "team", ""},
		{"named profile, config spelling", "[profile team]\n" + static, "team", ""},
		{"upper-case keys are read lower-cased", "[default]\nAWS_ACCESS_KEY_ID = A\nAws_Secret_Access_Key = S\n", "default", ""},
		{"colon separator", "[default]\naws_access_key_id: A\naws_secret_access_key: S\n", "default", ""},
		{"continuation of a static value", "[default]\n" + static + "aws_session_token = a\n  b\n", "default", ""},

		{"credential_process", "[default]\n" + static + "credential_process = sh -c 'touch /tmp/x'\n", "default", "credential_process"},
		{"credential_process upper-case", "[default]\n" + static + "CREDENTIAL_PROCESS = x\n", "default", "credential_process"},
		{"web identity", "[default]\nrole_arn = arn:aws:iam::1:role/r\nweb_identity_token_file = /var/run/secrets/eks.amazonaws.com/serviceaccount/token\n", "default", "role_arn"},
		{"instance metadata", "[default]\nrole_arn = arn:aws:iam::1:role/r\ncredential_source = Ec2InstanceMetadata\n", "default", "role_arn"},
		{"credential_source alone", "[default]\ncredential_source=EcsContainer\n", "default", "credential_source"},
		{"source_profile", "[default]\n" + static + "[profile b]\nsource_profile = default\nrole_arn = x\n", "b", "source_profile"},
		{"sso", "[default]\nsso_session = s\n[sso-session s]\nsso_start_url = https://x\n", "default", "sso_session"},
		{"forbidden key in another profile", "[default]\n" + static + "[profile other]\ncredential_process = x\n", "default", "credential_process"},
		{"indented property after a value is a property", "[default]\naws_access_key_id = A\n  credential_process = x\naws_secret_access_key = S\n", "default", "credential_process"},
		{"nested services", "[default]\n" + static + "services = s\n[services s]\ns3 =\n  endpoint_url = http://169.254.169.254\n", "default", "services"},
		{"nested under a static key", "[default]\naws_secret_access_key = S\naws_access_key_id =\n  x = y\n", "default", "aws_access_key_id"},
		{"endpoint_url", "[default]\n" + static + "endpoint_url = http://127.0.0.1\n", "default", "endpoint_url"},
		{"region is not a key", "[default]\n" + static + "region = us-east-1\n", "default", "region"},
		{"property outside a section", "aws_access_key_id = A\n[default]\n" + static, "default", "aws_access_key_id"},
		{"missing secret key", "[default]\naws_access_key_id = A\n", "default", "does not set both"},
		{"empty secret key", "[default]\naws_access_key_id = A\naws_secret_access_key = \"\"\n", "default", "does not set both"},
		{"no sections", "x", "default", "does not set both"},
		{"empty", "", "default", "does not set both"},
		{"profile missing", "[default]\n" + static, "team", "does not set both"},
		{"[team] not default", "[team]\n" + static, "default", "does not set both"},
		{"DEFAULT is another section", "[DEFAULT]\n" + static, "default", "does not set both"},
		{"lone quote crashes the SDK", "[default]\n" + static + "aws_session_token = \"\n", "default", "aws_session_token"},
	} {
		err := CheckAWS([]byte(t.data), t.profile)
		if t.refused == "" {
			c.Check(err, IsNil, Commentf("%s", t.name))
			continue
		}
		c.Assert(err, NotNil, Commentf("%s: accepted", t.name))
		e := err.(*Error)
		if e.Key != "" {
			c.Check(e.Key, Equals, t.refused, Commentf("%s: %v", t.name, err))
		} else {
			c.Check(strings.Contains(e.Why, t.refused), Equals, true, Commentf("%s: %v", t.name, err))
		}
	}
}

// The refusal reads as the admin guide shows it.
func (s *CredentialsSuite) TestAWSMessage(c *C) {
	err := Check("aws", []byte("[default]\n"+static+"credential_process = sh -c x\n"), nil)
	c.Assert(err, NotNil)
	c.Check(err.(*Error).Describe("Secret creds/cloud"), Equals, `key "credential_process" in profile default of Secret creds/cloud is not allowed: `+
		`the AWS SDK runs it as a command in the Velero server; only aws_access_key_id, aws_secret_access_key and aws_session_token are accepted`)
	err = Check("velero.io/aws", []byte("[team]\n"+static), map[string]string{"profile": "team"})
	c.Check(err, IsNil)
}

const serviceAccount = `{"type": "service_account", "project_id": "p", "private_key_id": "k", "private_key": "-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----\n",
 "client_email": "v@p.iam.gserviceaccount.com", "client_id": "1", "auth_uri": "https://accounts.google.com/o/oauth2/auth",
 "token_uri": "https://oauth2.googleapis.com/token", "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
 "client_x509_cert_url": "https://www.googleapis.com/robot/v1/metadata/x509/v", "universe_domain": "googleapis.com"}`

func (s *CredentialsSuite) TestGCP(c *C) {
	for _, t := range []struct{ name, data, refused string }{
		{"service account key", serviceAccount, ""},
		{"minimal service account", `{"type":"service_account","client_email":"a@b","private_key":"k"}`, ""},
		{"external account", `{"type":"external_account","audience":"a","subject_token_type":"t","token_url":"https://sts.googleapis.com/v1/token","credential_source":{"file":"/var/run/token"}}`, "type"},
		{"impersonated", `{"type":"impersonated_service_account","service_account_impersonation_url":"u","source_credentials":{}}`, "type"},
		{"authorized user", `{"type":"authorized_user","client_id":"c","client_secret":"s","refresh_token":"r"}`, "type"},
		{"no type", `{"client_email":"a@b","private_key":"k"}`, "type"},
		{"credential_source in a service account", `{"type":"service_account","client_email":"a@b","private_key":"k","credential_source":{"url":"http://169.254.169.254"}}`, "credential_source"},
		{"case variant", `{"type":"service_account","client_email":"a@b","private_key":"k","Token_URI":"http://127.0.0.1"}`, "Token_URI"},
		{"foreign token_uri", `{"type":"service_account","client_email":"a@b","private_key":"k","token_uri":"http://127.0.0.1:8091/token"}`, "token_uri"},
		{"foreign universe", `{"type":"service_account","client_email":"a@b","private_key":"k","universe_domain":"evil.internal"}`, "universe_domain"},
		{"no private key", `{"type":"service_account","client_email":"a@b"}`, "no client_email or no private_key"},
		{"duplicate key", `{"type":"service_account","TYPE":"external_account","client_email":"a@b","private_key":"k"}`, "twice"},
		{"non-string", `{"type":"service_account","client_email":"a@b","private_key":"k","project_id":1}`, "project_id"},
		{"not JSON", `[default]`, "not a JSON object"},
		{"trailing value", `{"type":"service_account","client_email":"a@b","private_key":"k"} {}`, "more than one"},
	} {
		err := CheckGCP([]byte(t.data))
		if t.refused == "" {
			c.Check(err, IsNil, Commentf("%s", t.name))
			continue
		}
		c.Assert(err, NotNil, Commentf("%s: accepted", t.name))
		e := err.(*Error)
		if e.Key != "" {
			c.Check(e.Key, Equals, t.refused, Commentf("%s: %v", t.name, err))
		} else {
			c.Check(strings.Contains(e.Why, t.refused), Equals, true, Commentf("%s: %v", t.name, err))
		}
	}
}

func (s *CredentialsSuite) TestAzure(c *C) {
	sp := "AZURE_SUBSCRIPTION_ID=s\nAZURE_TENANT_ID=t\nAZURE_CLIENT_ID=c\nAZURE_CLIENT_SECRET=x\nAZURE_RESOURCE_GROUP=g\nAZURE_CLOUD_NAME=AzurePublicCloud\n"
	for _, t := range []struct{ name, data, keyVar, refused string }{
		{"service principal", sp, "", ""},
		{"comments, export, quotes", "# x\nexport AZURE_TENANT_ID=\"t\"\nAZURE_CLIENT_ID='c' # c\nAZURE_CLIENT_SECRET: s\r\n", "", ""},
		{"inline certificate", "AZURE_TENANT_ID=t\nAZURE_CLIENT_ID=c\nAZURE_CLIENT_CERTIFICATE=\"-----BEGIN\\n\"\n", "", ""},
		{"storage key", "AZURE_STORAGE_ACCOUNT_ACCESS_KEY=k\n", "AZURE_STORAGE_ACCOUNT_ACCESS_KEY", ""},
		{"federated token", "AZURE_TENANT_ID=t\nAZURE_CLIENT_ID=c\nAZURE_FEDERATED_TOKEN_FILE=/var/run/secrets/azure/tokens/azure-identity-token\n", "", "AZURE_FEDERATED_TOKEN_FILE"},
		{"certificate path", "AZURE_TENANT_ID=t\nAZURE_CLIENT_ID=c\nAZURE_CLIENT_CERTIFICATE_PATH=/etc/kubernetes/azure.json\n", "", "AZURE_CLIENT_CERTIFICATE_PATH"},
		{"managed identity: client id only", "AZURE_CLIENT_ID=c\nAZURE_SUBSCRIPTION_ID=s\n", "", "workload or managed identity"},
		{"storage key without storageAccountKeyEnvVar", "AZURE_STORAGE_KEY=k\n", "", "workload or managed identity"},
		{"storageAccountKeyEnvVar unset in file", sp, "AZURE_STORAGE_KEY", "does not set"},
		{"storageAccountKeyEnvVar names another key", sp + "PATH=/x\n", "AZURE_CLIENT_SECRET", "PATH"},
		{"storageAccountKeyEnvVar not a storage key", sp, "AZURE_CLIENT_SECRET", "is not AZURE_STORAGE"},
		{"unknown key", sp + "HTTPS_PROXY=http://x\n", "", "HTTPS_PROXY"},
		{"not KEY=VALUE", sp + "garbage\n", "", "not KEY=VALUE"},
		{"lower-case is another key", "azure_tenant_id=t\n", "", "azure_tenant_id"},
	} {
		err := CheckAzure([]byte(t.data), t.keyVar)
		if t.refused == "" {
			c.Check(err, IsNil, Commentf("%s", t.name))
			continue
		}
		c.Assert(err, NotNil, Commentf("%s: accepted", t.name))
		e := err.(*Error)
		if e.Key != "" {
			c.Check(e.Key, Equals, t.refused, Commentf("%s: %v", t.name, err))
		} else {
			c.Check(strings.Contains(e.Why, t.refused), Equals, true, Commentf("%s: %v", t.name, err))
		}
	}
}

func (s *CredentialsSuite) TestProviders(c *C) {
	c.Check(Kind("aws"), Equals, AWS)
	c.Check(Kind("velero.io/gcp"), Equals, GCP)
	c.Check(Kind("Azure"), Equals, Azure)
	c.Check(Kind("example.com/s3"), Equals, "")
	c.Check(FullName("aws"), Equals, "velero.io/aws")
	c.Check(FullName("example.com/s3"), Equals, "example.com/s3")
	err := Check("example.com/s3", []byte("x"), nil)
	c.Assert(err, NotNil)
	c.Check(strings.Contains(err.Error(), "unchecked-credential-providers"), Equals, true)
	err = Check("aws", make([]byte, MaxSize+1), nil)
	c.Assert(err, NotNil)
	c.Check(strings.Contains(err.Error(), "at most 65536"), Equals, true)
}
