package goclient

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/a2a-gateway/a2a-gateway/interop/internal/probe"
	"github.com/a2a-gateway/a2a-gateway/interop/internal/webhook"
)

// pushRelayEvents is what a 0.3 consumer (the a2a-go client's version) is
// sent for the push relay case's task: the full task after each event,
// from the task as the relay first finds it to its end.
var pushRelayEvents = []string{
	"task:input-required",
	"task:working",
	"task:working [resumed: resume push]",
	"task:completed [resumed: resume push]",
}

// pushRelayContentType is the Content-Type of a 0.3 notification.
const pushRelayContentType = "application/json"

// casePushRelay registers a webhook for a task waiting for input, resumes
// the task, and checks that the receiver got every event in order through
// to the end, each signed by the gateway and carrying the configured
// token, and that the agent was never given the consumer's URL.
func casePushRelay(ctx context.Context, e *env) (string, error) {
	t, hook, token, err := inputWithHook(ctx, e)
	if err != nil {
		return "", err
	}
	// The relay's first notification is the task as the relay finds it
	// when it starts following the task; resuming only then makes what the
	// receiver gets independent of how soon that is.
	if _, err := waitDeliveries(ctx, e, hook.ID, func(ds []webhook.Delivery) bool { return len(ds) > 0 }); err != nil {
		return "", fmt.Errorf("webhook: no notification for task %s: %w", t.ID, err)
	}
	done, err := sendTask(ctx, e, followUp(t, "resume push"), "resume")
	if err != nil {
		return "", err
	}
	if err := expectState(done, a2a.TaskStateCompleted, "resume"); err != nil {
		return "", err
	}
	ds, err := waitDeliveries(ctx, e, hook.ID, func(ds []webhook.Delivery) bool {
		return slices.ContainsFunc(ds, func(d webhook.Delivery) bool { return d.State == string(a2a.TaskStateCompleted) })
	})
	if err != nil {
		return "", fmt.Errorf("webhook: no completed notification for task %s after %q: %w", t.ID, describeDeliveries(ds), err)
	}
	got, err := notifications(ds, string(t.ID), token)
	if err != nil {
		return "", fmt.Errorf("webhook: %w", err)
	}
	if !slices.Equal(got, pushRelayEvents) {
		return "", fmt.Errorf("webhook: notifications %q, want %q", got, pushRelayEvents)
	}
	view, err := e.probe.Task(ctx, string(t.ID))
	if err != nil {
		return "", err
	}
	if slices.Contains(view.PushURLs, hook.URL) {
		return "", fmt.Errorf("the agent was given the consumer's webhook URL (it holds %q)", view.PushURLs)
	}
	return fmt.Sprintf("%d notifications in order, signed by the gateway; the agent was given only %q", len(got), view.PushURLs), nil
}

// inputWithHook starts a task waiting for input and registers a push
// config for it with a fresh hook and token.
func inputWithHook(ctx context.Context, e *env) (*a2a.Task, probe.Hook, string, error) {
	t, err := sendTask(ctx, e, userMessage("input"), "send")
	if err != nil {
		return nil, probe.Hook{}, "", err
	}
	hook := e.probe.NewHook(a2a.NewMessageID())
	token := a2a.NewMessageID()
	if _, err := e.client.SetTaskPushConfig(ctx, &a2a.TaskPushConfig{
		TaskID: t.ID,
		Config: a2a.PushConfig{ID: "cfg-" + hook.ID, URL: hook.URL, Token: token},
	}); err != nil {
		return nil, probe.Hook{}, "", fmt.Errorf("create: %w", err)
	}
	return t, hook, token, nil
}

// waitDeliveries polls the receiver until what reached the hook satisfies
// until.
func waitDeliveries(ctx context.Context, e *env, hookID string, until func([]webhook.Delivery) bool) ([]webhook.Delivery, error) {
	var ds []webhook.Delivery
	err := probe.Poll(ctx, func() (bool, error) {
		var err error
		ds, err = e.probe.Deliveries(ctx, hookID)
		return err == nil && until(ds), err
	})
	return ds, err
}

// notifications checks every delivery (the task's, readable, verified
// against the gateway's keys, with the configured token, in the 0.3 media
// type) and returns the notifications in the order they arrived, each once:
// a retry repeats its notification's id.
func notifications(ds []webhook.Delivery, taskID, token string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for i, d := range ds {
		switch {
		case d.Error != "":
			return nil, fmt.Errorf("delivery %d is unreadable: %s", i+1, d.Error)
		case !d.Verified:
			return nil, fmt.Errorf("delivery %d (%s): signature not verified: %s", i+1, d.Event, d.SignatureError)
		case d.TaskID != taskID:
			return nil, fmt.Errorf("delivery %d (%s) is about task %s, want %s", i+1, d.Event, d.TaskID, taskID)
		case d.Token != token:
			return nil, fmt.Errorf("delivery %d (%s) does not carry the configured token", i+1, d.Event)
		case !strings.HasPrefix(d.ContentType, pushRelayContentType):
			return nil, fmt.Errorf("delivery %d (%s) has Content-Type %q, want %s", i+1, d.Event, d.ContentType, pushRelayContentType)
		case seen[d.ID]:
			continue
		}
		seen[d.ID] = true
		out = append(out, d.Event)
	}
	return out, nil
}

func describeDeliveries(ds []webhook.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Event
	}
	return out
}
