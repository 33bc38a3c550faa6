package goclient

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/a2a-gateway/a2a-gateway/interop/internal/probe"
	"github.com/a2a-gateway/a2a-gateway/interop/internal/report"
)

const streamChunks = 3

// A case returns what it saw when it passes and an error when it fails.
type caseFunc func(ctx context.Context, e *env) (string, error)

var cases = map[report.Case]caseFunc{
	report.Send:               caseSend,
	report.Stream:             caseStream,
	report.Get:                caseGet,
	report.Cancel:             caseCancel,
	report.Resubscribe:        caseResubscribe,
	report.InputRequired:      caseInputRequired,
	report.PushConfig:         casePushConfig,
	report.PushRelay:          casePushRelay,
	report.PushOrder:          casePushOrder,
	report.TenantIsolation:    caseTenantIsolation,
	report.RefusedStream:      caseRefusedStream,
	report.RefusedResubscribe: caseRefusedResubscribe,
	report.Dedupe:             caseDedupe,
}

func userMessage(text string) *a2a.Message {
	return a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: text})
}

// followUp is a message continuing a task.
func followUp(t *a2a.Task, text string) *a2a.Message {
	return a2a.NewMessageForTask(a2a.MessageRoleUser, t, a2a.TextPart{Text: text})
}

func sendTask(ctx context.Context, e *env, m *a2a.Message, what string) (*a2a.Task, error) {
	res, err := e.client.SendMessage(ctx, &a2a.MessageSendParams{Message: m})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	t, ok := res.(*a2a.Task)
	if !ok {
		return nil, fmt.Errorf("%s: expected a task, got %T", what, res)
	}
	return t, nil
}

func expectState(t *a2a.Task, want a2a.TaskState, what string) error {
	if t.Status.State != want {
		return fmt.Errorf("%s: task %s is %s, want %s", what, t.ID, t.Status.State, want)
	}
	return nil
}

func expectArtifact(t *a2a.Task, want, what string) error {
	texts := artifactTexts(t)
	if !slices.Contains(texts, want) {
		return fmt.Errorf("%s: task %s artifacts %q, want %q", what, t.ID, texts, want)
	}
	return nil
}

func caseSend(ctx context.Context, e *env) (string, error) {
	t, err := sendTask(ctx, e, userMessage("complete hello"), "send")
	if err != nil {
		return "", err
	}
	if err := errors.Join(expectState(t, a2a.TaskStateCompleted, "send"), expectArtifact(t, "echo: hello", "send")); err != nil {
		return "", err
	}
	return fmt.Sprintf("task %s completed", t.ID), nil
}

func caseStream(ctx context.Context, e *env) (string, error) {
	var got []string
	for ev, err := range e.client.SendStreamingMessage(ctx, &a2a.MessageSendParams{Message: userMessage(fmt.Sprintf("stream %d", streamChunks))}) {
		if err != nil {
			return "", fmt.Errorf("stream after %q: %w", got, err)
		}
		got = append(got, describe(ev))
	}
	want := []string{"task:submitted", "status:working"}
	for i := 1; i <= streamChunks; i++ {
		want = append(want, fmt.Sprintf("artifact:chunk %d", i))
	}
	want = append(want, "status:completed")
	if !slices.Equal(got, want) {
		return "", fmt.Errorf("stream: events %q, want %q", got, want)
	}
	return fmt.Sprintf("%d events in order", len(got)), nil
}

func caseGet(ctx context.Context, e *env) (string, error) {
	sent, err := sendTask(ctx, e, userMessage("complete get"), "send")
	if err != nil {
		return "", err
	}
	got, err := e.client.GetTask(ctx, &a2a.TaskQueryParams{ID: sent.ID})
	if err != nil {
		return "", fmt.Errorf("get: %w", err)
	}
	if got.ID != sent.ID {
		return "", fmt.Errorf("get: asked for %s, got %s", sent.ID, got.ID)
	}
	if err := errors.Join(expectState(got, a2a.TaskStateCompleted, "get"), expectArtifact(got, "echo: get", "get")); err != nil {
		return "", err
	}
	return fmt.Sprintf("task %s completed", got.ID), nil
}

// startHeld starts a "hold" task on a stream and reads until the agent
// works on it.
func startHeld(ctx context.Context, e *env) (*stream, a2a.TaskID, error) {
	s := startStream(ctx, e.client.SendStreamingMessage(ctx, &a2a.MessageSendParams{Message: userMessage("hold")}))
	seen, err := s.until(ctx, "status:working")
	if err != nil {
		return nil, "", fmt.Errorf("hold: %w", err)
	}
	id := seen[0].TaskInfo().TaskID
	if id == "" {
		return nil, "", fmt.Errorf("hold: the first event %s names no task", describe(seen[0]))
	}
	return s, id, nil
}

func caseCancel(ctx context.Context, e *env) (string, error) {
	s, id, err := startHeld(ctx, e)
	if err != nil {
		return "", err
	}
	t, err := e.client.CancelTask(ctx, &a2a.TaskIDParams{ID: id})
	if err != nil {
		return "", fmt.Errorf("cancel: %w", err)
	}
	if err := expectState(t, a2a.TaskStateCanceled, "cancel"); err != nil {
		return "", err
	}
	rest, err := s.rest(ctx)
	if err != nil {
		return "", fmt.Errorf("cancel: stream: %w", err)
	}
	if len(rest) == 0 || describe(rest[len(rest)-1]) != "status:canceled" {
		return "", fmt.Errorf("cancel: the stream ended with %q", describeAll(rest))
	}
	return fmt.Sprintf("task %s canceled; stream ended canceled", id), nil
}

func caseResubscribe(ctx context.Context, e *env) (string, error) {
	dropCtx, drop := context.WithCancel(ctx)
	defer drop()
	s, id, err := startHeld(dropCtx, e)
	if err != nil {
		return "", err
	}
	before, err := e.probe.Task(ctx, string(id))
	if err != nil {
		return "", err
	}
	drop()
	s.close()

	sub := startStream(ctx, e.client.ResubscribeToTask(ctx, &a2a.TaskIDParams{ID: id}))
	defer sub.close()
	// Release the task only once the agent has attached the new
	// subscriber, so no event can fall between the two streams.
	err = probe.Poll(ctx, func() (bool, error) {
		t, err := e.probe.Task(ctx, string(id))
		return err == nil && t.Subscriptions > before.Subscriptions, err
	})
	if err != nil {
		return "", fmt.Errorf("resubscribe: waiting for the agent to attach the subscriber: %w", err)
	}
	if err := e.probe.Release(ctx, string(id)); err != nil {
		return "", err
	}
	events, err := sub.rest(ctx)
	if err != nil {
		return "", fmt.Errorf("resubscribe after %q: %w", describeAll(events), err)
	}
	got := describeAll(events)
	if !slices.Contains(got, "artifact:released") || len(got) == 0 || got[len(got)-1] != "status:completed" {
		return "", fmt.Errorf("resubscribe: events %q, want the artifact and a completed ending", got)
	}
	return "resubscribed after a dropped stream: " + strings.Join(got, ", "), nil
}

func caseInputRequired(ctx context.Context, e *env) (string, error) {
	first, err := sendTask(ctx, e, userMessage("input"), "send")
	if err != nil {
		return "", err
	}
	if err := expectState(first, a2a.TaskStateInputRequired, "send"); err != nil {
		return "", err
	}
	second, err := sendTask(ctx, e, followUp(first, "resume now"), "resume")
	if err != nil {
		return "", err
	}
	if second.ID != first.ID {
		return "", fmt.Errorf("resume: answered task %s, want %s", second.ID, first.ID)
	}
	if err := errors.Join(expectState(second, a2a.TaskStateCompleted, "resume"), expectArtifact(second, "resumed: resume now", "resume")); err != nil {
		return "", err
	}
	return fmt.Sprintf("task %s input-required, then completed", first.ID), nil
}

func casePushConfig(ctx context.Context, e *env) (string, error) {
	t, err := sendTask(ctx, e, userMessage("input"), "send")
	if err != nil {
		return "", err
	}
	hook := e.probe.NewHook(a2a.NewMessageID())
	created, err := e.client.SetTaskPushConfig(ctx, &a2a.TaskPushConfig{
		TaskID: t.ID,
		Config: a2a.PushConfig{ID: "cfg-" + hook.ID, URL: hook.URL, Token: a2a.NewMessageID()},
	})
	if err != nil {
		return "", fmt.Errorf("create: %w", err)
	}
	if created.Config.URL != hook.URL || created.Config.ID == "" {
		return "", fmt.Errorf("create: answered %+v", created.Config)
	}
	cfgID := created.Config.ID
	got, err := e.client.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigParams{TaskID: t.ID, ConfigID: cfgID})
	if err != nil {
		return "", fmt.Errorf("get: %w", err)
	}
	if got.Config.ID != cfgID || got.Config.URL != hook.URL {
		return "", fmt.Errorf("get: answered %+v", got.Config)
	}
	list := func() ([]string, error) {
		cfgs, err := e.client.ListTaskPushConfig(ctx, &a2a.ListTaskPushConfigParams{TaskID: t.ID})
		ids := make([]string, 0, len(cfgs))
		for _, c := range cfgs {
			ids = append(ids, c.Config.ID)
		}
		return ids, err
	}
	listed, err := list()
	if err != nil {
		return "", fmt.Errorf("list: %w", err)
	}
	if !slices.Contains(listed, cfgID) {
		return "", fmt.Errorf("list: %q lacks %s", listed, cfgID)
	}
	if err := e.client.DeleteTaskPushConfig(ctx, &a2a.DeleteTaskPushConfigParams{TaskID: t.ID, ConfigID: cfgID}); err != nil {
		return "", fmt.Errorf("delete: %w", err)
	}
	after, err := list()
	if err != nil {
		return "", fmt.Errorf("list after delete: %w", err)
	}
	if slices.Contains(after, cfgID) {
		return "", fmt.Errorf("list after delete: %q still has %s", after, cfgID)
	}
	return fmt.Sprintf("config %s created, read, listed and deleted", cfgID), nil
}

// notFound names the refusal the client must see for another tenant's task.
func (e *env) notFound() string {
	if e.grpc {
		return "gRPC status NOT_FOUND"
	}
	return "a2a.ErrTaskNotFound"
}

// expectTaskNotFound checks a refusal. The a2a-go gRPC client hands back
// the gRPC status as it came, without turning it into an a2a error: over
// gRPC, TaskNotFound is the status NOT_FOUND.
func (e *env) expectTaskNotFound(what string, err error) error {
	if err == nil {
		return fmt.Errorf("%s: succeeded for another tenant's task", what)
	}
	if e.grpc && status.Code(err) == codes.NotFound || !e.grpc && errors.Is(err, a2a.ErrTaskNotFound) {
		return nil
	}
	return fmt.Errorf("%s: want %s, got %w", what, e.notFound(), err)
}

func caseTenantIsolation(ctx context.Context, e *env) (string, error) {
	t, err := sendTask(ctx, e, userMessage("complete mine"), "send")
	if err != nil {
		return "", err
	}
	_, getErr := e.other.GetTask(ctx, &a2a.TaskQueryParams{ID: t.ID})
	_, cancelErr := e.other.CancelTask(ctx, &a2a.TaskIDParams{ID: t.ID})
	if err := errors.Join(e.expectTaskNotFound("GetTask", getErr), e.expectTaskNotFound("CancelTask", cancelErr)); err != nil {
		return "", err
	}
	own, err := e.client.GetTask(ctx, &a2a.TaskQueryParams{ID: t.ID})
	if err != nil {
		return "", fmt.Errorf("GetTask by the owner: %w", err)
	}
	if own.ID != t.ID {
		return "", fmt.Errorf("GetTask by the owner answered %s", own.ID)
	}
	return fmt.Sprintf("the other tenant gets %s for task %s", e.notFound(), t.ID), nil
}

// expectStreamTaskNotFound reads a stream the other tenant opened on a
// task not its own: it must end with the not-found refusal before any
// event. A stream that ends without an error is what a refusal written as
// plain JSON looks like to this client.
func (e *env) expectStreamTaskNotFound(what string, events iter.Seq2[a2a.Event, error]) error {
	// The first item decides: an error, or an event the caller must not get.
	for ev, err := range events {
		if err != nil {
			return e.expectTaskNotFound(what, err)
		}
		return fmt.Errorf("%s: the other tenant got an event: %T", what, ev)
	}
	return fmt.Errorf("%s: the stream ended without an error and without events", what)
}

func caseRefusedStream(ctx context.Context, e *env) (string, error) {
	t, err := sendTask(ctx, e, userMessage("complete mine"), "send")
	if err != nil {
		return "", err
	}
	events := e.other.SendStreamingMessage(ctx, &a2a.MessageSendParams{Message: followUp(t, "complete theirs")})
	if err := e.expectStreamTaskNotFound("SendStreamingMessage", events); err != nil {
		return "", err
	}
	return fmt.Sprintf("the other tenant's stream on task %s ends with %s", t.ID, e.notFound()), nil
}

func caseRefusedResubscribe(ctx context.Context, e *env) (string, error) {
	t, err := sendTask(ctx, e, userMessage("complete mine"), "send")
	if err != nil {
		return "", err
	}
	if err := e.expectStreamTaskNotFound("ResubscribeToTask", e.other.ResubscribeToTask(ctx, &a2a.TaskIDParams{ID: t.ID})); err != nil {
		return "", err
	}
	return fmt.Sprintf("the other tenant's resubscription to task %s ends with %s", t.ID, e.notFound()), nil
}

func caseDedupe(ctx context.Context, e *env) (string, error) {
	m := userMessage("complete once")
	first, err := sendTask(ctx, e, m, "send")
	if err != nil {
		return "", err
	}
	retry, err := sendTask(ctx, e, m, "retry")
	if err != nil {
		return "", err
	}
	if retry.ID != first.ID {
		return "", fmt.Errorf("retry: answered task %s, first send %s", retry.ID, first.ID)
	}
	runs, err := e.probe.Executions(ctx, m.ID)
	if err != nil {
		return "", err
	}
	if runs != 1 {
		return "", fmt.Errorf("the agent ran message %s %d times", m.ID, runs)
	}
	return fmt.Sprintf("one task (%s) and one execution for two sends", first.ID), nil
}
