package lifecycle_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/metrics/lifecycle"
)

// An operator's cancel goes to the agent as the watchdog's does, and the
// state recorded is the one the agent answers with.
func TestOperatorCancelAsksTheAgent(t *testing.T) {
	agent, url := startDemo(t)
	st := memoryStore(t).Lifecycle()
	p := startProxy(t, st, url)
	task := p.startWorking(t, "never")

	state, err := p.tr.Cancel(context.Background(), agentName, task.TaskID, "ops-token")
	if err != nil {
		t.Fatalf("Cancel: %v\n%s", err, p.logs.String())
	}
	p.flush(t)
	rec := getRecord(t, st, task.TaskID)
	if state.String() != "canceled" || rec.State != "canceled" || rec.EndedBy != store.EndedByCancel {
		t.Fatalf("after Cancel: agent says %s, record %s ended by %q; want canceled by a cancel", state, path(rec), rec.EndedBy)
	}
	if n := cancels(agent, task.TaskID); n != 1 {
		t.Errorf("the agent saw %d CancelTask calls, want 1", n)
	}
	if !strings.Contains(p.logs.String(), "by=ops-token") {
		t.Errorf("the log does not say who asked:\n%s", p.logs.String())
	}
	if _, err := p.tr.Cancel(context.Background(), agentName, "no-such-task", "ops-token"); !errors.Is(err, lifecycle.ErrNoRecord) {
		t.Errorf("Cancel of an unknown task: %v, want ErrNoRecord", err)
	}
	if _, err := p.tr.Cancel(context.Background(), "other", task.TaskID, "ops-token"); !errors.Is(err, lifecycle.ErrUnknownAgent) {
		t.Errorf("Cancel at an unknown agent: %v, want ErrUnknownAgent", err)
	}
}

func TestSetLegalHold(t *testing.T) {
	_, url := startDemo(t)
	st := memoryStore(t).Lifecycle()
	p := startProxy(t, st, url)
	task := p.startWorking(t, "never")
	for _, hold := range []bool{true, false} {
		rec, err := p.tr.SetLegalHold(context.Background(), agentName, task.TaskID, hold, "alice")
		if err != nil || rec.LegalHold != hold || getRecord(t, st, task.TaskID).LegalHold != hold {
			t.Fatalf("SetLegalHold(%v) = %+v, %v", hold, rec, err)
		}
	}
	if _, err := p.tr.SetLegalHold(context.Background(), agentName, "no-such-task", true, "alice"); !errors.Is(err, lifecycle.ErrNoRecord) {
		t.Errorf("SetLegalHold of an unknown task: %v, want ErrNoRecord", err)
	}
}
