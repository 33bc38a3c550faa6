package gateway_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
	"github.com/a2a-gateway/a2a-gateway/internal/jose"
	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/push"
)

// Environment variables the push tests set.
const (
	pushSecretEnv   = "A2AGW_TEST_PUSH_WEBHOOK_SECRET"
	pushOpsTokenEnv = "A2AGW_TEST_PUSH_OPS_TOKEN"
	pushOpsToken    = "push-ops-token-0123456789"
	pushKeyID       = "push-test-1"
)

// pushEnv is a gateway with the push relay on, in front of the demo agent,
// on a real Redis, with tenant acme allowed to call receivers on loopback.
type pushEnv struct {
	*gwtest.Env
	redis  *redistest.Server
	acme   *caller
	secret []byte
}

// startPush starts the environment; opts adjust the configuration after
// the push defaults are in.
func startPush(t *testing.T, opts ...gwtest.Option) *pushEnv {
	t.Helper()
	return startPushWith(t, slog.New(slog.DiscardHandler), opts...)
}

// startPushWith is startPush with the gateway logging to log.
func startPushWith(t *testing.T, log *slog.Logger, opts ...gwtest.Option) *pushEnv {
	t.Helper()
	srv := redistest.Start(t, redistest.WithAOF())
	key, err := jose.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	keyPath := filepath.Join(t.TempDir(), "push.pem")
	if err := jose.WritePrivateKeyPEM(keyPath, key); err != nil {
		t.Fatal(err)
	}
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	t.Setenv(pushSecretEnv, "whsec_"+base64.StdEncoding.EncodeToString(secret))
	t.Setenv(pushOpsTokenEnv, pushOpsToken)
	schedule := make([]duration.Duration, 20)
	for i := range schedule {
		schedule[i] = duration.Duration(50 * time.Millisecond)
	}
	all := append([]gwtest.Option{func(c *config.Config) {
		c.Store.Redis.Addrs = []string{srv.Addr()}
		c.Lifecycle.OpsTokenEnv = pushOpsTokenEnv
		c.Push = config.PushOptions{
			Enabled:          true,
			Signing:          config.PushSigning{KeyFiles: []string{keyPath}, KeyIDs: []string{pushKeyID}},
			WebhookSecretEnv: pushSecretEnv,
			Tenants:          map[string]config.PushTenant{"acme": {Allowlist: []string{"127.0.0.1/32:*"}}},
			Delivery: config.PushDelivery{
				Schedule: schedule, PollInterval: duration.Duration(20 * time.Millisecond), BreakerFailures: -1,
			},
		}
	}}, opts...)
	env := gwtest.StartLogged(t, log, all...)
	return &pushEnv{Env: env, redis: srv, acme: newCaller(t, env), secret: secret}
}

// hookCall is one request a webhook got.
type hookCall struct {
	header http.Header
	body   []byte
	status int
	at     time.Time
}

// id is the notification id the request carries (Standard Webhooks'
// webhook-id, the JWT jti).
func (r hookCall) id() string { return r.header.Get(push.HeaderWebhookID) }

// webhook is a receiver of notifications on loopback. answer decides the status
// (and headers) of the n-th request (from 0); by default every request is
// acknowledged with 204.
type webhook struct {
	srv    *httptest.Server
	mu     sync.Mutex
	got    []hookCall
	n      int // requests that arrived, answered or not
	answer func(n int, body []byte) (int, http.Header)
}

func newWebhook(t *testing.T) *webhook {
	t.Helper()
	r := &webhook{}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *webhook) serve(w http.ResponseWriter, req *http.Request) {
	arrived := time.Now()
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	n := r.n
	r.n++
	answer := r.answer
	r.mu.Unlock()
	status, h := http.StatusNoContent, http.Header(nil)
	if answer != nil {
		status, h = answer(n, body)
	}
	r.mu.Lock()
	r.got = append(r.got, hookCall{header: req.Header.Clone(), body: body, status: status, at: arrived})
	r.mu.Unlock()
	for k, vs := range h {
		w.Header()[k] = vs
	}
	w.WriteHeader(status)
}

// url is the webhook URL, with a path that must reach the receiver as is.
func (r *webhook) url() string { return r.srv.URL + "/hooks/a2a?tenant=acme" }

func (r *webhook) setAnswer(f func(n int, body []byte) (int, http.Header)) {
	r.mu.Lock()
	r.answer = f
	r.mu.Unlock()
}

// all returns every request hookCall so far.
func (r *webhook) all() []hookCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hookCall(nil), r.got...)
}

// acked returns the requests that were answered 2xx, in order.
func (r *webhook) acked() []hookCall {
	var out []hookCall
	for _, g := range r.all() {
		if g.status >= 200 && g.status < 300 {
			out = append(out, g)
		}
	}
	return out
}

// results reads a client stream to its end and returns the unwrapped
// result of every event, in order.
func streamResults(t *testing.T, s *stream) [][]byte {
	t.Helper()
	var out [][]byte
	for {
		ev, err := s.rd.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("stream broke after %d events: %v", len(out), err)
		}
		res := ev.Data
		if s.rpc {
			var e error
			if res, _, e = a2a.UnwrapRPC(ev.Data); e != nil || res == nil {
				t.Fatalf("stream event is not a result: %v: %s", e, ev.Data)
			}
		}
		out = append(out, res)
	}
}

// canonical re-encodes JSON with sorted keys, to compare documents.
func canonicalJSON(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// jwks fetches the notification signing keys from the gateway, as a
// receiver does.
func (e *pushEnv) jwks(t *testing.T) map[string]ed25519.PublicKey {
	t.Helper()
	resp, body := e.Do(t, http.MethodGet, e.Gateway+"/.well-known/a2a-push-jwks.json", "", "", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Type"), "jwk-set+json") {
		t.Fatalf("JWKS: HTTP %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	var set struct {
		Keys []struct{ Kty, Crv, X, Kid, Alg string } `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		t.Fatal(err)
	}
	keys := map[string]ed25519.PublicKey{}
	for _, k := range set.Keys {
		x, err := base64.RawURLEncoding.DecodeString(k.X)
		if err != nil || k.Kty != "OKP" || k.Crv != "Ed25519" || k.Alg != "EdDSA" {
			t.Fatalf("unexpected JWK %+v", k)
		}
		keys[k.Kid] = x
	}
	return keys
}

// verifyJWT checks a notification's JWT against the published keys and
// returns its claims.
func verifyPushJWT(keys map[string]ed25519.PublicKey, raw, issuer, audience string) (jwt.MapClaims, error) {
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(raw, claims, func(tok *jwt.Token) (any, error) {
		kid, _ := tok.Header["kid"].(string)
		k, ok := keys[kid]
		if !ok {
			return nil, fmt.Errorf("kid %q is not published", kid)
		}
		return k, nil
	}, jwt.WithValidMethods([]string{"EdDSA"}), jwt.WithIssuer(issuer), jwt.WithAudience(audience), jwt.WithIssuedAt(), jwt.WithExpirationRequired())
	return claims, err
}

// opsGet calls the admin API with the ops token.
func (e *pushEnv) opsGet(t *testing.T, path string, out any) int {
	t.Helper()
	resp, body := e.Do(t, http.MethodGet, e.Admin+path, pushOpsToken, "", nil)
	if out != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, out); err != nil {
			t.Fatalf("%s: %v: %s", path, err, body)
		}
	}
	return resp.StatusCode
}

// waitNotified waits until the receiver acknowledged every event a client
// saw and returns, per event, its first acknowledged notification. The
// events must be acknowledged in the client's order; an event may be
// acknowledged again (a retry whose acknowledgement the gateway did not
// record), never before the ones ahead of it. The task's
// upstream subscription may notify task snapshots besides (a Task, in the
// 1.0 shape a {"task": ...} object); anything else is an error. The last
// notification acknowledged must be the terminal one.
func waitNotified(t *testing.T, rcv *webhook, events [][]byte, v a2a.Version) []hookCall {
	t.Helper()
	index := map[string]int{}
	for i, ev := range events {
		index[push.EventID(ev)] = i
	}
	var out []hookCall
	eventually(t, fmt.Sprintf("the receiver acknowledged all %d events", len(events)), func() bool {
		out = make([]hookCall, len(events))
		n := 0
		for _, h := range rcv.acked() {
			if i, ok := index[h.id()]; ok && out[i].body == nil {
				out[i] = h
				n++
			}
		}
		return n == len(events)
	})
	next := 0
	for _, h := range rcv.acked() {
		i, ok := index[h.id()]
		switch {
		case ok && i > next:
			t.Fatalf("event %d acknowledged where event %d was due", i, next)
		case ok && i == next:
			next++
		case ok:
			t.Logf("event %d acknowledged again: a retry with its id %s", i, h.id())
		case v == a2a.V10:
			if ev, err := a2a.ParseResult(h.body); err != nil || ev.Kind != a2a.EventTask {
				t.Fatalf("a notification that is no event of the stream and no task snapshot: %s", h.body)
			}
		}
	}
	all := rcv.acked()
	last := all[len(all)-1].body
	if ev, err := a2a.ParseResult(last); err != nil || !ev.State.Terminal() {
		t.Fatalf("the last notification is not terminal: %s", last)
	}
	return out
}
