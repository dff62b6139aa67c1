package controllers_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	. "gopkg.in/check.v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

// contentAttack is a location whose credential file or config would make
// Velero act with more than the tenant's power.
type contentAttack struct {
	name     string
	provider string
	config   map[string]string
	cred     string
	// refused is what Accepted's message must say (the field and key).
	refused string
}

const staticCreds = "[default]\naws_access_key_id=tenant\naws_secret_access_key=tenant-secret\n"

// TestCredentialAndEndpointAttacks: a credential file that makes the SDK run
// a command, borrow the Velero pod's web identity or instance metadata
// credentials, a GCP external_account, an Azure federated token, and an
// s3Url on loopback or the metadata address are each refused before Velero
// sees them: Accepted=False naming the key, a Warning event, and no Velero
// BSL, no copied Secret (nothing in the OADP namespace at all).
func (s *ControllerSuite) TestCredentialAndEndpointAttacks(c *C) {
	ctx := context.Background()
	for _, a := range []contentAttack{
		{"credential-process", "aws", map[string]string{"region": "us-east-1"},
			staticCreds + "credential_process = sh -c 'touch /tmp/pwned'\n",
			`spec.backupStorageLocationSpec.credential: key "credential_process" in profile default of Secret creds/cloud is not allowed: the AWS SDK runs it as a command in the Velero server`},
		{"web-identity", "aws", map[string]string{"region": "us-east-1"},
			"[default]\nweb_identity_token_file = /var/run/secrets/eks.amazonaws.com/serviceaccount/token\nrole_arn = arn:aws:iam::123456789012:role/velero\n",
			`spec.backupStorageLocationSpec.credential: key "web_identity_token_file" in profile default of Secret creds/cloud is not allowed`},
		{"instance-metadata", "aws", map[string]string{"region": "us-east-1"},
			"[default]\ncredential_source = Ec2InstanceMetadata\nrole_arn = arn:aws:iam::123456789012:role/velero\n",
			`spec.backupStorageLocationSpec.credential: key "credential_source" in profile default of Secret creds/cloud is not allowed: the AWS SDK takes the Velero server's own credentials`},
		{"gcp-external-account", "gcp", nil,
			`{"type": "external_account", "audience": "//iam.googleapis.com/x", "subject_token_type": "urn:ietf:params:oauth:token-type:jwt", "token_url": "https://sts.googleapis.com/v1/token", "credential_source": {"file": "/var/run/secrets/tokens/gcp-ksa/token"}}`,
			`spec.backupStorageLocationSpec.credential: key "type" in the service account key (JSON) of Secret creds/cloud is not allowed: type "external_account"`},
		{"azure-federated-token", "azure", map[string]string{"storageAccount": "tenant", "resourceGroup": "rg", "subscriptionId": "6f0d3a52-3c1e-4f8e-9a52-4b7a0d6c2e11"},
			"AZURE_TENANT_ID=t\nAZURE_CLIENT_ID=c\nAZURE_FEDERATED_TOKEN_FILE=/var/run/secrets/azure/tokens/azure-identity-token\n",
			`spec.backupStorageLocationSpec.credential: key "AZURE_FEDERATED_TOKEN_FILE" in line 3 of Secret creds/cloud is not allowed`},
		{"s3url-loopback", "aws", map[string]string{"region": "us-east-1", "s3Url": "http://127.0.0.1:8091"}, staticCreds,
			`spec.backupStorageLocationSpec.config.s3Url: host 127.0.0.1 is loopback (127.0.0.0/8), denied by default`},
		{"s3url-metadata", "aws", map[string]string{"region": "us-east-1", "s3Url": "http://169.254.169.254/latest/meta-data"}, staticCreds,
			`spec.backupStorageLocationSpec.config.s3Url: host 169.254.169.254 is the cloud metadata service (169.254.169.254/32), denied by default`},
		{"s3url-private", "aws", map[string]string{"region": "us-east-1", "s3Url": "http://10.96.0.10:9000"}, staticCreds,
			`spec.backupStorageLocationSpec.config.s3Url: host 10.96.0.10 is private (10.0.0.0/8), denied by default`},
		{"azure-account-host", "azure", map[string]string{"storageAccount": "127.0.0.1:8091/x?", "resourceGroup": "rg", "subscriptionId": "6f0d3a52-3c1e-4f8e-9a52-4b7a0d6c2e11"},
			"AZURE_STORAGE_ACCOUNT_ACCESS_KEY=k\nAZURE_CLOUD_NAME=AzurePublicCloud\n",
			`spec.backupStorageLocationSpec.config: key "storageAccount": "127.0.0.1:8091/x?" is not a storage account name: 3 to 24 lower-case letters and digits`},
		{"aws-region-host", "aws", map[string]string{"region": "169.254.169.254/latest/meta-data#"}, staticCreds,
			`spec.backupStorageLocationSpec.config: key "region": "169.254.169.254/latest/meta-data#" is not a region name`},
		{"credentials-file-config", "aws", map[string]string{"region": "us-east-1", "credentialsFile": "/credentials/cloud"}, staticCreds,
			`spec.backupStorageLocationSpec.config: key "credentialsFile" is not allowed`},
	} {
		ns := createNamespace(c, "content")
		c.Assert(testClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"},
			Data: map[string][]byte{"cloud": []byte(a.cred)}}), IsNil)
		l := nabslOn(ns, a.name, "content-"+a.name, "")
		l.Spec.BackupStorageLocationSpec.Provider = a.provider
		l.Spec.BackupStorageLocationSpec.Config = a.config
		c.Assert(testClient.Create(ctx, l), IsNil)

		msg := refusedByController(c, l)
		c.Check(strings.Contains(msg, a.refused), Equals, true, Commentf("%s: %s", a.name, msg))
		got := getNABSL(c, l)
		cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionAccepted)
		c.Assert(cond, NotNil, Commentf(a.name))
		c.Check(cond.Status, Equals, metav1.ConditionFalse, Commentf(a.name))
		c.Check(strings.Contains(cond.Message, a.refused), Equals, true, Commentf("%s: %s", a.name, cond.Message))
		c.Check(got.Status.Phase, Equals, v1alpha1.NonAdminPhaseBackingOff, Commentf(a.name))
		eventually(c, 10*time.Second, func() (bool, string) {
			evs := eventStory(c, ns, l.Name)
			for _, e := range evs {
				if strings.HasPrefix(e, corev1.EventTypeWarning+" ") && strings.Contains(e, a.refused) {
					return true, ""
				}
			}
			return false, joined(evs)
		})
		nothingCreatedFor(c, s.oadp, v1alpha1.DerivedNACUUID(got), a.name)
		req, bsl, sec := bslObjects(c, s.oadp, v1alpha1.DerivedNACUUID(got))
		c.Check(req, IsNil, Commentf("%s: an approval request was made", a.name))
		c.Check(bsl, IsNil)
		c.Check(sec, IsNil)
	}
}

// TestRotationToForbiddenCredential: an accepted location whose Secret is
// rotated to a credential_process loses its Velero BSL and copied Secret at
// once (Accepted=False naming the key); rotated back to static keys, it is
// in force again without a new approval.
func (s *ControllerSuite) TestRotationToForbiddenCredential(c *C) {
	ctx := context.Background()
	ns := tenantWithCreds(c)
	l := nabslOn(ns, "rotated", "rotated-bucket", "")
	c.Assert(testClient.Create(ctx, l), IsNil)
	s.approveAndAvailable(c, l)
	nacuuid := v1alpha1.DerivedNACUUID(getNABSL(c, l))

	secret := &corev1.Secret{}
	c.Assert(testClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "creds"}, secret), IsNil)
	before := secret.DeepCopy()
	secret.Data["cloud"] = []byte(staticCreds + "credential_process = /bin/sh -c 'id > /tmp/pwned'\n")
	c.Assert(testClient.Patch(ctx, secret, client.MergeFrom(before)), IsNil)
	var got *v1alpha1.NonAdminBackupStorageLocation
	eventually(c, 10*time.Second, func() (bool, string) {
		_, bsl, sec := bslObjects(c, s.oadp, nacuuid)
		got = getNABSL(c, l)
		return bsl == nil && sec == nil && got.Status.Phase == v1alpha1.NonAdminPhaseBackingOff,
			fmt.Sprintf("bsl %v, copy %v, phase %s", bsl != nil, sec != nil, got.Status.Phase)
	})
	cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionAccepted)
	c.Assert(cond, NotNil)
	c.Check(cond.Status, Equals, metav1.ConditionFalse)
	c.Check(strings.Contains(cond.Message, `key "credential_process" in profile default of Secret creds/cloud`), Equals, true, Commentf("%s", cond.Message))

	c.Assert(testClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "creds"}, secret), IsNil)
	before = secret.DeepCopy()
	secret.Data["cloud"] = []byte(staticCreds)
	c.Assert(testClient.Patch(ctx, secret, client.MergeFrom(before)), IsNil)
	// The objects are made first, the status written after them in the
	// same reconcile: wait for both.
	eventually(c, 10*time.Second, func() (bool, string) {
		_, bsl, sec := bslObjects(c, s.oadp, nacuuid)
		accepted := meta.IsStatusConditionTrue(getNABSL(c, l).Status.Conditions, v1alpha1.ConditionAccepted)
		return bsl != nil && sec != nil && string(sec.Data["cloud"]) == staticCreds && accepted,
			fmt.Sprintf("not back in force: bsl %v, copy %v, Accepted=True %v", bsl != nil, sec != nil, accepted)
	})
}

// fakeDNS is the integration controllers' resolver: names map to one
// address each, changeable while the controller runs; unknown names do not
// exist. No test needs real DNS.
type fakeDNS struct {
	mu    sync.Mutex
	names map[string]string
}

// testDNS resolves every test controller's endpoint host names.
var testDNS = &fakeDNS{names: map[string]string{}}

func (f *fakeDNS) set(host, addr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.names[host] = addr
}

func (f *fakeDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.names[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return []netip.Addr{netip.MustParseAddr(a)}, nil
}

// TestEndpointRenamedAfterAcceptance: an accepted location whose s3Url's
// name comes to resolve to the metadata address, with no change to the
// location or its Secret, is validated again within the credential check
// period and withdrawn (Velero BSL and copy removed, Accepted=False naming
// the address); once the name resolves to a public address again, it is
// back in force.
func (s *ControllerSuite) TestEndpointRenamedAfterAcceptance(c *C) {
	ctx := context.Background()
	testDNS.set("store.rebind.test", "203.0.113.7")
	ns := tenantWithCreds(c)
	l := nabslOn(ns, "renamed", "renamed-bucket", "")
	l.Spec.BackupStorageLocationSpec.Config = map[string]string{"region": "us-east-1", "s3Url": "http://store.rebind.test:9000"}
	c.Assert(testClient.Create(ctx, l), IsNil)
	s.approveAndAvailable(c, l)
	nacuuid := v1alpha1.DerivedNACUUID(getNABSL(c, l))

	testDNS.set("store.rebind.test", "169.254.169.254")
	var got *v1alpha1.NonAdminBackupStorageLocation
	eventually(c, 15*time.Second, func() (bool, string) {
		_, bsl, sec := bslObjects(c, s.oadp, nacuuid)
		got = getNABSL(c, l)
		return bsl == nil && sec == nil && got.Status.Phase == v1alpha1.NonAdminPhaseBackingOff,
			fmt.Sprintf("bsl %v, copy %v, phase %s", bsl != nil, sec != nil, got.Status.Phase)
	})
	cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionAccepted)
	c.Assert(cond, NotNil)
	c.Check(cond.Message, Matches, `spec.backupStorageLocationSpec.config.s3Url: host store.rebind.test resolves to 169.254.169.254, is the cloud metadata service .*`)

	testDNS.set("store.rebind.test", "203.0.113.8")
	eventually(c, 15*time.Second, func() (bool, string) {
		_, bsl, sec := bslObjects(c, s.oadp, nacuuid)
		return bsl != nil && sec != nil, "not back in force"
	})
}
