package phases_test

import (
	"context"
	"net"
	"net/netip"
	"strings"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nacflow/nacflow/api/v1alpha1"
	"github.com/nacflow/nacflow/engine"
	"github.com/nacflow/nacflow/internal/policy/endpoint"
	"github.com/nacflow/nacflow/phases"
)

type ContentSuite struct{}

var _ = Suite(&ContentSuite{})

// tableResolver resolves from a table, without DNS.
type tableResolver map[string]string

func (t tableResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	a, ok := t[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return []netip.Addr{netip.MustParseAddr(a)}, nil
}

const staticAWS = "[default]\naws_access_key_id=A\naws_secret_access_key=S\n"

// runContent runs fn ("ValidateBSLSpec" or "CopySecret") of a registry
// built with o on a location of provider with config whose Secret holds
// data, and returns the location, what the OADP namespace holds afterwards
// and the error.
func runContent(c *C, fn string, o phases.Options, args map[string]any, provider string, config map[string]string, data string) (*v1alpha1.NonAdminBackupStorageLocation, *corev1.SecretList, error) {
	s := runtime.NewScheme()
	c.Assert(clientgoscheme.AddToScheme(s), IsNil)
	c.Assert(velerov1.AddToScheme(s), IsNil)
	c.Assert(v1alpha1.AddToScheme(s), IsNil)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "creds"}, Data: map[string][]byte{"cloud": []byte(data), "other": []byte("x")}}
	cl := fake.NewClientBuilder().WithScheme(s).WithObjects(secret).Build()
	reg, err := phases.NewRegistry(phases.Clients{Client: cl, APIReader: cl}, o)
	c.Assert(err, IsNil)
	f, ok := reg.Get(fn)
	c.Assert(ok, Equals, true)
	nabsl := &v1alpha1.NonAdminBackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "loc", UID: "uid-1"},
		Spec: v1alpha1.NonAdminBackupStorageLocationSpec{BackupStorageLocationSpec: &velerov1.BackupStorageLocationSpec{
			Provider: provider, Config: config,
			StorageType: velerov1.StorageType{ObjectStorage: &velerov1.ObjectStorageLocation{Bucket: "b"}},
			Credential:  &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "cloud"},
		}}}
	a := f.NewArgs()
	c.Assert(engine.DecodeArgs(args, a), IsNil)
	_, runErr := f.Run(context.Background(), &engine.Operation{Object: nabsl, OADPNamespace: "oadp", UUID: "u-1"}, a)
	copies := &corev1.SecretList{}
	c.Assert(cl.List(context.Background(), copies, client.InNamespace("oadp")), IsNil)
	return nabsl, copies, runErr
}

func (s *ContentSuite) TestValidate(c *C) {
	resolver := tableResolver{"s3.example.com": "203.0.113.1", "store.lab": "127.0.0.1"}
	o := phases.Options{Resolver: resolver}
	for _, t := range []struct {
		name     string
		o        phases.Options
		args     map[string]any
		provider string
		config   map[string]string
		data     string
		refused  string
	}{
		{"static aws", o, nil, "aws", map[string]string{"region": "r", "s3Url": "https://s3.example.com"}, staticAWS, ""},
		{"credential_process", o, nil, "aws", nil, staticAWS + "credential_process = sh -c 'touch /tmp/m'\n",
			`spec.backupStorageLocationSpec.credential: key "credential_process" in profile default of Secret creds/cloud is not allowed: the AWS SDK runs it as a command in the Velero server`},
		{"profile chosen by config", o, nil, "aws", map[string]string{"profile": "team"}, staticAWS, "profile team of Secret creds/cloud: it does not set both"},
		{"loopback s3Url", o, nil, "aws", map[string]string{"s3Url": "http://127.0.0.1:8091"}, staticAWS,
			"spec.backupStorageLocationSpec.config.s3Url: host 127.0.0.1 is loopback (127.0.0.0/8)"},
		{"name resolving to loopback", o, nil, "aws", map[string]string{"publicUrl": "http://store.lab:9000"}, staticAWS,
			"spec.backupStorageLocationSpec.config.publicUrl: host store.lab resolves to 127.0.0.1, is loopback"},
		{"flag allows the store", phases.Options{Resolver: resolver, Endpoints: compile(c, endpoint.Lists{AllowHosts: []string{"store.lab:9000"}})},
			nil, "aws", map[string]string{"s3Url": "http://store.lab:9000"}, staticAWS, ""},
		{"args allow the store", o, map[string]any{"endpoints": map[string]any{"allowHosts": []any{"store.lab:9000"}}},
			"aws", map[string]string{"s3Url": "http://store.lab:9000"}, staticAWS, ""},
		{"args deny beats flag allow", phases.Options{Resolver: resolver, Endpoints: compile(c, endpoint.Lists{AllowHosts: []string{"store.lab:9000"}})},
			map[string]any{"endpoints": map[string]any{"denyCIDRs": []any{"127.0.0.0/8"}}}, "aws", map[string]string{"s3Url": "http://store.lab:9000"}, staticAWS, "denied by the admin"},
		{"file path config", o, nil, "aws", map[string]string{"customerKeyEncryptionFile": "/credentials/cloud"}, staticAWS,
			`spec.backupStorageLocationSpec.config: key "customerKeyEncryptionFile" is not allowed`},
		{"unknown provider", o, nil, "example.com/s3", nil, "anything", `spec.backupStorageLocationSpec.provider: "example.com/s3": nacflow cannot check`},
		{"unknown provider allowed by name", phases.Options{UncheckedCredentialProviders: []string{"example.com/s3"}}, nil, "example.com/s3", map[string]string{"x": "y"}, "anything", ""},
		{"gcp external account", o, nil, "gcp", nil, `{"type":"external_account","credential_source":{"file":"/x"}}`, `key "type" in the service account key (JSON) of Secret creds/cloud`},
		{"azure federated token", o, nil, "azure", map[string]string{"storageAccount": "acct1"}, "AZURE_TENANT_ID=t\nAZURE_CLIENT_ID=c\nAZURE_FEDERATED_TOKEN_FILE=/x\n",
			`key "AZURE_FEDERATED_TOKEN_FILE" in line 3 of Secret creds/cloud`},
	} {
		nabsl, copies, err := runContent(c, "ValidateBSLSpec", t.o, t.args, t.provider, t.config, t.data)
		if t.refused == "" {
			c.Check(err, IsNil, Commentf("%s", t.name))
			c.Check(meta.IsStatusConditionTrue(nabsl.Status.Conditions, v1alpha1.ConditionAccepted), Equals, true, Commentf("%s", t.name))
			continue
		}
		c.Assert(err, NotNil, Commentf("%s: accepted", t.name))
		c.Check(engine.IsTerminal(err), Equals, true, Commentf("%s", t.name))
		c.Check(strings.Contains(err.Error(), t.refused), Equals, true, Commentf("%s: %v", t.name, err))
		cond := meta.FindStatusCondition(nabsl.Status.Conditions, v1alpha1.ConditionAccepted)
		c.Assert(cond, NotNil)
		c.Check(cond.Status, Equals, metav1.ConditionFalse)
		c.Check(cond.Message, Equals, err.Error())
		c.Check(copies.Items, HasLen, 0)
	}
}

// CopySecret checks the bytes it copies (the Secret may change after
// validation), copies only the credential's key, and a refusal leaves no
// copy.
func (s *ContentSuite) TestCopySecret(c *C) {
	_, copies, err := runContent(c, "CopySecret", phases.Options{}, nil, "aws", nil, staticAWS)
	c.Assert(err, IsNil)
	c.Assert(copies.Items, HasLen, 1)
	c.Check(copies.Items[0].Data, DeepEquals, map[string][]byte{"cloud": []byte(staticAWS)})

	nabsl, copies, err := runContent(c, "CopySecret", phases.Options{}, nil, "aws", nil, "[default]\nweb_identity_token_file = /var/run/secrets/token\nrole_arn = r\n")
	c.Assert(err, NotNil)
	c.Check(err, ErrorMatches, `spec.backupStorageLocationSpec.credential: key "web_identity_token_file" in profile default of Secret creds/cloud is not allowed: .*`)
	c.Check(copies.Items, HasLen, 0)
	c.Check(nabsl.Status.Phase, Equals, v1alpha1.NonAdminPhaseBackingOff)
}

func compile(c *C, l endpoint.Lists) endpoint.Policy {
	p, err := l.Compile("")
	c.Assert(err, IsNil)
	return p
}
