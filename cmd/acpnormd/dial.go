package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// clientFlags say how a command connects to a running acpnormd: plaintext
// (the default, for loopback), TLS, mutual TLS, and a bearer token.
type clientFlags struct {
	tls                       bool
	caFile, certFile, keyFile string
	serverName, tokenFile     string
}

func (c *clientFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&c.tls, "tls", false, "connect with TLS, trusting the system's CA bundle (implied by --ca-file, --cert-file, --server-name)")
	fs.StringVar(&c.caFile, "ca-file", "", "PEM CA bundle: connect with TLS and trust these roots")
	fs.StringVar(&c.certFile, "cert-file", "", "PEM client certificate for mutual TLS (with --key-file)")
	fs.StringVar(&c.keyFile, "key-file", "", "PEM client key for mutual TLS (with --cert-file)")
	fs.StringVar(&c.serverName, "server-name", "", "name to verify in the server's certificate (default: the host of the address)")
	fs.StringVar(&c.tokenFile, "token-file", "", "file holding a bearer token to send (authorization: Bearer ...)")
}

// set reports whether any of the flags was given.
func (c *clientFlags) set() bool { return *c != clientFlags{} }

// dialOptions turns the flags into gRPC dial options.
func (c *clientFlags) dialOptions() ([]grpc.DialOption, error) {
	secure := c.tls || c.caFile != "" || c.certFile != "" || c.serverName != ""
	creds := insecure.NewCredentials()
	if secure {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.serverName}
		if c.caFile != "" {
			pem, err := os.ReadFile(c.caFile)
			if err != nil {
				return nil, err
			}
			cfg.RootCAs = x509.NewCertPool()
			if !cfg.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("--ca-file %s: no PEM certificate in it", c.caFile)
			}
		}
		if (c.certFile == "") != (c.keyFile == "") {
			return nil, usagef("--cert-file and --key-file go together")
		}
		if c.certFile != "" {
			cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
			if err != nil {
				return nil, fmt.Errorf("client certificate: %w", err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		creds = credentials.NewTLS(cfg)
	} else if c.keyFile != "" {
		return nil, usagef("--key-file and --cert-file go together")
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(creds)}
	if c.tokenFile != "" {
		raw, err := os.ReadFile(c.tokenFile)
		if err != nil {
			return nil, err
		}
		token := strings.TrimSpace(string(raw))
		if token == "" || strings.ContainsAny(token, "\r\n") {
			return nil, errors.New("--token-file " + c.tokenFile + ": the token is empty or spans lines")
		}
		opts = append(opts, grpc.WithPerRPCCredentials(bearerToken{token: token, secure: secure}))
	}
	return opts, nil
}

// bearerToken sends `authorization: Bearer <token>` with every call. With
// TLS, gRPC refuses to send it over a connection that lacks transport
// security; without (loopback) it goes in the clear.
type bearerToken struct {
	token  string
	secure bool
}

func (b bearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

func (b bearerToken) RequireTransportSecurity() bool { return b.secure }
