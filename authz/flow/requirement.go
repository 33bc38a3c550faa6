package flow

import (
	"net/url"
	"strings"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// requirement is what an agent says it needs in its auth-required status
// message. It is read from the first data part of the message that names
// any of these members, or else from the message's metadata:
//
//	scheme            string, e.g. "oauth2", "bearer", "apiKey"
//	scopes            array of strings, or one space-separated string
//	authorizationUrl  http(s) URL (also spelled authorization_url)
//
// Anything else, and values over the bounds below, are left out: the
// requirement is shown to clients, never trusted.
type requirement struct {
	Scheme           string
	Scopes           []string
	AuthorizationURL string
}

// Bounds on a requirement.
const (
	maxSchemeBytes = 64
	maxScopes      = 32
	maxScopeBytes  = 256
	maxURLBytes    = 2048
)

// parseRequirement reads the requirement of a task or status update of
// version v; result is the unwrapped result object (a REST body, or a
// JSON-RPC result).
func parseRequirement(result []byte, v a2a.Version, kind a2a.EventKind) requirement {
	obj, err := a2a.EventObject(result, v, kind)
	if err != nil {
		return requirement{}
	}
	status, _ := obj["status"].(map[string]any)
	msg, _ := status["message"].(map[string]any)
	if msg == nil {
		return requirement{}
	}
	parts, _ := msg["parts"].([]any)
	for _, p := range parts {
		pm, _ := p.(map[string]any)
		if d, ok := pm["data"].(map[string]any); ok {
			if r, ok := readRequirement(d); ok {
				return r
			}
		}
	}
	if md, ok := msg["metadata"].(map[string]any); ok {
		r, _ := readRequirement(md)
		return r
	}
	return requirement{}
}

// readRequirement reads the members of one object; ok says whether it
// named any.
func readRequirement(d map[string]any) (requirement, bool) {
	var r requirement
	_, hasScheme := d["scheme"]
	_, hasScopes := d["scopes"]
	u, hasURL := d["authorizationUrl"]
	if !hasURL {
		u, hasURL = d["authorization_url"]
	}
	if !hasScheme && !hasScopes && !hasURL {
		return r, false
	}
	if s, ok := d["scheme"].(string); ok && len(s) <= maxSchemeBytes && printable(s) {
		r.Scheme = s
	}
	switch sc := d["scopes"].(type) {
	case string:
		r.Scopes = boundScopes(strings.Fields(sc))
	case []any:
		list := make([]string, 0, len(sc))
		for _, e := range sc {
			if s, ok := e.(string); ok {
				list = append(list, s)
			}
		}
		r.Scopes = boundScopes(list)
	}
	if s, ok := u.(string); ok && len(s) <= maxURLBytes {
		if p, err := url.Parse(s); err == nil && (p.Scheme == "https" || p.Scheme == "http") && p.Host != "" {
			r.AuthorizationURL = s
		}
	}
	return r, true
}

func boundScopes(in []string) []string {
	var out []string
	for _, s := range in {
		if len(out) == maxScopes {
			break
		}
		if s != "" && len(s) <= maxScopeBytes && printable(s) && !strings.ContainsRune(s, ' ') {
			out = append(out, s)
		}
	}
	return out
}

// printable reports whether s holds no control characters.
func printable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}
