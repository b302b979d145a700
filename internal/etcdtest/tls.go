package etcdtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
)

// TLSFiles are the PEM files of a TLS etcd (StartTLS): the CA that signed
// its certificates, a client certificate and key it accepts, and the name
// its server certificate is for.
type TLSFiles struct {
	CA, Cert, Key string
	ServerName    string
}

// StartTLS runs a one-member etcd for t that serves its clients over TLS
// only and asks each for a certificate of its CA. The CA and certificates
// are made here (crypto/x509, ECDSA P-256, valid for a day) and written to
// t's temporary folder; the server certificate is for 127.0.0.1 and
// ServerName.
func StartTLS(t testing.TB) (string, TLSFiles) {
	t.Helper()
	dir := t.TempDir()
	ca, caKey := NewCA(t, filepath.Join(dir, "ca.pem"))
	f := TLSFiles{CA: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(dir, "client.pem"), Key: filepath.Join(dir, "client-key.pem"),
		ServerName: "etcd.test"}
	sign(t, ca, caKey, "etcd server", []string{f.ServerName}, filepath.Join(dir, "server.pem"), filepath.Join(dir, "server-key.pem"))
	sign(t, ca, caKey, "ecntune agent", nil, f.Cert, f.Key)
	ep := start(t, "https", func(info *transport.TLSInfo) {
		info.CertFile, info.KeyFile = filepath.Join(dir, "server.pem"), filepath.Join(dir, "server-key.pem")
		info.TrustedCAFile, info.ClientCertAuth = f.CA, true
	})
	return ep, f
}

// NewCA makes a self-signed CA, writes its certificate to path (PEM) and
// returns it with its key: another CA than StartTLS's for a test that a
// wrong one is refused.
func NewCA(t testing.TB, path string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{SerialNumber: serial(t), Subject: pkix.Name{CommonName: "ecntune test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, path, "CERTIFICATE", der)
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return ca, key
}

// sign makes a certificate of ca for 127.0.0.1 and names (server and
// client use both) and writes it and its key.
func sign(t testing.TB, ca *x509.Certificate, caKey *ecdsa.PrivateKey, cn string, names []string, certPath, keyPath string) {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{SerialNumber: serial(t), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:    names, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, certPath, "CERTIFICATE", der)
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, keyPath, "EC PRIVATE KEY", kb)
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func serial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
