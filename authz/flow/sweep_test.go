package flow

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/internal/request"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/metrics"
	"github.com/a2a-gateway/a2a-gateway/push"
)

// backends are the stores the flow is tested on.
func backends(t *testing.T) map[string]func(*testing.T) store.Store {
	t.Helper()
	return map[string]func(*testing.T) store.Store{
		"memory": func(t *testing.T) store.Store {
			s := store.NewMemory(store.Options{})
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
		"redis": func(t *testing.T) store.Store {
			return store.NewRedis(redistest.Start(t).Client(t), store.Options{})
		},
	}
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type notices struct {
	mu     sync.Mutex
	events []push.Event
}

func (n *notices) Publish(_ context.Context, ev push.Event) (push.Published, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.events = append(n.events, ev)
	return push.Published{}, nil
}

func (n *notices) all() []push.Event {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]push.Event(nil), n.events...)
}

// noAuthn refuses everyone: these tests do not call the endpoints.
type noAuthn struct{}

func (noAuthn) Authenticate(*http.Request) (*request.Principal, error) { return nil, errors.New("no") }
func (noAuthn) Challenge(error) string                                 { return "Bearer" }

func newTestFlow(t *testing.T, st store.Store, c *clock, n Notifier) (*Flow, *metrics.AuthFlow) {
	t.Helper()
	testKey(t, "AF_TEST_SWEEP_KEY", 7, false)
	m := metrics.NewAuthFlow(prometheus.NewRegistry())
	f, err := New(Options{
		Challenges: st.Challenges(), Lifecycle: st.Lifecycle(),
		Config: config.AuthFlowOptions{
			ChallengeTTL: duration.Duration(10 * time.Minute), Retention: duration.Duration(time.Hour),
			SweepInterval: duration.Duration(time.Second), Keys: []config.AuthFlowKey{{ID: "k", KeyEnv: "AF_TEST_SWEEP_KEY", Active: true}},
		},
		Agents:        []config.Agent{{Name: "cal", AuthFlow: &config.AgentAuthFlow{Delivery: config.DeliverAuthorization}}, {Name: "plain"}},
		PublicURL:     "https://gw.example",
		Authenticator: noAuthn{},
		Metrics:       m,
		Notifier:      n,
		Now:           c.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	return f, m
}

// Events from a push source (no caller) open challenges owned by the
// task's owner; the sweep expires them once, tells the push consumers in
// the task's version with the expired status, and leaves the task alone.
func TestTrackAndSweep(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			ctx := context.Background()
			c := &clock{now: time.Now()}
			n := &notices{}
			f, m := newTestFlow(t, st, c, n)
			data := `{"scheme":"oauth2","scopes":["calendar.read"]}`
			for _, tc := range []struct {
				task   string
				v      a2a.Version
				result string
			}{
				{"t03", a2a.V03, `{"kind":"status-update","taskId":"t03","contextId":"c-t03","status":{"state":"auth-required","message":{"parts":[{"kind":"data","data":` + data + `}]}}}`},
				{"t10", a2a.V10, `{"statusUpdate":{"taskId":"t10","contextId":"c-t10","status":{"state":"TASK_STATE_AUTH_REQUIRED","message":{"parts":[{"data":` + data + `}]}}}}`},
			} {
				rec := store.TaskLifecycle{Agent: "cal", TaskID: tc.task, Tenant: "acme", Subject: "alice", ContextID: "c-" + tc.task,
					Version: tc.v.String(), State: "auth-required", StateSince: c.Now(), Created: c.Now(), LastActivity: c.Now()}
				if _, _, err := st.Lifecycle().Save(ctx, rec, time.Hour); err != nil {
					t.Fatal(err)
				}
				if err := f.Track(ctx, Event{Agent: "cal", TaskID: tc.task, Version: tc.v, Kind: a2a.EventStatusUpdate,
					State: a2a.StateAuthRequired, Result: []byte(tc.result)}); err != nil {
					t.Fatal(err)
				}
				ch, found, err := st.Challenges().Current(ctx, "cal", tc.task)
				if err != nil || !found || ch.Tenant != "acme" || ch.Subject != "alice" || ch.ContextID != "c-"+tc.task || ch.Scheme != "oauth2" {
					t.Fatalf("challenge of %s: %+v %v %v", tc.task, ch, found, err)
				}
			}
			// An agent without an auth flow and a task nobody owns get none.
			for _, ev := range []Event{
				{Agent: "plain", TaskID: "p", Kind: a2a.EventTask, State: a2a.StateAuthRequired, Tenant: "acme", Subject: "alice"},
				{Agent: "cal", TaskID: "orphan", Kind: a2a.EventTask, State: a2a.StateAuthRequired},
			} {
				if err := f.Track(ctx, ev); err != nil {
					t.Fatal(err)
				}
				if _, found, _ := st.Challenges().Current(ctx, ev.Agent, ev.TaskID); found {
					t.Fatalf("a challenge was opened for %s/%s", ev.Agent, ev.TaskID)
				}
			}
			if err := f.Sweep(ctx); err != nil || len(n.all()) != 0 {
				t.Fatalf("sweep before expiry: %v, %d notices", err, len(n.all()))
			}
			c.advance(11 * time.Minute)
			for range 2 {
				if err := f.Sweep(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if got := counterValue(t, m.Expired.WithLabelValues("cal")); got != 2 {
				t.Fatalf("expired counted %v times, want 2", got)
			}
			evs := n.all()
			if len(evs) != 2 {
				t.Fatalf("%d notices, want 2", len(evs))
			}
			for _, ev := range evs {
				parsed, err := a2a.ParseResult(ev.Payload)
				if err != nil || parsed.Kind != a2a.EventStatusUpdate || parsed.State != a2a.StateAuthRequired || parsed.TaskID != ev.TaskID {
					t.Fatalf("notice %s: %+v %v", ev.Payload, parsed, err)
				}
				wantV := a2a.V03
				if ev.TaskID == "t10" {
					wantV = a2a.V10
				}
				obj, err := a2a.EventObject(ev.Payload, ev.Version, a2a.EventStatusUpdate)
				if ev.Version != wantV || err != nil {
					t.Fatalf("notice of %s in version %s: %v", ev.TaskID, ev.Version, err)
				}
				ch := obj["metadata"].(map[string]any)[ChallengeMetadataKey].(map[string]any)
				if ch["status"] != store.ChallengeExpired || ch["completeUrl"] != "https://gw.example/auth/challenges/"+ch["id"].(string) {
					t.Fatalf("notice challenge: %v", ch)
				}
				rec, _, _ := st.Lifecycle().Get(ctx, "cal", ev.TaskID)
				if rec.State != "auth-required" {
					t.Fatalf("the task's state changed to %s", rec.State)
				}
			}
			// Another state closes the challenge; unused, it counts as closed.
			if err := f.Track(ctx, Event{Agent: "cal", TaskID: "t10", Kind: a2a.EventStatusUpdate, State: a2a.StateWorking}); err != nil {
				t.Fatal(err)
			}
			if ch, _, _ := st.Challenges().Current(ctx, "cal", "t10"); ch.Status != store.ChallengeClosed {
				t.Fatalf("challenge after working: %s", ch.Status)
			}
			if got := counterValue(t, m.Closed.WithLabelValues("cal", "working")); got != 1 {
				t.Fatalf("closed counted %v times", got)
			}
		})
	}
}

// The expiry notice is a status update each version's readers accept.
func TestExpiredEventShapes(t *testing.T) {
	c := store.Challenge{TaskID: "t", ContextID: "ctx"}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	view := challengeView{ID: "x", Status: store.ChallengeExpired}
	for _, v := range []a2a.Version{a2a.V10, a2a.V03} {
		b, err := expiredEvent(c, view, v, now)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		if _, wrapped := m["statusUpdate"]; wrapped != (v == a2a.V10) {
			t.Fatalf("%s shape: %s", v, b)
		}
		ev, err := a2a.ParseResult(b)
		if err != nil || ev.State != a2a.StateAuthRequired || ev.TaskID != "t" || ev.ContextID != "ctx" {
			t.Fatalf("%s: %+v %v: %s", v, ev, err, b)
		}
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
