package demoagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

const (
	pushAttempts = 3
	pushTimeout  = 5 * time.Second
	pushBackoff  = 100 * time.Millisecond
)

// delivery is one notification to one config, rendered when the change
// happened so a slow receiver never sees a later state in an earlier push.
type delivery struct {
	configID      string
	taskID        string
	url           string
	token         string
	authorization string
	contentType   string
	body          []byte
}

func newPushClient() *http.Client {
	return &http.Client{
		Timeout: pushTimeout,
		// A redirect would turn the POST into a GET to wherever the
		// receiver points; treat it as a failed delivery instead.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// enqueuePushLocked queues one notification per config for ev: 1.0 configs
// get the StreamResponse of the event, 0.x configs the whole task.
func (a *Agent) enqueuePushLocked(t *task, ev event) {
	if len(t.push) == 0 {
		return
	}
	var full *taskView
	for _, c := range t.push {
		var payload any
		ct := jsonContentType
		if c.d.v == a2a.V10 {
			payload, ct = c.d.event(t.id, t.contextID, ev), a2aJSONContentType
		} else {
			if full == nil {
				v := t.view(-1, true)
				full = &v
			}
			payload = c.d.task(*full)
		}
		body, err := json.Marshal(payload)
		if err != nil {
			a.log.Error("push notification not encoded", "task", t.id, "config", c.id, "err", err)
			continue
		}
		t.pushQueue = append(t.pushQueue, delivery{
			configID: c.id, taskID: t.id, url: c.url, token: c.token,
			authorization: c.authorization(), contentType: ct, body: body,
		})
	}
	if !t.pushRunning && !a.closed && len(t.pushQueue) > 0 {
		t.pushRunning = true
		a.wg.Add(1)
		go a.sendPushes(t)
	}
}

// sendPushes drains the task's queue in order and exits when it is empty,
// so at most one sender runs per task and an idle task holds none.
func (a *Agent) sendPushes(t *task) {
	defer a.wg.Done()
	for {
		a.mu.Lock()
		if len(t.pushQueue) == 0 || a.ctx.Err() != nil {
			t.pushQueue, t.pushRunning = nil, false
			a.mu.Unlock()
			return
		}
		d := t.pushQueue[0]
		t.pushQueue = t.pushQueue[1:]
		a.mu.Unlock()
		a.deliver(d)
	}
}

func (a *Agent) deliver(d delivery) {
	backoff := pushBackoff
	for attempt := 1; ; attempt++ {
		err := a.post(d)
		if err == nil {
			return
		}
		if attempt == pushAttempts || a.ctx.Err() != nil {
			a.log.Warn("push notification dropped", "task", d.taskID, "config", d.configID, "attempts", attempt, "err", err)
			return
		}
		timer := time.NewTimer(backoff)
		select {
		case <-timer.C:
		case <-a.ctx.Done():
			timer.Stop()
		}
		backoff *= 2
	}
}

func (a *Agent) post(d delivery) error {
	ctx, cancel := context.WithTimeout(a.ctx, pushTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.url, bytes.NewReader(d.body))
	if err != nil {
		return fmt.Errorf("build push request: %w", err)
	}
	req.Header.Set("Content-Type", d.contentType)
	if d.token != "" {
		req.Header.Set(notificationTokenHeader, d.token)
	}
	if d.authorization != "" {
		req.Header.Set("Authorization", d.authorization)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		// url.Error repeats the URL, which may carry a secret in its query.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("push request: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("push receiver answered %s", resp.Status)
	}
	return nil
}
