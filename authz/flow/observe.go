package flow

import (
	"context"
	"fmt"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/proxy"
)

var _ proxy.Rewriter = (*Flow)(nil)

// Event is what the flow needs of one task event, from any source: the
// proxy's answers and streams (Observe), or a push relay (Track).
type Event struct {
	Agent, TaskID, ContextID string
	// Tenant and Subject own the task; empty means the task's lifecycle
	// record says (an event from a push source).
	Tenant, Subject string
	// Version is the protocol version of Result.
	Version a2a.Version
	// Kind is a2a.EventTask or a2a.EventStatusUpdate; others are ignored.
	Kind  a2a.EventKind
	State a2a.State
	// Result is the unwrapped result object: no JSON-RPC envelope.
	Result []byte
}

// Observe opens a challenge when an answer or stream event shows a task of
// a participating agent in auth-required, and closes the task's challenge
// when it shows any other state. It never withholds an answer: a
// challenge that could not be opened is logged, and the caller still gets
// what the agent said.
func (f *Flow) Observe(ctx context.Context, s *proxy.Scope, ev a2a.Event, payload []byte) error {
	if f.agents[s.Agent.Name] == nil || !tracked(ev) || s.Principal == nil {
		return nil
	}
	result := s.Result()
	if result == nil {
		return nil
	}
	err := f.Track(ctx, Event{
		Agent: s.Agent.Name, TaskID: ev.TaskID, ContextID: ev.ContextID,
		Tenant: s.Principal.Tenant, Subject: s.Principal.Subject,
		Version: s.Op.Version, Kind: ev.Kind, State: ev.State, Result: result,
	})
	if err != nil {
		s.Log().Warn("auth flow: task event not applied", "task_id", ev.TaskID, "state", ev.State.String(), "err", err)
	}
	return nil
}

// tracked reports whether ev says which state a task is in.
func tracked(ev a2a.Event) bool {
	return ev.TaskID != "" && (ev.Kind == a2a.EventTask || ev.Kind == a2a.EventStatusUpdate) && ev.State != a2a.StateUnknown
}

// Track applies one task event: auth-required opens a challenge unless the
// task has a pending one; any other state closes the task's challenge (the
// agent resumed, with a credential from the gateway or on its own). A push
// relay calls it for events that did not come through the proxy.
func (f *Flow) Track(ctx context.Context, ev Event) error {
	af := f.agents[ev.Agent]
	if af == nil || ev.TaskID == "" || (ev.Kind != a2a.EventTask && ev.Kind != a2a.EventStatusUpdate) || ev.State == a2a.StateUnknown {
		return nil
	}
	if ev.State != a2a.StateAuthRequired {
		return f.closeChallenge(ctx, ev)
	}
	if ev.Tenant == "" {
		rec, found, err := f.lc.Get(ctx, ev.Agent, ev.TaskID)
		if err != nil {
			return fmt.Errorf("read the task's owner: %w", err)
		}
		if !found || rec.Tenant == "" {
			// A challenge must belong to someone; the task's first answer
			// through the gateway will open it.
			return nil
		}
		ev.Tenant, ev.Subject, ev.ContextID = rec.Tenant, rec.Subject, firstNonEmpty(ev.ContextID, rec.ContextID)
	}
	req := parseRequirement(ev.Result, ev.Version, ev.Kind)
	c := f.newChallenge(ev.Agent, ev.TaskID, ev.ContextID, ev.Tenant, ev.Subject, ev.Version.String(), req, f.now())
	_, err := f.open(ctx, c, "")
	return err
}

// closeChallenge ends the task's challenge because it left auth-required.
// A challenge whose credential was used was counted as a resume already;
// one closed unused means the agent moved on by itself.
func (f *Flow) closeChallenge(ctx context.Context, ev Event) error {
	before, found, err := f.st.Close(ctx, ev.Agent, ev.TaskID)
	if err != nil {
		return fmt.Errorf("close auth challenge: %w", err)
	}
	if !found || before.Status == store.ChallengeUsed {
		return nil
	}
	f.m.Closed.WithLabelValues(ev.Agent, ev.State.String()).Inc()
	f.log.Info("auth challenge closed: the task left auth-required without a credential from the gateway",
		"agent", ev.Agent, "task_id", ev.TaskID, "challenge_id", before.ID, "state", ev.State.String())
	return nil
}

// Rewrite adds the task's challenge to an auth-required task or status
// update, under ChallengeMetadataKey, for the tenant and subject it belongs
// to; everything the agent said is kept. An answer that cannot be
// rewritten passes unchanged.
func (f *Flow) Rewrite(ctx context.Context, s *proxy.Scope, ev a2a.Event, payload []byte) ([]byte, error) {
	p := s.Principal
	if ev.State != a2a.StateAuthRequired || !tracked(ev) || p == nil || f.agents[s.Agent.Name] == nil {
		return payload, nil
	}
	c, found, err := f.st.Current(ctx, s.Agent.Name, ev.TaskID)
	if err != nil {
		s.Log().Warn("auth flow: challenge not read; the answer goes without it", "task_id", ev.TaskID, "err", err)
		return payload, nil
	}
	if !found || c.Tenant != p.Tenant || c.Subject != p.Subject || c.Status == store.ChallengeUsed || c.Status == store.ChallengeClosed {
		return payload, nil
	}
	out, err := withEventMetadata(payload, s.Op.Binding == a2a.BindingJSONRPC, ChallengeMetadataKey, f.view(c, f.now()))
	if err != nil {
		s.Log().Debug("auth flow: answer not rewritable; sent without its challenge", "task_id", ev.TaskID, "err", err)
		return payload, nil
	}
	return out, nil
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
