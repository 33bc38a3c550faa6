package demoagent

import (
	"context"
	"net/http"
	"strings"
)

// SecurePath is a base path under which the agent serves every binding it
// serves at its root, as an agent that needs a credential for everything:
// each task started there asks for one first (auth-required, as the auth
// scenario does, whatever the message says) and completes once a message
// brings one, in its Authorization header or under the message metadata
// key "a2a-gateway/credential". Mount it as a second agent behind the
// gateway to try the gateway's auth-required flows.
const SecurePath = "/secure"

type securedKey struct{}

// secured serves a request below SecurePath as the same request at the
// root, marked so that the tasks it starts need a credential.
func secured(r *http.Request) *http.Request {
	rest, ok := strings.CutPrefix(r.URL.Path, SecurePath)
	if !ok || (rest != "" && rest[0] != '/') {
		return r
	}
	if rest == "" {
		rest = "/"
	}
	r2 := r.WithContext(context.WithValue(r.Context(), securedKey{}, true))
	u := *r.URL
	u.Path, u.RawPath = rest, ""
	r2.URL = &u
	return r2
}

// securedScenario is the scenario of a task started through SecurePath:
// the auth scenario, whatever the message asked for.
func securedScenario(ctx context.Context, sc scenario) scenario {
	if on, _ := ctx.Value(securedKey{}).(bool); on {
		return scenario{kind: scAuth, text: sc.text}
	}
	return sc
}
