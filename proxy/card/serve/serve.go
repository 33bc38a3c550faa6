// Package serve serves the agents' cards through the gateway: the public
// card of each agent and the extended card, rewritten to point at the
// gateway and describe its authentication, and the card-signing JWKS.
package serve

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/a2a-gateway/a2a-gateway/authz"
	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/jose"
	"github.com/a2a-gateway/a2a-gateway/internal/telemetry"
	"github.com/a2a-gateway/a2a-gateway/proxy"
	"github.com/a2a-gateway/a2a-gateway/proxy/card"
)

// apiKeyHeader is the header machine clients put their API key in.
const apiKeyHeader = "X-API-Key"

// Server re-serves each agent's card, rewritten to point at the
// gateway and to describe the gateway's authentication. Each agent has its
// own cache because each has its own TTL.
type Server struct {
	caches map[string]*card.Cache
	signer *card.Signer
	// jwks publishes the signer's public key (nil without a signer).
	jwks []byte
	// push is set when the gateway relays push notifications itself.
	push bool
	// security is the authentication every rewritten card describes.
	security card.Security
}

// New builds the card caches and, when configured, loads the card-signing
// key.
func New(cfg *config.Config, log *slog.Logger) (*Server, error) {
	cs := &Server{caches: make(map[string]*card.Cache, len(cfg.Agents)), push: cfg.Push.Enabled, security: gatewaySecurity(cfg.Auth)}
	var err error
	if cs.signer, cs.jwks, err = LoadSigner(cfg.CardSigning); err != nil {
		return nil, err
	}
	for _, a := range cfg.Agents {
		cs.caches[a.Name] = card.NewCache(&http.Client{Transport: telemetry.Transport(nil, "fetch card"), CheckRedirect: card.NoRedirects}, a.CardTTL.D(), cfg.Limits.MaxCardBytes, cfg.Limits.CardFetchTimeout.D(), log.With("agent", a.Name))
	}
	return cs, nil
}

// gatewaySecurity is what the rewritten cards say about authentication:
// only the kinds of credential the configuration accepts.
func gatewaySecurity(o authz.Options) card.Security {
	header := ""
	if len(o.APIKeys) > 0 {
		header = apiKeyHeader
	}
	return card.GatewaySecurity(len(o.Issuers) > 0, header)
}

// LoadSigner loads the card-signing key, if one is configured, and its JWKS.
func LoadSigner(sc config.CardSigningOptions) (*card.Signer, []byte, error) {
	if sc.KeyFile == "" {
		return nil, nil, nil
	}
	key, err := jose.LoadPrivateKeyPEM(sc.KeyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("card_signing.key_file: %w", err)
	}
	signer, err := card.NewSigner(key, sc.KeyID, sc.JWKSURL)
	if err != nil {
		return nil, nil, fmt.Errorf("card_signing: %w", err)
	}
	jwks, err := jose.PublicJWKS(key, sc.KeyID)
	if err != nil {
		return nil, nil, fmt.Errorf("card_signing: %w", err)
	}
	return signer, jwks, nil
}

// ServeJWKS publishes the card-signing public key.
func (cs *Server) ServeJWKS(w http.ResponseWriter, r *http.Request) {
	if cs.jwks == nil {
		a2a.WriteRESTError(w, a2a.RESTVersion(r), a2a.ErrMethodNotFound.WithMessage("this gateway does not sign cards"))
		return
	}
	w.Header().Set("Content-Type", "application/jwk-set+json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(cs.jwks)
}

// ServeCard serves the rewritten card, trying the configured card path and
// then the legacy agent.json.
func (cs *Server) ServeCard(w http.ResponseWriter, r *http.Request, a *proxy.Agent) {
	opts := cs.rewriteOptions(a)
	if v, explicit, err := a2a.NegotiateVersion(r); err == nil && explicit {
		opts.Version = v
	}
	cs.caches[a.Name].ServeCard(w, r, a.Name, cardURLs(a), opts)
}

// cardURLs are where an agent's card is fetched: the configured card path,
// then the legacy agent.json.
func cardURLs(a *proxy.Agent) []string {
	base := a.Upstream.String()
	urls := []string{base + a.Config().CardPath}
	if legacy := base + "/.well-known/agent.json"; legacy != urls[0] {
		urls = append(urls, legacy)
	}
	return urls
}

// GRPCOnly reports whether the gateway's own calls to the agent go over
// gRPC: it has a grpc section and its card offers no JSON-RPC interface.
// The proxy does not ask it about a bridged agent, whose card lists the
// bridge's offer: its calls go in the form the bridge says it speaks.
func (cs *Server) GRPCOnly(ctx context.Context, a *proxy.Agent) (bool, error) {
	if a.Config().GRPC == nil {
		return false, nil
	}
	raw, err := cs.caches[a.Name].Card(ctx, a.Name, cardURLs(a), cs.rewriteOptions(a))
	if err != nil {
		return false, err
	}
	return !card.OffersJSONRPC(raw), nil
}

// GRPCUpstream is the address of the gRPC interface the agent's own card
// names.
func (cs *Server) GRPCUpstream(ctx context.Context, a *proxy.Agent) (string, error) {
	return cs.caches[a.Name].GRPCAddress(ctx, cardURLs(a))
}

// rewriteOptions says how an agent's cards are re-targeted at the gateway.
func (cs *Server) rewriteOptions(a *proxy.Agent) card.RewriteOptions {
	o := card.RewriteOptions{
		UpstreamBase: a.Upstream,
		PublicBase:   a.PublicBase,
		Security:     cs.security,
		Signer:       cs.signer,
	}
	if g := a.Config().GRPC; g != nil {
		o.GRPCAddress = g.PublicAddress
	}
	if b := a.Bridge; b != nil {
		o.Bridge = &card.Bridge{Agent: b.Agent, Offer: b.Offer, JSONRPCPath: a.Config().JSONRPCPath, RESTPath: a.Config().RESTPath}
	}
	if cs.push && !a.Config().Push.ForwardConfigs {
		// The gateway's relay serves push for every agent it fronts.
		on := true
		o.PushNotifications = &on
	}
	return o
}

// RewriteExtendedCard is the stage that rewrites the extended card like the
// public one. The extended card is served to authenticated callers only, so
// it is cached by the caller alone (private) and revalidated with its ETag.
// Through a bridge the card is observed in the agent's form and written
// here in the caller's: what the forwarder relayed of it is discarded.
func (cs *Server) RewriteExtendedCard(next proxy.Handler) proxy.Handler {
	return func(w http.ResponseWriter, r *http.Request, s *proxy.Scope) error {
		if s.Op.Method != a2a.MethodExtendedCard {
			return next(w, r, s)
		}
		var raw []byte
		s.AddObserver(proxy.ObserverFunc(func(context.Context, *proxy.Scope, a2a.Event, []byte) error {
			raw = s.Result()
			return nil
		}))
		rec := proxy.NewRecorder()
		if err := next(rec, r, s); err != nil {
			return err
		}
		if raw == nil || (rec.Status() != http.StatusOK && s.Agent.Bridge == nil) {
			rec.CopyTo(w) // the agent's error, as the gateway relayed it
			return nil
		}
		opts := cs.rewriteOptions(s.Agent)
		opts.Version = s.Op.Version
		opts.GRPC = s.Op.Binding == a2a.BindingGRPC
		rewritten, err := card.Rewrite(raw, opts)
		if err != nil {
			s.Log().Warn("extended card could not be rewritten", "err", err)
			return a2a.ErrInvalidAgentResponse
		}
		if s.Op.Binding == a2a.BindingGRPC {
			return proxy.WriteGRPCAnswer(w, s, rewritten)
		}
		body := rewritten
		if s.Op.Binding == a2a.BindingJSONRPC {
			body = a2a.RPCResult(s.Op.RPCID, rewritten)
		}
		sum := sha256.Sum256(body)
		etag := `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("ETag", etag)
		h.Set("Cache-Control", "private, no-cache")
		h.Set("Vary", "A2A-Version, Authorization")
		if r.Method == http.MethodGet && r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return nil
		}
		h.Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
		return nil
	}
}
