// Package webhook is the push-notification receiver of the interop suite: a
// consumer's webhook that records what reaches it, so that a case can check
// which notifications arrived for a task, in which order, with which token,
// and whether the gateway's signature verified.
package webhook

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"
)

// Bounds keep a misbehaving sender from growing the receiver without limit.
const (
	maxBodyBytes      = 1 << 20
	maxHooks          = 10000
	maxPerHook        = 200
	maxHookIDLength   = 128
	notificationToken = "X-A2A-Notification-Token"
)

// Delivery is one notification as the receiver understood it.
type Delivery struct {
	// TaskID and State come from the body: a 0.3 task or event, or a 1.0
	// StreamResponse.
	TaskID string `json:"taskId"`
	State  string `json:"state"`
	// Kind is the body's event kind (task, status_update, ...).
	Kind string `json:"kind"`
	// Event names the notification as the cases name stream events (see
	// describe).
	Event       string `json:"event"`
	ContentType string `json:"contentType"`
	// Token is the X-A2A-Notification-Token header, which a consumer checks
	// against the token it configured.
	Token string `json:"token"`
	// ID is the notification id (the JWT's jti): the same on every retry
	// of one notification.
	ID string `json:"id"`
	// Verified reports that the notification's JWT verified against the
	// gateway's published keys and its claims match the request;
	// SignatureError says why it did not.
	Verified       bool   `json:"verified"`
	SignatureError string `json:"signatureError,omitempty"`
	// Error says why the body could not be read as an A2A event.
	Error string `json:"error,omitempty"`
}

// Receiver records notifications POSTed to /hooks/{id} and lists them at
// GET /deliveries/{id}.
type Receiver struct {
	mux   *http.ServeMux
	mu    sync.Mutex
	hooks map[string][]Delivery
	order []string // hook ids, oldest first, for eviction
	// trust checks signatures; nil until Trust is called.
	trust *verifier
}

// New returns an empty receiver.
func New() *Receiver {
	r := &Receiver{hooks: map[string][]Delivery{}, mux: http.NewServeMux()}
	r.mux.HandleFunc("POST /hooks/{id}", r.receive)
	r.mux.HandleFunc("GET /deliveries/{id}", r.list)
	return r
}

// Trust has the receiver verify every notification's JWT against the keys
// published at jwksURL, issued by issuer; until it is called, every
// notification is refused as unverifiable.
func (r *Receiver) Trust(jwksURL, issuer string) {
	v := newVerifier(jwksURL, issuer)
	r.mu.Lock()
	r.trust = v
	r.mu.Unlock()
}

func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) { r.mux.ServeHTTP(w, req) }

func validID(id string) bool { return id != "" && len(id) <= maxHookIDLength }

func (r *Receiver) receive(w http.ResponseWriter, req *http.Request) {
	id := req.PathValue("id")
	if !validID(id) {
		http.Error(w, "invalid hook id", http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "cannot read body", http.StatusBadRequest)
		return
	}
	d := Parse(body)
	d.ContentType = req.Header.Get("Content-Type")
	d.Token = req.Header.Get(notificationToken)
	if d.Error == "" {
		r.verify(req, body, &d)
	}
	r.record(id, d)
	switch {
	case d.Error != "":
		http.Error(w, d.Error, http.StatusBadRequest)
	case !d.Verified:
		http.Error(w, d.SignatureError, http.StatusUnauthorized)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// verify checks the notification's JWT; its audience is the URL the
// request was sent to.
func (r *Receiver) verify(req *http.Request, body []byte, d *Delivery) {
	r.mu.Lock()
	v := r.trust
	r.mu.Unlock()
	if v == nil {
		d.SignatureError = "the receiver does not know the gateway's keys yet"
		return
	}
	raw, err := notificationJWT(req.Header)
	if err == nil {
		audience := "http://" + req.Host + req.URL.RequestURI()
		d.ID, err = v.verify(req.Context(), raw, body, audience, d.TaskID, time.Now())
	}
	if err != nil {
		d.SignatureError = err.Error()
		return
	}
	d.Verified = true
}

func (r *Receiver) record(id string, d Delivery) {
	r.mu.Lock()
	defer r.mu.Unlock()
	list, ok := r.hooks[id]
	if !ok {
		if len(r.order) >= maxHooks {
			delete(r.hooks, r.order[0])
			r.order = r.order[1:]
		}
		r.order = append(r.order, id)
	}
	if len(list) < maxPerHook {
		r.hooks[id] = append(list, d)
	}
}

// Deliveries returns what reached a hook so far, oldest first.
func (r *Receiver) Deliveries(id string) []Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Delivery(nil), r.hooks[id]...)
}

func (r *Receiver) list(w http.ResponseWriter, req *http.Request) {
	id := req.PathValue("id")
	if !validID(id) {
		http.Error(w, "invalid hook id", http.StatusBadRequest)
		return
	}
	ds := r.Deliveries(id)
	if ds == nil {
		ds = []Delivery{}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(struct {
		Deliveries []Delivery `json:"deliveries"`
	}{ds})
}
