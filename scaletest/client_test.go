package scaletest

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/dedupe"
	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// outcome is how one request ended, seen from the client.
type outcome int

const (
	// answered: a JSON-RPC answer came back, a result or an error.
	answered outcome = iota
	// refused: the connection was refused, so the request never left; the
	// replica is marked down.
	refused
	// lost: the request may have been sent but no whole answer came back,
	// so it may or may not have been acted on.
	lost
)

// reply is one request's result.
type reply struct {
	out      outcome
	status   int
	replayed bool
	ev       a2a.Event // the result, or the error (Kind EventError)
	result   []byte    // the JSON-RPC result, nil for an error
	err      error
}

// ok reports whether the answer is a result rather than an error.
func (r reply) ok() bool { return r.out == answered && r.ev.Kind != a2a.EventError }

// is reports whether the answer is the JSON-RPC error e.
func (r reply) is(e *a2a.Error) bool {
	return r.out == answered && r.ev.Kind == a2a.EventError && r.ev.ErrorCode == e.Code
}

func (r reply) String() string {
	switch {
	case r.out == refused:
		return "connection refused"
	case r.out == lost:
		return "lost: " + r.err.Error()
	case r.ev.Kind == a2a.EventError:
		return "HTTP " + strconv.Itoa(r.status) + " error " + strconv.Itoa(r.ev.ErrorCode)
	}
	return "HTTP " + strconv.Itoa(r.status) + " " + r.ev.Kind.String() + " " + r.ev.TaskID + " " + r.ev.State.String()
}

var rpcID atomic.Int64

// call sends one A2A 1.0 JSON-RPC request to g as c. A streaming answer is
// read up to its first event.
func (w *world) call(g *gateway, c caller, m a2a.Method, params any) reply {
	body := a2a.RPCRequest(a2a.V10, m, json.RawMessage(strconv.FormatInt(rpcID.Add(1), 10)), params)
	req, err := http.NewRequest(http.MethodPost, g.base+"/agents/demo/", bytes.NewReader(body))
	if err != nil {
		return reply{out: lost, err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(a2a.VersionHeader, "1.0")
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := w.client.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			g.down.Store(true)
			return reply{out: refused, err: err}
		}
		return reply{out: lost, err: err}
	}
	defer resp.Body.Close()
	r := reply{status: resp.StatusCode, replayed: resp.Header.Get(dedupe.ReplayHeader) == "true"}
	var data []byte
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct == "text/event-stream" {
		ev, err := a2a.NewSSEReader(resp.Body, 1<<20).Next()
		if err != nil {
			return reply{out: lost, status: resp.StatusCode, err: err}
		}
		data = bytes.Clone(ev.Data)
	} else if data, err = io.ReadAll(resp.Body); err != nil {
		return reply{out: lost, status: resp.StatusCode, err: err}
	}
	if r.ev, err = a2a.ParseRPCEvent(data); err != nil {
		return reply{out: lost, status: resp.StatusCode, err: errors.New("unreadable answer: " + string(data))}
	}
	r.result, _, _ = a2a.UnwrapRPC(data)
	if r.ev.Kind == a2a.EventError {
		r.result = nil
	}
	return r
}

// newID returns a random id with a readable prefix.
func newID(prefix string) string { return prefix + "-" + rand.Text()[:12] }

// sendParams is a SendMessage's params: a new message with text, in task
// and context when given.
func sendParams(messageID, text, taskID, contextID string) map[string]any {
	m := map[string]any{"messageId": messageID, "role": "ROLE_USER", "parts": []any{map[string]any{"text": text}}}
	if taskID != "" {
		m["taskId"] = taskID
	}
	if contextID != "" {
		m["contextId"] = contextID
	}
	return map[string]any{"message": m}
}

// task is a task some caller created, and where.
type task struct {
	id, contextID string
	owner         caller
	via           *gateway
}

// create sends text as a new message through g and returns the task.
func (w *world) create(t *testing.T, g *gateway, c caller, text string) task {
	t.Helper()
	r := w.call(g, c, a2a.MethodSend, sendParams(newID("m"), text, "", ""))
	if !r.ok() || r.ev.TaskID == "" {
		t.Fatalf("%s/%s creates a task through %s: %s", c.tenant, c.subject, g.name, r)
	}
	return task{id: r.ev.TaskID, contextID: r.ev.ContextID, owner: c, via: g}
}

// listIDs pages through ListTasks on g as c and returns every task id.
func (w *world) listIDs(t *testing.T, g *gateway, c caller) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	token := ""
	for range 1000 {
		params := map[string]any{"pageSize": 100}
		if token != "" {
			params["pageToken"] = token
		}
		r := w.call(g, c, a2a.MethodListTasks, params)
		if !r.ok() {
			t.Fatalf("ListTasks on %s as %s: %s", g.name, c.tenant, r)
		}
		var page struct {
			Tasks []struct {
				ID string `json:"id"`
			} `json:"tasks"`
			NextPageToken string `json:"nextPageToken"`
		}
		if err := json.Unmarshal(r.result, &page); err != nil {
			t.Fatalf("ListTasks answer %s: %v", r.result, err)
		}
		for _, tk := range page.Tasks {
			ids[tk.ID] = true
		}
		if page.NextPageToken == "" {
			return ids
		}
		token = page.NextPageToken
	}
	t.Fatalf("ListTasks on %s never ended", g.name)
	return nil
}
