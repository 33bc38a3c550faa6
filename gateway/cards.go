package gateway

import (
	"log/slog"
	"net/http"

	"github.com/a2a-gateway/a2a-gateway/card"
	"github.com/a2a-gateway/a2a-gateway/config"
	"github.com/a2a-gateway/a2a-gateway/proxy"
)

// apiKeyHeader is the header machine clients put their API key in.
const apiKeyHeader = "X-API-Key"

// cardServer re-serves each agent's card, rewritten to point at the
// gateway and to describe the gateway's authentication. Each agent has its
// own cache because each has its own TTL.
type cardServer struct {
	caches map[string]*card.Cache
}

func newCardServer(cfg *config.Config, log *slog.Logger) *cardServer {
	cs := &cardServer{caches: make(map[string]*card.Cache, len(cfg.Agents))}
	for _, a := range cfg.Agents {
		cs.caches[a.Name] = card.NewCache(&http.Client{CheckRedirect: noRedirects}, a.CardTTL.D(), log.With("agent", a.Name))
	}
	return cs
}

// ServeCard serves the rewritten card, trying the configured card path and
// then the legacy agent.json.
func (cs *cardServer) ServeCard(w http.ResponseWriter, r *http.Request, a *proxy.Agent) {
	base := a.Upstream.String()
	urls := []string{base + a.Config().CardPath}
	if legacy := base + "/.well-known/agent.json"; legacy != urls[0] {
		urls = append(urls, legacy)
	}
	cs.caches[a.Name].ServeCard(w, r, a.Name, urls, card.RewriteOptions{
		UpstreamBase: a.Upstream,
		PublicBase:   a.PublicBase,
		Security:     card.BearerJWT(apiKeyHeader),
	})
}

// noRedirects keeps card fetches on the configured agent: a redirect could
// point the gateway at an internal address.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
