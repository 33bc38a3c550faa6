package demoagent

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// card builds the agent card. It is a hybrid: the 0.3 fields (url,
// preferredTransport, additionalInterfaces, protocolVersion) and the 1.0
// supportedInterfaces side by side, so clients of either version can read
// it. Every HTTP interface shares the base URL: 0.3 HTTP+JSON adds /v1
// itself; the gRPC interfaces, when set, name the gRPC server.
func (a *Agent) card(extended bool) obj {
	base := a.base()
	iface := func(binding string, v a2a.Version) obj {
		return obj{"url": base, "protocolBinding": binding, "protocolVersion": v.String()}
	}
	additional := []obj{
		{"url": base, "transport": bindingJSONRPC},
		{"url": base, "transport": bindingHTTPJSON},
	}
	supported := []obj{
		iface(bindingJSONRPC, a2a.V10), iface(bindingHTTPJSON, a2a.V10),
		iface(bindingJSONRPC, a2a.V03), iface(bindingHTTPJSON, a2a.V03),
	}
	if g := a.grpcAddress(); g != "" {
		// gRPC interfaces name a bare host:port, which the SDKs dial as is.
		additional = append(additional, obj{"url": g, "transport": bindingGRPC})
		supported = append(supported,
			obj{"url": g, "protocolBinding": bindingGRPC, "protocolVersion": a2a.V10.String()},
			obj{"url": g, "protocolBinding": bindingGRPC, "protocolVersion": a2a.V03.String()})
	}
	return obj{
		"name":        a.name,
		"description": "Demonstration A2A agent: the first word of a message picks a scenario that drives the task into any state.",
		"version":     "1.0.0",

		"url":                               base,
		"preferredTransport":                bindingJSONRPC,
		"additionalInterfaces":              additional,
		"protocolVersion":                   cardProtocolVersion03,
		"supportsAuthenticatedExtendedCard": true,

		"supportedInterfaces": supported,
		"capabilities": obj{
			"streaming":              !a.noStream,
			"pushNotifications":      a.push,
			"extendedAgentCard":      true,
			"stateTransitionHistory": false,
		},
		// One scheme in both shapes: 0.3 reads type/scheme, 1.0 the
		// one-of member. The agent itself accepts any caller, so the card
		// declares no requirement.
		"securitySchemes": obj{"bearer": obj{
			"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
			"httpAuthSecurityScheme": obj{"scheme": "Bearer", "bearerFormat": "JWT"},
		}},
		"defaultInputModes":  []string{"text/plain", "application/json"},
		"defaultOutputModes": []string{"text/plain", "application/json"},
		"skills":             skills(extended),
	}
}

func skills(extended bool) []obj {
	var out []obj
	for _, s := range scenarios() {
		out = append(out, obj{
			"id": s.word, "name": s.name, "description": s.description,
			"tags": []string{"demo", "scenario"}, "examples": []string{s.example},
		})
	}
	if extended {
		out = append(out, obj{
			"id": "extended-report", "name": "Extended report",
			"description": "Listed only on the extended card, for callers the agent knows.",
			"tags":        []string{"demo", "extended"}, "examples": []string{"complete report"},
		})
	}
	return out
}

// serveCard serves the public card with an ETag; the base URL can change
// at run time, so caches must revalidate.
func (a *Agent) serveCard(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "the agent card is read with GET", http.StatusMethodNotAllowed)
		return
	}
	b, err := json.Marshal(a.card(false))
	if err != nil {
		a.log.Error("agent card not encoded", "err", err)
		a2a.WriteRESTError(w, a2a.RESTVersion(r), a2a.ErrInternal)
		return
	}
	sum := sha256.Sum256(b)
	etag := `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("Cache-Control", "no-cache")
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", jsonContentType)
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(b)
	}
}
