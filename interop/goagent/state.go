package goagent

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
)

// maxEntries bounds every map of the state, so a long-running agent cannot
// grow without limit.
const maxEntries = 10000

type outcome int

const (
	released outcome = iota + 1
	canceled
)

// state is what the interop cases observe out of band of A2A: how often a
// message was executed (dedupe), which webhook URLs the agent was given
// (push relay), how many event subscriptions a task has had (resubscribe),
// and the held executions a case may release.
type state struct {
	mu            sync.Mutex
	executions    bounded[string, int]
	subscriptions bounded[a2a.TaskID, int]
	pushURLs      bounded[a2a.TaskID, []string]
	holds         bounded[a2a.TaskID, chan outcome]
}

func newState() *state {
	return &state{
		executions:    newBounded[string, int](),
		subscriptions: newBounded[a2a.TaskID, int](),
		pushURLs:      newBounded[a2a.TaskID, []string](),
		holds:         newBounded[a2a.TaskID, chan outcome](),
	}
}

func (s *state) countExecution(messageID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, _ := s.executions.get(messageID)
	s.executions.set(messageID, n+1)
}

func (s *state) countSubscription(id a2a.TaskID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, _ := s.subscriptions.get(id)
	s.subscriptions.set(id, n+1)
}

func (s *state) recordPushURL(id a2a.TaskID, u string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	urls, _ := s.pushURLs.get(id)
	for _, have := range urls {
		if have == u {
			return
		}
	}
	s.pushURLs.set(id, append(urls, u))
}

// hold registers a held execution; the channel yields its outcome once.
func (s *state) hold(id a2a.TaskID) <-chan outcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := make(chan outcome, 1)
	s.holds.set(id, ch)
	return ch
}

// settle ends a held execution; false if none is held.
func (s *state) settle(id a2a.TaskID, o outcome) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.holds.get(id)
	if !ok {
		return false
	}
	s.holds.remove(id)
	ch <- o
	return true
}

type taskView struct {
	Subscriptions int      `json:"subscriptions"`
	PushURLs      []string `json:"pushUrls"`
	Held          bool     `json:"held"`
}

func (s *state) task(id a2a.TaskID) taskView {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := taskView{PushURLs: []string{}}
	v.Subscriptions, _ = s.subscriptions.get(id)
	if urls, ok := s.pushURLs.get(id); ok {
		v.PushURLs = append(v.PushURLs, urls...)
	}
	_, v.Held = s.holds.get(id)
	return v
}

// mount serves the probe under /interop/, beside the agent's A2A routes.
func (s *state) mount(mux *http.ServeMux) {
	mux.HandleFunc("GET /interop/messages/{id}", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		n, _ := s.executions.get(r.PathValue("id"))
		s.mu.Unlock()
		writeJSON(w, struct {
			Executions int `json:"executions"`
		}{n})
	})
	mux.HandleFunc("GET /interop/tasks/{id}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, s.task(a2a.TaskID(r.PathValue("id"))))
	})
	mux.HandleFunc("POST /interop/tasks/{id}/release", func(w http.ResponseWriter, r *http.Request) {
		if !s.settle(a2a.TaskID(r.PathValue("id")), released) {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// countingQueues counts every reader attached to a task's event queue: the
// sending request's own and each resubscription's.
type countingQueues struct {
	eventqueue.Manager
	st *state
}

func (c countingQueues) Get(ctx context.Context, id a2a.TaskID) (eventqueue.Queue, bool) {
	q, ok := c.Manager.Get(ctx, id)
	if ok {
		c.st.countSubscription(id)
	}
	return q, ok
}

// recordingPushStore records the webhook URL of every push configuration
// the agent is given.
type recordingPushStore struct {
	a2asrv.PushConfigStore
	st *state
}

func (r recordingPushStore) Save(ctx context.Context, id a2a.TaskID, cfg *a2a.PushConfig) (*a2a.PushConfig, error) {
	saved, err := r.PushConfigStore.Save(ctx, id, cfg)
	if err == nil {
		r.st.recordPushURL(id, saved.URL)
	}
	return saved, err
}

// bounded is a map that forgets its oldest keys beyond maxEntries. It is
// not safe for concurrent use; state's mutex guards it.
type bounded[K comparable, V any] struct {
	m     map[K]V
	order []K
}

func newBounded[K comparable, V any]() bounded[K, V] {
	return bounded[K, V]{m: map[K]V{}}
}

func (b *bounded[K, V]) get(k K) (V, bool) {
	v, ok := b.m[k]
	return v, ok
}

func (b *bounded[K, V]) set(k K, v V) {
	if _, ok := b.m[k]; !ok {
		if len(b.order) >= maxEntries {
			delete(b.m, b.order[0])
			b.order = b.order[1:]
		}
		b.order = append(b.order, k)
	}
	b.m[k] = v
}

func (b *bounded[K, V]) remove(k K) {
	if _, ok := b.m[k]; !ok {
		return
	}
	delete(b.m, k)
	for i, have := range b.order {
		if have == k {
			b.order = append(b.order[:i], b.order[i+1:]...)
			return
		}
	}
}
