// Package probe reads what A2A answers cannot show a case: the agents'
// out-of-band counters (served under /interop/ by both interop agents) and
// the deliveries recorded by the webhook receiver.
package probe

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/a2a-gateway/a2a-gateway/interop/internal/webhook"
)

const pollInterval = 50 * time.Millisecond

// Task is an agent's view of one of its tasks.
type Task struct {
	// Subscriptions counts every attachment to the task's events: the
	// sending request's and each resubscription.
	Subscriptions int `json:"subscriptions"`
	// PushURLs are the webhook URLs the agent was given for the task.
	PushURLs []string `json:"pushUrls"`
	// Held reports whether a "hold" execution waits to be released.
	Held bool `json:"held"`
}

// Client talks to one agent's probe and to the webhook receiver.
type Client struct {
	agent   string
	webhook string
	http    *http.Client
}

// New returns a client for the agent's own base URL (not the gateway's) and
// the webhook receiver's base URL.
func New(agentBase, webhookBase string) *Client {
	return &Client{
		agent:   strings.TrimRight(agentBase, "/"),
		webhook: strings.TrimRight(webhookBase, "/"),
		http:    &http.Client{Timeout: 10 * time.Second},
	}
}

func (c *Client) do(ctx context.Context, method, u string, want int, into any) error {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: HTTP %d", method, u, resp.StatusCode)
	}
	if into == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		return fmt.Errorf("%s %s: %w", method, u, err)
	}
	return nil
}

// Executions is how many times the agent ran the message with this id.
func (c *Client) Executions(ctx context.Context, messageID string) (int, error) {
	var body struct {
		Executions int `json:"executions"`
	}
	err := c.do(ctx, http.MethodGet, c.agent+"/interop/messages/"+url.PathEscape(messageID), http.StatusOK, &body)
	return body.Executions, err
}

// Task returns the agent's view of a task.
func (c *Client) Task(ctx context.Context, taskID string) (Task, error) {
	var t Task
	err := c.do(ctx, http.MethodGet, c.agent+"/interop/tasks/"+url.PathEscape(taskID), http.StatusOK, &t)
	return t, err
}

// Release lets a task started with "hold" finish.
func (c *Client) Release(ctx context.Context, taskID string) error {
	err := c.do(ctx, http.MethodPost, c.agent+"/interop/tasks/"+url.PathEscape(taskID)+"/release", http.StatusNoContent, nil)
	if err != nil {
		return fmt.Errorf("release %s (was it held?): %w", taskID, err)
	}
	return nil
}

// Hook is a fresh webhook on the receiver.
type Hook struct {
	ID  string
	URL string
}

// NewHook returns a webhook URL no other case uses.
func (c *Client) NewHook(id string) Hook {
	return Hook{ID: id, URL: c.webhook + "/hooks/" + url.PathEscape(id)}
}

// Deliveries lists what reached a hook so far.
func (c *Client) Deliveries(ctx context.Context, hookID string) ([]webhook.Delivery, error) {
	var body struct {
		Deliveries []webhook.Delivery `json:"deliveries"`
	}
	err := c.do(ctx, http.MethodGet, c.webhook+"/deliveries/"+url.PathEscape(hookID), http.StatusOK, &body)
	return body.Deliveries, err
}

// Poll calls check until it reports done, returns an error, or ctx ends.
func Poll(ctx context.Context, check func() (bool, error)) error {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		done, err := check()
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
