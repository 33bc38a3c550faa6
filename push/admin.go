package push

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/adminapi"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// AdminHandler serves the dead-letter API for operators:
//
//	GET  /dead-letters?cursor=&limit=            oldest first, limit 1-100 (default 50)
//	GET  /dead-letters/{endpoint}/{id}           one, with its attempt log
//	POST /dead-letters/{endpoint}/{id}/redeliver back to the end of its queue
//
// Endpoint and id are path segments, so "/" in them is written %2F. The
// answers are JSON; they show a notification's receiver, content type and
// size, never its body, token or credentials. The handler does no
// authentication: mount it on the admin listener, behind the ops token.
func (d *Deliverer) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /dead-letters", d.listDeadLetters)
	mux.HandleFunc("GET /dead-letters/{endpoint}/{id}", d.getDeadLetter)
	mux.HandleFunc("POST /dead-letters/{endpoint}/{id}/redeliver", d.redeliver)
	return mux
}

const defaultDeadLetterPage = 50

type deadLetterView struct {
	Endpoint       string        `json:"endpoint"`
	ID             string        `json:"id"`
	TaskID         string        `json:"taskId"`
	Enqueued       time.Time     `json:"enqueued"`
	DeadLetteredAt time.Time     `json:"deadLetteredAt"`
	Reason         string        `json:"reason"`
	AttemptCount   int           `json:"attemptCount"`
	LastStatus     int           `json:"lastStatus,omitempty"`
	LastError      string        `json:"lastError,omitempty"`
	Attempts       []attemptView `json:"attempts,omitempty"`
	Request        *requestView  `json:"request,omitempty"`
}

type attemptView struct {
	At        time.Time  `json:"at"`
	Status    int        `json:"status,omitempty"`
	LatencyMS float64    `json:"latencyMs"`
	Error     string     `json:"error,omitempty"`
	RetryAt   *time.Time `json:"retryAt,omitempty"`
}

type requestView struct {
	Receiver    string `json:"receiver,omitempty"`
	ContentType string `json:"contentType,omitempty"`
	BodyBytes   int    `json:"bodyBytes"`
	Error       string `json:"error,omitempty"`
}

func viewDeadLetter(dl store.DeadLetter, detail bool) deadLetterView {
	v := deadLetterView{
		Endpoint: dl.Endpoint, ID: dl.ID, TaskID: dl.TaskID, Enqueued: dl.Enqueued,
		DeadLetteredAt: dl.At, Reason: dl.Reason, AttemptCount: len(dl.Attempts),
	}
	if k := len(dl.Attempts); k > 0 {
		v.LastStatus, v.LastError = dl.Attempts[k-1].Status, dl.Attempts[k-1].Err
	}
	if !detail {
		return v
	}
	v.Attempts = make([]attemptView, len(dl.Attempts))
	for i, a := range dl.Attempts {
		v.Attempts[i] = attemptView{At: a.At, Status: a.Status, LatencyMS: float64(a.Latency) / float64(time.Millisecond), Error: a.Err}
		if !a.RetryAt.IsZero() {
			v.Attempts[i].RetryAt = &a.RetryAt
		}
	}
	v.Request = &requestView{BodyBytes: len(dl.Payload)}
	if r, err := DecodePayload(dl.Payload); err != nil {
		v.Request.Error = err.Error()
	} else {
		v.Request.ContentType, v.Request.BodyBytes = r.ContentType, len(r.Body)
		v.Request.Receiver, _ = receiverOf(r.URL)
	}
	return v
}

func (d *Deliverer) listDeadLetters(w http.ResponseWriter, r *http.Request) {
	limit := defaultDeadLetterPage
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > store.MaxDeadLetterListLimit {
			adminapi.WriteError(w, http.StatusBadRequest, fmt.Sprintf("limit must be between 1 and %d", store.MaxDeadLetterListLimit))
			return
		}
		limit = n
	}
	dls, next, err := d.st.DeadLetters(r.Context(), r.URL.Query().Get("cursor"), limit)
	if err != nil {
		d.adminStoreError(w, "list dead letters", err)
		return
	}
	out := struct {
		DeadLetters []deadLetterView `json:"deadLetters"`
		NextCursor  string           `json:"nextCursor"`
	}{DeadLetters: make([]deadLetterView, len(dls)), NextCursor: next}
	for i, dl := range dls {
		out.DeadLetters[i] = viewDeadLetter(dl, false)
	}
	adminapi.WriteJSON(w, http.StatusOK, out)
}

func (d *Deliverer) getDeadLetter(w http.ResponseWriter, r *http.Request) {
	ep, id := r.PathValue("endpoint"), r.PathValue("id")
	dl, ok, err := d.st.GetDeadLetter(r.Context(), ep, id)
	if err != nil {
		d.adminStoreError(w, "read a dead letter", err)
		return
	}
	if !ok {
		adminapi.WriteError(w, http.StatusNotFound, "no such dead letter")
		return
	}
	adminapi.WriteJSON(w, http.StatusOK, viewDeadLetter(dl, true))
}

func (d *Deliverer) redeliver(w http.ResponseWriter, r *http.Request) {
	ep, id := r.PathValue("endpoint"), r.PathValue("id")
	if err := d.Redeliver(r.Context(), ep, id); err != nil {
		d.adminStoreError(w, "redeliver a dead letter", err)
		return
	}
	adminapi.WriteJSON(w, http.StatusAccepted, map[string]string{"endpoint": ep, "id": id, "status": "queued"})
}

// adminStoreError answers a store error with its status; the details of
// unexpected errors go to the log, not to the caller.
func (d *Deliverer) adminStoreError(w http.ResponseWriter, what string, err error) {
	switch {
	case errors.Is(err, store.ErrInvalidArgument):
		adminapi.WriteError(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, store.ErrNotFound):
		adminapi.WriteError(w, http.StatusNotFound, "no such dead letter")
	case errors.Is(err, store.ErrQueueFull):
		adminapi.WriteError(w, http.StatusConflict, "the endpoint's queue is full; try again once it has drained")
	case errors.Is(err, store.ErrUnavailable):
		adminapi.WriteError(w, http.StatusServiceUnavailable, "the store is temporarily unavailable")
	default:
		d.log.Error("push: admin: could not "+what, "error", err)
		adminapi.WriteError(w, http.StatusInternalServerError, "internal error")
	}
}
