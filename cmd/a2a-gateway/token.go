package main

import (
	"crypto"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/a2a-gateway/a2a-gateway/authz"
	"github.com/a2a-gateway/a2a-gateway/internal/jose"
)

// Development token defaults: the demo's issuer and audience.
const (
	devIssuer   = "a2a-gateway-demo"
	devAudience = "a2a-gateway"
	devKeyID    = "demo"
)

// devScopes grants every operation scope, so a development token can try
// every A2A method.
var devScopes = []string{"a2a:tasks.read", "a2a:tasks.write", "a2a:tasks.cancel", "a2a:push.write", "a2a:card.extended"}

func runToken(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	keyPath := fs.String("key", "dev-key.pem", "PEM file of the signing key (Ed25519 or ECDSA)")
	generate := fs.Bool("generate", false, "create the key (and <key>.jwks.json with its public half) if it does not exist")
	issuer := fs.String("issuer", devIssuer, "iss claim")
	audience := fs.String("audience", devAudience, "aud claim")
	tenant := fs.String("tenant", "demo", "tenant claim")
	subject := fs.String("subject", "alice", "sub claim")
	scopes := fs.String("scopes", strings.Join(devScopes, " "), "space-separated scopes")
	ttl := fs.Duration("ttl", 12*time.Hour, "lifetime of the token")
	kid := fs.String("kid", devKeyID, "key id written into the token header")
	if err := fs.Parse(args); err != nil {
		return err
	}
	key, err := loadOrCreateKey(*keyPath, *kid, *generate)
	if err != nil {
		return err
	}
	tok, err := authz.MintToken(key, *kid, *issuer, *audience, *tenant, *subject, strings.Fields(*scopes), *ttl)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, tok)
	return nil
}

// loadOrCreateKey reads the signing key; with create, a missing key is
// generated and its public JWKS written beside it for the gateway's
// key_files.
func loadOrCreateKey(path, kid string, create bool) (crypto.Signer, error) {
	key, err := jose.LoadPrivateKeyPEM(path)
	if err == nil || !create || !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	key, err = jose.GenerateKey()
	if err != nil {
		return nil, err
	}
	if err := jose.WritePrivateKeyPEM(path, key); err != nil {
		return nil, err
	}
	jwks, err := jose.PublicJWKS(key, kid)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path+".jwks.json", jwks, 0o644); err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "generated %s and %s\n", path, path+".jwks.json")
	return key, nil
}
