package goclient

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/a2a-gateway/a2a-gateway/interop/internal/webhook"
)

// The push order case's size: tasks, each streaming this many chunks.
const (
	pushOrderTasks  = 5
	pushOrderChunks = 10
)

// casePushOrder registers a webhook for each of a few tasks waiting for
// input, and once the relay follows them (its first notification), lets
// each stream its chunks: the agent pushes them to the gateway while the
// gateway reads the task. Every consumer gets its task's chunks in order,
// each once, the state never going back, and the end last.
func casePushOrder(ctx context.Context, e *env) (string, error) {
	type followed struct {
		task  *a2a.Task
		hook  string
		token string
	}
	var all []followed
	for range pushOrderTasks {
		t, hook, token, err := inputWithHook(ctx, e)
		if err != nil {
			return "", err
		}
		all = append(all, followed{t, hook.ID, token})
	}
	for _, f := range all {
		if _, err := waitDeliveries(ctx, e, f.hook, func(ds []webhook.Delivery) bool { return len(ds) > 0 }); err != nil {
			return "", fmt.Errorf("webhook: no notification for task %s: %w", f.task.ID, err)
		}
	}
	for _, f := range all {
		done, err := sendTask(ctx, e, followUp(f.task, "stream "+strconv.Itoa(pushOrderChunks)), "resume")
		if err != nil {
			return "", err
		}
		if err := expectState(done, a2a.TaskStateCompleted, "resume"); err != nil {
			return "", err
		}
	}
	n := 0
	for _, f := range all {
		ds, err := waitDeliveries(ctx, e, f.hook, func(ds []webhook.Delivery) bool {
			return slices.ContainsFunc(ds, func(d webhook.Delivery) bool { return d.State == string(a2a.TaskStateCompleted) })
		})
		if err != nil {
			return "", fmt.Errorf("webhook: no completed notification for task %s after %q: %w", f.task.ID, describeDeliveries(ds), err)
		}
		got, err := notifications(ds, string(f.task.ID), f.token)
		if err != nil {
			return "", fmt.Errorf("webhook: %w", err)
		}
		if err := inOrder(got, pushOrderChunks); err != nil {
			return "", fmt.Errorf("webhook: task %s: %w: %q", f.task.ID, err, got)
		}
		n += len(got)
	}
	return fmt.Sprintf("%d tasks of %d chunks, %d notifications, each task's in order", pushOrderTasks, pushOrderChunks, n), nil
}

// inOrder checks notifications, named as the receiver names them, against
// the order a stream of the task shows: input-required, working, chunks
// 1 to n, completed. Consecutive steps may come as one (a 0.3 consumer's
// full task), nothing may repeat, go back or follow the end.
func inOrder(events []string, n int) error {
	var full strings.Builder
	for i := 1; i <= n; i++ {
		full.WriteString("chunk " + strconv.Itoa(i))
	}
	rank := map[string]int{"input-required": 0, "working": 1, "completed": 2}
	state, text := -1, ""
	for i, ev := range events {
		kind, rest, _ := strings.Cut(ev, ":")
		next, nextText := state, text
		switch kind {
		case "task":
			st, arts, _ := strings.Cut(rest, " [")
			next, nextText = rank[st], strings.TrimSuffix(arts, "]")
		case "status":
			next = rank[rest]
		case "artifact":
			nextText = text + rest
		default:
			return fmt.Errorf("notification %d is a %s", i+1, kind)
		}
		switch {
		case state == rank["completed"]:
			return fmt.Errorf("notification %d follows the end", i+1)
		case next < state:
			return fmt.Errorf("notification %d: the state went back", i+1)
		case !strings.HasPrefix(full.String(), nextText) || len(nextText) < len(text):
			return fmt.Errorf("notification %d: the chunks are not in order", i+1)
		case next == state && nextText == text:
			return fmt.Errorf("notification %d repeats the one before", i+1)
		}
		state, text = next, nextText
	}
	if state != rank["completed"] || text != full.String() {
		return fmt.Errorf("the task did not end completed with every chunk")
	}
	return nil
}
