// Package console is the operations console: server-rendered pages on the
// admin listener under /console/ that show every task's lifecycle, the
// dead letters, the receivers' breakers and the open auth challenges, and
// offer the few actions operators need (legal hold, cancel at the agent,
// redeliver or discard dead letters). It reads through the store's
// interfaces, page by page along their indexes, and acts only through the
// same calls as the ops and dead-letter APIs, so it adds no second way to
// change state.
//
// Sign-in takes the ops token or a JWT carrying the ops scope, POSTed in a
// form; the session is a signed cookie (HttpOnly, SameSite=Strict, Secure
// on TLS) that every replica with the same key accepts, and every form
// carries the session's CSRF token. Pages load no inline script or style.
package console

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	requestctx "github.com/a2a-gateway/a2a-gateway/internal/request"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/push"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Prefix is where the console is mounted on the admin listener.
const Prefix = "/console/"

// Tasks is what the console needs of the lifecycle tracker
// (*lifecycle.Tracker).
type Tasks interface {
	Agents() []string
	Orphan(rec store.TaskLifecycle, now time.Time) bool
	OverBudget(rec store.TaskLifecycle, now time.Time) bool
	OrphanAfter() time.Duration
	SetLegalHold(ctx context.Context, agent, taskID string, hold bool, by string) (store.TaskLifecycle, error)
	Cancel(ctx context.Context, agent, taskID, by string) (a2a.State, error)
}

// Deliveries is what the console needs of the push deliverer
// (*push.Deliverer).
type Deliveries interface {
	Redeliver(ctx context.Context, endpoint, id string) error
	Discard(ctx context.Context, endpoint, id string) (bool, error)
	Receivers() []push.ReceiverState
}

// Options assemble a Console.
type Options struct {
	// Config is the console section, defaults applied and validated.
	Config config.ConsoleOptions
	// SessionKey signs the cookies; at least config.MinConsoleSessionKeyBytes.
	SessionKey []byte
	// OpsToken is the ops token (lifecycle.ops_token_env); empty refuses it.
	OpsToken string
	// Authenticate verifies a JWT for sign-in with the ops scope; nil
	// accepts only the ops token.
	Authenticate func(ctx context.Context, bearer string) (*requestctx.Principal, error)
	// Secure makes cookies Secure on every request (public_url is https);
	// requests over TLS get them regardless.
	Secure bool
	// Lifecycle, Challenges, PushConfigs and Events are read for the pages.
	Lifecycle   store.Lifecycle
	Challenges  store.Challenges
	PushConfigs store.PushConfigs
	Events      store.EventLog
	// Tasks acts on tasks. Required.
	Tasks Tasks
	// DeadLetters, Deliveries and Attempts are nil when push is off.
	DeadLetters store.DeliveryStore
	Deliveries  Deliveries
	Attempts    store.DeliveryLog
	// Metrics is read for the overview's rates; nil leaves them out.
	Metrics prometheus.Gatherer
	// Audit receives one line per sign-in and action; Log the rest.
	Audit, Log *slog.Logger
}

// Console serves the pages. Build it with New; Close stops its sampler.
type Console struct {
	o      Options
	sign   signer
	secure bool
	ops    []byte // digest of the ops token; nil refuses it
	pages  map[string]*template.Template
	static http.Handler
	rates  *rates
	stop   context.CancelFunc
	done   chan struct{}
}

// New builds the console and starts sampling the metrics.
func New(o Options) (*Console, error) {
	if len(o.SessionKey) < config.MinConsoleSessionKeyBytes {
		return nil, fmt.Errorf("console: a session key of at least %d bytes is required (console.session_key_env)", config.MinConsoleSessionKeyBytes)
	}
	if o.Lifecycle == nil || o.Tasks == nil || o.Challenges == nil || o.PushConfigs == nil {
		return nil, errors.New("console: the lifecycle store, tracker, challenges and push configs are required")
	}
	if o.Config.PageSize < 1 || o.Config.PageSize > config.MaxConsolePageSize {
		return nil, errors.New("console: options without defaults; call ApplyDefaults and Validate first")
	}
	if o.Audit == nil {
		o.Audit = slog.New(slog.DiscardHandler)
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	c := &Console{o: o, sign: signer{key: o.SessionKey}, secure: o.Secure, done: make(chan struct{})}
	if o.OpsToken != "" {
		sum := sha256.Sum256([]byte(o.OpsToken))
		c.ops = sum[:]
	}
	var err error
	if c.pages, err = parsePages(); err != nil {
		return nil, err
	}
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	c.static = http.StripPrefix(Prefix+"static/", http.FileServerFS(sub))
	c.rates = newRates(o.Metrics, o.Config.RateWindow.D())
	ctx, cancel := context.WithCancel(context.Background())
	c.stop = cancel
	go func() {
		defer close(c.done)
		c.rates.run(ctx)
	}()
	return c, nil
}

// Close stops the metrics sampler.
func (c *Console) Close() {
	c.stop()
	<-c.done
}

// Handler serves everything under Prefix.
func (c *Console) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET "+Prefix+"static/", c.static)
	mux.HandleFunc("GET "+Prefix+"login", c.loginForm)
	mux.HandleFunc("POST "+Prefix+"login", c.login)
	mux.HandleFunc("POST "+Prefix+"logout", c.signedIn(c.logout))
	mux.HandleFunc("GET "+Prefix+"{$}", c.signedIn(c.overview))
	mux.HandleFunc("GET "+Prefix+"tasks", c.signedIn(c.tasks))
	mux.HandleFunc("GET "+Prefix+"tasks/{agent}/{task}", c.signedIn(c.task))
	mux.HandleFunc("POST "+Prefix+"tasks/{agent}/{task}/hold", c.signedIn(c.hold))
	mux.HandleFunc("POST "+Prefix+"tasks/{agent}/{task}/cancel", c.signedIn(c.cancel))
	mux.HandleFunc("GET "+Prefix+"dead-letters", c.signedIn(c.deadLetters))
	mux.HandleFunc("GET "+Prefix+"dead-letters/{endpoint}/{id}", c.signedIn(c.deadLetter))
	mux.HandleFunc("POST "+Prefix+"dead-letters/act", c.signedIn(c.actOnDeadLetters))
	mux.HandleFunc("GET "+Prefix+"endpoints", c.signedIn(c.endpoints))
	mux.HandleFunc("GET "+Prefix+"challenges", c.signedIn(c.challenges))
	return securityHeaders(mux)
}

// csp allows what the pages load from the console itself, and nothing
// inline: no script or style attribute, element or handler runs.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

// request is one signed-in request.
type request struct {
	w   http.ResponseWriter
	r   *http.Request
	s   session
	now time.Time
}

// signedIn admits requests with a valid session, and state-changing ones
// only with the session's CSRF token; others go to the sign-in page.
func (c *Console) signedIn(h func(*request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, err := c.readCookie(r, sessionCookie, kindSession)
		if err != nil {
			if r.Method == http.MethodGet {
				http.Redirect(w, r, Prefix+"login", http.StatusSeeOther)
				return
			}
			c.refuse(w, http.StatusUnauthorized, "sign in first")
			return
		}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
			if !csrfOK(s, r) {
				c.o.Audit.Warn("console: request refused: missing or wrong CSRF token", "operator", s.Operator, "path", r.URL.Path)
				c.refuse(w, http.StatusForbidden, "the form's CSRF token is missing or wrong; reload the page")
				return
			}
		}
		h(&request{w: w, r: r, s: s, now: time.Now()})
	}
}

// maxFormBytes bounds a form: the largest holds one page of dead letters.
const maxFormBytes = 256 << 10

// checkOpsToken reports whether tok is the ops token, in constant time.
func (c *Console) checkOpsToken(tok string) bool {
	if c.ops == nil {
		return false
	}
	sum := sha256.Sum256([]byte(tok))
	return subtle.ConstantTimeCompare(sum[:], c.ops) == 1
}
