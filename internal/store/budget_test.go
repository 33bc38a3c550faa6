package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/duration"
	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
	"github.com/a2a-gateway/a2a-gateway/internal/request"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// hangGuard is shorter than one Redis timeout of the tests below: a
// request that waits for its store calls' timeouts and retries instead of
// its budget does not finish within it. It only catches the hang; nothing
// asserts on how long a call took.
const hangGuard = 5 * time.Second

// TestRequestBudget: with Redis frozen, a request's store calls together
// wait no longer than its budget (single commands, scripts, shared
// pipelines, pings), every call after the budget is spent fails at once,
// and the request can tell that the budget ran out. Background work is
// bound by the Redis timeouts only.
func TestRequestBudget(t *testing.T) {
	srv := redistest.Start(t)
	slow := duration.Duration(2 * hangGuard)
	s, _ := open(t, store.Options{
		RequestBudget: duration.Duration(200 * time.Millisecond),
		Redis:         store.RedisOptions{Addrs: []string{srv.Addr()}, DialTimeout: slow, ReadTimeout: slow, WriteTimeout: slow},
	})
	// Another store, on a client of its own, whose budget is shorter than
	// its Redis timeouts: background calls still end at those.
	quick := duration.Duration(100 * time.Millisecond)
	bg, _ := open(t, store.Options{
		RequestBudget: duration.Duration(10 * time.Millisecond),
		Redis:         store.RedisOptions{Addrs: []string{srv.Addr()}, DialTimeout: quick, ReadTimeout: quick, WriteTimeout: quick},
	})
	refs := []store.Ref{{Kind: store.RefTask, ID: "t1"}}
	owner := store.Owner{Tenant: "acme", Subject: "alice"}
	ops := []struct {
		name string
		call func(ctx context.Context, s store.Store) error
	}{
		{"ownership claim (shared pipeline)", func(ctx context.Context, s store.Store) error {
			_, err := s.Ownership().Claim(ctx, "agent", []store.Ref{{Kind: store.RefTask, ID: "t2"}}, owner)
			return err
		}},
		{"ownership lookup", func(ctx context.Context, s store.Store) error {
			_, err := s.Ownership().Lookup(ctx, "agent", refs)
			return err
		}},
		{"dedupe claim (shared pipeline)", func(ctx context.Context, s store.Store) error {
			_, _, err := s.Dedupe().Claim(ctx, "acme", "m-1", "fp", "holder", time.Minute, time.Hour)
			return err
		}},
		{"open tasks", func(ctx context.Context, s store.Store) error {
			_, err := s.ActiveTasks().Count(ctx, "acme", time.Hour)
			return err
		}},
		{"ping", func(ctx context.Context, s store.Store) error { return s.Ping(ctx) }},
	}
	for _, st := range []store.Store{s, bg} {
		if _, err := st.Ownership().Claim(testContext(t), "agent", refs, owner); err != nil {
			t.Fatalf("before the outage: %v", err)
		}
	}

	srv.Pause(t)
	defer srv.Resume(t)
	req := request.OnPath(context.Background())
	done := make(chan []error, 1)
	go func() {
		var errs []error
		for _, op := range ops {
			errs = append(errs, op.call(req, s))
		}
		done <- errs
	}()
	select {
	case errs := <-done:
		for i, err := range errs {
			if !errors.Is(err, store.ErrBudgetSpent) || !errors.Is(err, store.ErrUnavailable) {
				t.Errorf("%s: err = %v, want ErrBudgetSpent (and so ErrUnavailable)", ops[i].name, err)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s: err = %v reads as the caller's own deadline", ops[i].name, err)
			}
		}
	case <-time.After(hangGuard):
		t.Fatal("the request's store calls waited for Redis's timeouts, not for the request's budget")
	}
	if _, spent := request.StoreWait(req); !spent {
		t.Error("StoreWait does not say the budget ran out")
	}
	if _, spent := request.StoreWait(request.OnPath(context.Background())); spent {
		t.Error("a new request starts with its budget spent")
	}

	srv.Resume(t)
	// A spent budget stays spent, with Redis back or not; the next answer
	// or event of the request gets a budget of its own.
	if _, err := s.Ownership().Lookup(req, "agent", refs); !errors.Is(err, store.ErrBudgetSpent) {
		t.Errorf("a spent budget after Redis came back: err = %v, want ErrBudgetSpent", err)
	}
	renewed := request.RenewBudget(req)
	if _, err := s.Ownership().Lookup(renewed, "agent", refs); err != nil {
		t.Errorf("a renewed budget after Redis came back: %v", err)
	}
	if _, spent := request.StoreWait(renewed); !spent {
		t.Error("a renewed budget forgets that the request's budget ran out")
	}
	srv.Pause(t)

	for _, ctx := range map[string]context.Context{
		"off the request path":          request.OffPath(req),
		"derived, then off the request": request.OffPath(context.WithoutCancel(req)),
		"never on it":                   context.Background(),
	} {
		for _, op := range ops {
			err := op.call(ctx, bg)
			if !errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrBudgetSpent) {
				t.Errorf("background %s: err = %v, want ErrUnavailable from the Redis timeouts", op.name, err)
			}
		}
	}
}
