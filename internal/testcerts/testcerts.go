// Package testcerts writes the certificates, keys and tokens that the TLS
// and token tests of the clients use, made fresh at test time with
// crypto/x509: a CA, a server certificate for loopback signed by it, two
// client certificates signed by it (one named by its subject's common
// name, one by a SPIFFE URI SAN), client certificates whose common names
// are another certificate's URI or DNS SAN or "default" (identities of
// different kinds that must not collide), and a second CA with its own
// client certificate (what a server must refuse).
package testcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// The files Write creates in its directory.
const (
	CA          = "ca.pem"       // the CA that signed server and client
	ServerCert  = "server.pem"   // for 127.0.0.1, ::1 and localhost
	ServerKey   = "server.key"   //
	ClientCert  = "client.pem"   // a client certificate the CA signed
	ClientKey   = "client.key"   //
	ClientBCert = "client-b.pem" // another client certificate the CA signed, with a URI SAN (ClientBURI)
	ClientBKey  = "client-b.key" //
	ClientCN    = "acpnorm test client"
	ClientBURI  = "spiffe://acpnorm.test/team-b"
	// Client certificates whose identity texts are another kind's: what
	// a CA that lets a holder choose its subject would sign.
	ClientCNURICert = "client-cn-uri.pem"  // no SAN, subject CN ClientBURI
	ClientCNURIKey  = "client-cn-uri.key"  //
	ClientDNSCert   = "client-dns.pem"     // a DNS SAN (ClientDNS) and no URI SAN
	ClientDNSKey    = "client-dns.key"     //
	ClientCNDNSCert = "client-cn-dns.pem"  // no SAN, subject CN ClientDNS
	ClientCNDNSKey  = "client-cn-dns.key"  //
	ClientDefCert   = "client-default.pem" // no SAN, subject CN ClientDefCN
	ClientDefKey    = "client-default.key" //
	ClientDNS       = "client-d.acpnorm.test"
	ClientDefCN     = "default"          // the name of the token identity by default
	OtherCA         = "other-ca.pem"     // a CA nobody trusts
	OtherCert       = "other-client.pem" // a client certificate OtherCA signed
	OtherKey        = "other-client.key" //
	Token           = "token"            // a random bearer token
	WrongToken      = "wrong-token"      // another one
	ServerName      = "localhost"        // a DNS name in the server certificate
	validFor        = 24 * time.Hour
	clockSkew       = time.Hour
	keyFileMode     = 0o600
)

type issuer struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// Write creates dir if needed and writes every file named above into it.
func Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ca, err := newCA("acpnorm test CA")
	if err != nil {
		return err
	}
	other, err := newCA("acpnorm untrusted test CA")
	if err != nil {
		return err
	}
	steps := []func() error{
		func() error { return writeCert(dir, CA, ca.cert.Raw) },
		func() error { return writeCert(dir, OtherCA, other.cert.Raw) },
		func() error {
			return leaf(dir, ServerCert, ServerKey, ca, &x509.Certificate{
				Subject:     pkix.Name{CommonName: "acpnormd test server"},
				DNSNames:    []string{ServerName},
				IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
				ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			})
		},
		func() error {
			return leaf(dir, ClientCert, ClientKey, ca, &x509.Certificate{
				Subject:     pkix.Name{CommonName: ClientCN},
				ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			})
		},
		func() error {
			uri, err := url.Parse(ClientBURI)
			if err != nil {
				return err
			}
			return leaf(dir, ClientBCert, ClientBKey, ca, &x509.Certificate{
				Subject:     pkix.Name{CommonName: "acpnorm test client b"},
				DNSNames:    []string{"client-b.acpnorm.test"},
				URIs:        []*url.URL{uri},
				ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			})
		},
		func() error {
			return leaf(dir, ClientCNURICert, ClientCNURIKey, ca, &x509.Certificate{
				Subject:     pkix.Name{CommonName: ClientBURI},
				ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			})
		},
		func() error {
			return leaf(dir, ClientDNSCert, ClientDNSKey, ca, &x509.Certificate{
				Subject:     pkix.Name{CommonName: "acpnorm test client d"},
				DNSNames:    []string{ClientDNS},
				ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			})
		},
		func() error {
			return leaf(dir, ClientCNDNSCert, ClientCNDNSKey, ca, &x509.Certificate{
				Subject:     pkix.Name{CommonName: ClientDNS},
				ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			})
		},
		func() error {
			return leaf(dir, ClientDefCert, ClientDefKey, ca, &x509.Certificate{
				Subject:     pkix.Name{CommonName: ClientDefCN},
				ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			})
		},
		func() error {
			return leaf(dir, OtherCert, OtherKey, other, &x509.Certificate{
				Subject:     pkix.Name{CommonName: "acpnorm untrusted client"},
				ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			})
		},
		func() error { return writeToken(dir, Token) },
		func() error { return writeToken(dir, WrongToken) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

func newCA(name string) (*issuer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(validFor),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &issuer{cert: cert, key: key}, nil
}

func leaf(dir, certName, keyName string, by *issuer, tmpl *x509.Certificate) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	sn, err := serial()
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl.SerialNumber = sn
	tmpl.NotBefore = now.Add(-clockSkew)
	tmpl.NotAfter = now.Add(validFor)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, by.cert, &key.PublicKey, by.key)
	if err != nil {
		return err
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := writeCert(dir, certName, der); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, keyName), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}), keyFileMode)
}

func writeCert(dir, name string, der []byte) error {
	return os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

func writeToken(dir, name string) error {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name), []byte(hex.EncodeToString(b)+"\n"), keyFileMode)
}
