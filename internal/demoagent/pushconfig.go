package demoagent

import (
	"encoding/json"
	"net/url"
	"strings"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// pushConfig is a push-notification config of one task. It remembers the
// dialect it was created in: its notifications take that shape.
type pushConfig struct {
	id          string
	taskID      string
	tenant      string
	url         string
	token       string
	scheme      string
	credentials string
	d           dialect
}

// maxPushValueLength bounds the id, token and credentials of a config; they
// end up in headers of every notification.
const maxPushValueLength = 4096

// pushConfigIn reads both shapes: 1.0 flat with authentication.scheme, 0.x
// nested with authentication.schemes.
type pushConfigIn struct {
	ID             string `json:"id"`
	URL            string `json:"url"`
	Token          string `json:"token"`
	Tenant         string `json:"tenant"`
	Authentication *struct {
		Scheme      string   `json:"scheme"`
		Schemes     []string `json:"schemes"`
		Credentials string   `json:"credentials"`
	} `json:"authentication"`
}

// parsePushConfig reads a config. configID, when set, is the id package a2a
// read from a 1.0 request and wins over the body.
func parsePushConfig(raw []byte, d dialect, taskID, configID, tenant string) (*pushConfig, *a2a.Error) {
	var in pushConfigIn
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, a2a.ErrInvalidParams.WithMessage("the push notification config could not be read: " + jsonProblem(err))
	}
	u, err := url.Parse(in.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, a2a.ErrInvalidParams.WithMessage("the push notification url must be an absolute http or https URL")
	}
	c := &pushConfig{id: configID, taskID: taskID, tenant: tenant, url: in.URL, token: in.Token, d: d}
	if c.id == "" {
		c.id = in.ID
	}
	if c.id == "" {
		c.id = newID()
	}
	if c.tenant == "" {
		c.tenant = in.Tenant
	}
	if a := in.Authentication; a != nil {
		c.scheme, c.credentials = a.Scheme, a.Credentials
		if c.scheme == "" && len(a.Schemes) > 0 {
			c.scheme = a.Schemes[0]
		}
	}
	for _, s := range []string{c.id, c.token, c.scheme, c.credentials} {
		if len(s) > maxPushValueLength || strings.ContainsFunc(s, isControl) {
			return nil, a2a.ErrInvalidParams.WithMessage("the push notification config holds an over-long value or a control character")
		}
	}
	if strings.ContainsAny(c.scheme, " \t") {
		return nil, a2a.ErrInvalidParams.WithMessage("the authentication scheme must be a single token")
	}
	return c, nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// authorization is the Authorization header value of each notification.
func (c *pushConfig) authorization() string {
	if c.scheme == "" || c.credentials == "" {
		return ""
	}
	return c.scheme + " " + c.credentials
}

// inner renders the 0.x PushNotificationConfig.
func (c *pushConfig) inner(d dialect) obj {
	out := obj{"url": c.url}
	if d.v != a2a.VLegacy {
		out["id"] = c.id
	}
	if c.token != "" {
		out["token"] = c.token
	}
	if c.scheme != "" {
		out["authentication"] = obj{"schemes": []string{c.scheme}, "credentials": c.credentials}
	}
	return out
}

// render renders the TaskPushNotificationConfig of dialect d.
func (c *pushConfig) render(d dialect) obj {
	switch {
	case d.v == a2a.V10:
		out := obj{"id": c.id, "taskId": c.taskID, "url": c.url}
		if c.tenant != "" {
			out["tenant"] = c.tenant
		}
		if c.token != "" {
			out["token"] = c.token
		}
		if c.scheme != "" {
			out["authentication"] = obj{"scheme": c.scheme, "credentials": c.credentials}
		}
		return out
	case d.proto:
		return obj{"name": "tasks/" + c.taskID + "/pushNotificationConfigs/" + c.id, "pushNotificationConfig": c.inner(d)}
	case d.v == a2a.VLegacy:
		return obj{"id": c.taskID, "pushNotificationConfig": c.inner(d)}
	}
	return obj{"taskId": c.taskID, "pushNotificationConfig": c.inner(d)}
}

// setPushConfigLocked adds or replaces a config. Legacy tasks hold one.
func (t *task) setPushConfigLocked(c *pushConfig) {
	if c.d.v == a2a.VLegacy {
		t.push = t.push[:0]
	}
	for i, old := range t.push {
		if old.id == c.id {
			t.push[i] = c
			return
		}
	}
	t.push = append(t.push, c)
}

func (t *task) pushConfigLocked(id string) *pushConfig {
	for _, c := range t.push {
		if id == "" || c.id == id {
			return c
		}
	}
	return nil
}

var errPushConfigNotFound = a2a.ErrTaskNotFound.WithMessage("push notification config not found")

// pushConfigOp serves the four push-config methods.
func (a *Agent) pushConfigOp(c *call) (reply, *a2a.Error) {
	if !a.push {
		return reply{}, a2a.ErrPushNotSupported
	}
	op := c.op
	var cfg *pushConfig
	if op.Method == a2a.MethodPushConfigSet {
		raw := op.PushConfig
		if raw == nil {
			return reply{}, a2a.ErrInvalidParams.WithMessage("the push notification config is required")
		}
		var e *a2a.Error
		if cfg, e = parsePushConfig(raw, c.d, op.TaskID, op.PushConfigID, op.Tenant); e != nil {
			return reply{}, e
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.tasks[op.TaskID]
	if t == nil {
		return reply{}, a2a.ErrTaskNotFound
	}
	d := c.dialectFor(t)
	switch op.Method {
	case a2a.MethodPushConfigSet:
		t.setPushConfigLocked(cfg)
		return reply{result: cfg.render(d)}, nil
	case a2a.MethodPushConfigGet:
		if got := t.pushConfigLocked(op.PushConfigID); got != nil {
			return reply{result: got.render(d)}, nil
		}
		return reply{}, errPushConfigNotFound
	case a2a.MethodPushConfigList:
		list := make([]any, len(t.push))
		for i, p := range t.push {
			list[i] = p.render(d)
		}
		if d.wrapped() {
			return reply{result: obj{"configs": list, "nextPageToken": ""}}, nil
		}
		return reply{result: list}, nil
	}
	// Delete.
	for i, p := range t.push {
		if p.id == op.PushConfigID {
			t.push = append(t.push[:i:i], t.push[i+1:]...)
			if d.v == a2a.V10 {
				return reply{result: obj{}, noContent: true}, nil
			}
			return reply{result: nil, noContent: true}, nil
		}
	}
	return reply{}, errPushConfigNotFound
}
