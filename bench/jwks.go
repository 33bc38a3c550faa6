package bench

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2a-gateway/a2a-gateway/authz"
	"github.com/a2a-gateway/a2a-gateway/internal/jose"
)

// Key id and lifetime of the benchmark's tokens. The lifetime only has to
// outlast a run; the key dies with it.
const (
	issuerKeyID = "a2abench-1"
	tokenTTL    = 24 * time.Hour
	jwksPrefix  = "/jwks/"
)

// issuer is the benchmark's identity provider: a signing key made for the
// run, and its JWKS served on loopback by the harness itself. Each gateway
// fetches from a path of its own, so the fetches are counted per gateway:
// a gateway that fetches keys while it is measured is caching them wrong.
type issuer struct {
	key       crypto.Signer
	algorithm string
	jwks      []byte
	base      string
	srv       *http.Server
	done      chan struct{}

	mu      sync.Mutex
	fetches map[string]*atomic.Int64
}

// startIssuer makes a key and serves its public half until close.
func startIssuer() (*issuer, error) {
	key, err := jose.GenerateKey()
	if err != nil {
		return nil, fmt.Errorf("issuer: %w", err)
	}
	alg, err := jose.SigningAlgorithm(key)
	if err != nil {
		return nil, fmt.Errorf("issuer: %w", err)
	}
	jwks, err := jose.PublicJWKS(key, issuerKeyID)
	if err != nil {
		return nil, fmt.Errorf("issuer: %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("issuer: listen: %w", err)
	}
	is := &issuer{
		key: key, algorithm: alg, jwks: jwks, base: "http://" + l.Addr().String(),
		done: make(chan struct{}), fetches: map[string]*atomic.Int64{},
	}
	is.srv = &http.Server{Handler: is, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(is.done)
		_ = is.srv.Serve(l)
	}()
	return is, nil
}

// ServeHTTP answers GET /jwks/{gateway} for the gateways registered with url.
func (is *issuer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutPrefix(r.URL.Path, jwksPrefix)
	n := is.counter(name)
	if !ok || n == nil {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet {
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	n.Add(1)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(is.jwks)
}

func (is *issuer) counter(name string) *atomic.Int64 {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.fetches[name]
}

// url registers a gateway and returns the JWKS URL it is to fetch.
func (is *issuer) url(gateway string) string {
	is.mu.Lock()
	defer is.mu.Unlock()
	if is.fetches[gateway] == nil {
		is.fetches[gateway] = new(atomic.Int64)
	}
	return is.base + jwksPrefix + gateway
}

// fetchCount is how often the gateway has fetched the JWKS so far.
func (is *issuer) fetchCount(gateway string) int64 {
	if n := is.counter(gateway); n != nil {
		return n.Load()
	}
	return 0
}

// tokens mints one bearer token per client, all of the benchmark tenant,
// each with a subject of its own, as separate callers of one tenant have.
func (is *issuer) tokens(clients int) ([]credential, error) {
	creds := make([]credential, clients)
	for i := range creds {
		tok, err := authz.MintToken(is.key, issuerKeyID, issuerURL, audience, benchTenant, fmt.Sprintf("client-%d", i), benchScopes, tokenTTL)
		if err != nil {
			return nil, fmt.Errorf("issuer: %w", err)
		}
		creds[i] = bearerCredential(tok)
	}
	return creds, nil
}

// close stops serving the JWKS.
func (is *issuer) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := is.srv.Shutdown(ctx)
	<-is.done
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("issuer: %w", err)
	}
	return nil
}
