package lifecycle

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/adminapi"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// defaultOpsLimit is the page size of GET /ops/tasks without a limit.
const defaultOpsLimit = 100

// OpsHandler is the operations API, for the admin listener under /ops/:
//
//	GET    /ops/tasks?agent=&tenant=&state=&orphans=1&over_budget=1&cursor=&limit=
//	GET    /ops/tasks/{agent}/{taskID}         one record with its transition history
//	GET    /ops/counts?agent=                  records by state, per agent
//	PUT    /ops/tasks/{agent}/{taskID}/hold    set the legal hold
//	DELETE /ops/tasks/{agent}/{taskID}/hold    clear it
//
// Every call needs the bearer token from the environment variable that
// ops_token_env names; without one configured, every call is refused.
// Pages of GET /ops/tasks may hold fewer than limit records (over_budget
// filters a page after it is read); continue while next_cursor is set.
func (t *Tracker) OpsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ops/tasks", t.opsList)
	mux.HandleFunc("GET /ops/tasks/{agent}/{task}", t.opsGet)
	mux.HandleFunc("PUT /ops/tasks/{agent}/{task}/hold", t.opsHold(true))
	mux.HandleFunc("DELETE /ops/tasks/{agent}/{task}/hold", t.opsHold(false))
	mux.HandleFunc("GET /ops/counts", t.opsCounts)
	return t.opsAuth(mux)
}

// opsAuth admits requests carrying the ops token. Digests are compared in
// constant time, so neither the token nor its length leaks through timing.
func (t *Tracker) opsAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Get("Authorization")
		ok := t.opsToken != nil && len(h) > len("Bearer ") && strings.EqualFold(h[:len("Bearer ")], "Bearer ")
		if ok {
			sum := sha256.Sum256([]byte(h[len("Bearer "):]))
			ok = subtle.ConstantTimeCompare(sum[:], t.opsToken) == 1
		}
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="a2a-gateway-ops"`)
			adminapi.WriteError(w, http.StatusUnauthorized, "a valid ops bearer token is required")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// taskView is a record as the ops API shows it.
type taskView struct {
	Agent        string           `json:"agent"`
	TaskID       string           `json:"task_id"`
	Tenant       string           `json:"tenant"`
	Subject      string           `json:"subject,omitempty"`
	ContextID    string           `json:"context_id,omitempty"`
	Version      string           `json:"version,omitempty"`
	State        string           `json:"state"`
	StateSince   time.Time        `json:"state_since"`
	Created      time.Time        `json:"created"`
	LastActivity time.Time        `json:"last_activity"`
	Subscribers  int              `json:"subscribers"`
	EndedBy      string           `json:"ended_by,omitempty"`
	Escalated    bool             `json:"escalated"`
	LegalHold    bool             `json:"legal_hold"`
	Orphan       bool             `json:"orphan"`
	OverBudget   bool             `json:"over_budget"`
	History      []transitionView `json:"history,omitempty"`
}

type transitionView struct {
	From string    `json:"from"`
	To   string    `json:"to"`
	At   time.Time `json:"at"`
}

func (t *Tracker) view(rec store.TaskLifecycle, now time.Time, history bool) taskView {
	v := taskView{
		Agent: rec.Agent, TaskID: rec.TaskID, Tenant: rec.Tenant, Subject: rec.Subject, ContextID: rec.ContextID,
		Version: rec.Version, State: rec.State, StateSince: rec.StateSince, Created: rec.Created, LastActivity: rec.LastActivity,
		Subscribers: rec.Subscribers, EndedBy: rec.EndedBy, Escalated: rec.Escalated, LegalHold: rec.LegalHold,
		Orphan:     t.orphan(rec, now),
		OverBudget: overBudget(t.agents[rec.Agent].Watchdog, rec, now),
	}
	if history {
		v.History = make([]transitionView, len(rec.History))
		for i, h := range rec.History {
			v.History[i] = transitionView{From: h.From, To: h.To, At: h.At}
		}
	}
	return v
}

func (t *Tracker) orphan(rec store.TaskLifecycle, now time.Time) bool {
	return !a2a.ParseState(rec.State).Terminal() && now.Sub(rec.LastActivity) > t.o.OrphanAfter.D()
}

func (t *Tracker) opsList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	agent := q.Get("agent")
	if _, ok := t.agents[agent]; !ok {
		adminapi.WriteError(w, http.StatusBadRequest, "agent must name a configured agent")
		return
	}
	now := time.Now()
	f := store.LifecycleFilter{Agent: agent, Tenant: q.Get("tenant")}
	if s := q.Get("state"); s != "" {
		if s != store.LifecycleOpen {
			st := a2a.ParseState(s)
			if st == a2a.StateUnknown {
				adminapi.WriteError(w, http.StatusBadRequest, "state must be a task state or \"open\"")
				return
			}
			s = st.String()
		}
		f.State = s
	}
	if q.Get("orphans") == "1" {
		if f.State != "" && f.State != store.LifecycleOpen && a2a.ParseState(f.State).Terminal() {
			adminapi.WriteError(w, http.StatusBadRequest, "orphans are never in a terminal state")
			return
		}
		if f.State == "" {
			f.State = store.LifecycleOpen
		}
		f.InactiveSince = now.Add(-t.o.OrphanAfter.D())
	}
	limit := defaultOpsLimit
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > store.MaxLifecycleListLimit {
			adminapi.WriteError(w, http.StatusBadRequest, "limit must be 1 to "+strconv.Itoa(store.MaxLifecycleListLimit))
			return
		}
		limit = n
	}
	recs, next, err := t.st.List(r.Context(), f, q.Get("cursor"), limit)
	if err != nil {
		t.opsStoreError(w, err)
		return
	}
	overOnly := q.Get("over_budget") == "1"
	wd := t.agents[agent].Watchdog
	out := struct {
		Tasks      []taskView `json:"tasks"`
		NextCursor string     `json:"next_cursor"`
	}{Tasks: []taskView{}, NextCursor: next}
	for _, rec := range recs {
		if overOnly && !overBudget(wd, rec, now) {
			continue
		}
		out.Tasks = append(out.Tasks, t.view(rec, now, false))
	}
	adminapi.WriteJSON(w, http.StatusOK, out)
}

func (t *Tracker) opsGet(w http.ResponseWriter, r *http.Request) {
	agent, task, ok := t.opsTask(w, r)
	if !ok {
		return
	}
	rec, found, err := t.st.Get(r.Context(), agent, task)
	if err != nil {
		t.opsStoreError(w, err)
		return
	}
	if !found {
		adminapi.WriteError(w, http.StatusNotFound, "no record of this task")
		return
	}
	adminapi.WriteJSON(w, http.StatusOK, t.view(rec, time.Now(), true))
}

func (t *Tracker) opsHold(hold bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		agent, task, ok := t.opsTask(w, r)
		if !ok {
			return
		}
		rec, err := t.SetLegalHold(r.Context(), agent, task, hold, "ops API")
		switch {
		case errors.Is(err, errNoRecord):
			adminapi.WriteError(w, http.StatusNotFound, "no record of this task")
			return
		case err != nil:
			t.opsStoreError(w, err)
			return
		}
		adminapi.WriteJSON(w, http.StatusOK, t.view(rec, time.Now(), true))
	}
}

func (t *Tracker) opsCounts(w http.ResponseWriter, r *http.Request) {
	names := t.names
	if agent := r.URL.Query().Get("agent"); agent != "" {
		if _, ok := t.agents[agent]; !ok {
			adminapi.WriteError(w, http.StatusNotFound, "no such agent")
			return
		}
		names = []string{agent}
	}
	out := struct {
		Counts map[string]map[string]int `json:"counts"`
	}{Counts: map[string]map[string]int{}}
	for _, name := range names {
		c, err := t.st.CountByState(r.Context(), name)
		if err != nil {
			t.opsStoreError(w, err)
			return
		}
		out.Counts[name] = withEveryState(c)
	}
	adminapi.WriteJSON(w, http.StatusOK, out)
}

// opsTask reads the path's agent and task id.
func (t *Tracker) opsTask(w http.ResponseWriter, r *http.Request) (agent, task string, ok bool) {
	agent, task = r.PathValue("agent"), r.PathValue("task")
	if _, known := t.agents[agent]; !known {
		adminapi.WriteError(w, http.StatusNotFound, "no such agent")
		return "", "", false
	}
	if task == "" || len(task) > store.MaxNameBytes {
		adminapi.WriteError(w, http.StatusBadRequest, "invalid task id")
		return "", "", false
	}
	return agent, task, true
}

func (t *Tracker) opsStoreError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, store.ErrInvalidArgument):
		adminapi.WriteError(w, http.StatusBadRequest, "invalid argument (a cursor from another listing?)")
	case errors.Is(err, store.ErrUnavailable):
		t.log.Warn("lifecycle: ops API: store unavailable", "err", err)
		w.Header().Set("Retry-After", "1")
		adminapi.WriteError(w, http.StatusServiceUnavailable, "the store is temporarily unavailable")
	default:
		t.log.Error("lifecycle: ops API: store error", "err", err)
		adminapi.WriteError(w, http.StatusInternalServerError, "internal error")
	}
}
