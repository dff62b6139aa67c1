package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

// kubeletClientUser is the user kube-apiserver is to the kubelet (for
// `kubectl logs`, exec and port-forward), as kubeadm names it; RBAC binds it
// to the built-in ClusterRole system:kubelet-api-admin.
const kubeletClientUser = "kube-apiserver-kubelet-client"

// nodePKI is the local node's small PKI: a CA the kubelet trusts for client
// certificates, and the client certificate kube-apiserver presents to the
// kubelet. envtest's own CAs are made while the control plane starts, too
// late for kube-apiserver's --kubelet-client-certificate flag.
type nodePKI struct {
	caCert, clientCert, clientKey string // file paths
}

// writeNodePKI writes, in dir, ca.crt (an ECDSA P-256 CA valid for 10
// years) and kubelet-client.crt/.key (a client certificate of
// kubeletClientUser, no group, signed by it) and returns
// their paths. Errors: files that cannot be written, a failing random
// source.
func writeNodePKI(dir string) (nodePKI, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nodePKI{}, err
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nodePKI{}, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "nacflow-local-node-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(10, 0, 0),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, IsCA: true, BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nodePKI{}, fmt.Errorf("creating the node CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nodePKI{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nodePKI{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: kubeletClientUser},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(1, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nodePKI{}, fmt.Errorf("creating the kubelet client certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nodePKI{}, err
	}
	p := nodePKI{caCert: filepath.Join(dir, "ca.crt"), clientCert: filepath.Join(dir, "kubelet-client.crt"), clientKey: filepath.Join(dir, "kubelet-client.key")}
	for _, f := range []struct {
		path, kind string
		der        []byte
		mode       os.FileMode
	}{{p.caCert, "CERTIFICATE", caDER, 0o644}, {p.clientCert, "CERTIFICATE", der, 0o644}, {p.clientKey, "EC PRIVATE KEY", keyDER, 0o600}} {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(&pem.Block{Type: f.kind, Bytes: f.der}), f.mode); err != nil {
			return nodePKI{}, err
		}
	}
	return p, nil
}
