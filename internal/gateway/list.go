package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/proxy"
)

// ListTasks answers come from the agent, which may not isolate tenants, so
// the gateway filters them to the caller's tasks. Filtering shortens pages,
// so the gateway keeps its own paging: its page token remembers the
// agent's token for the page being read and how many of that page's tasks
// were already handed out (see pagetoken.go), and a short page is topped up
// from the agent's following pages.
const (
	defaultPageSize = 50
	maxPageSize     = 100
)

// listFilter serves ListTasks with the gateway's own page tokens.
type listFilter struct {
	tokens *pageTokens
	// maxPages bounds the agent calls one ListTasks may make; the answer is
	// then a shorter page with a token to continue.
	maxPages int
}

func newListFilter(o config.ListTasksOptions) (*listFilter, error) {
	key, err := o.PageTokenKey()
	if err != nil {
		return nil, fmt.Errorf("list_tasks.page_token_key_env: %w", err)
	}
	return &listFilter{tokens: newPageTokens(key, o.PageTokenTTL.D()), maxPages: o.MaxUpstreamPages}, nil
}

// owner is whom the scope's page tokens are for. The agent is named by its
// mount.
func owner(s *proxy.Scope) pageOwner {
	return pageOwner{tenant: s.Principal.Tenant, subject: s.Principal.Subject, agent: s.Agent.Name}
}

// listRequest is a ListTasks call the gateway can re-issue with another
// page token: the JSON-RPC envelope or the REST query.
type listRequest struct {
	s        *proxy.Scope
	r        *http.Request
	envelope map[string]json.RawMessage
	params   map[string]json.RawMessage
	query    url.Values
	pageSize int
	cursor   pageCursor
}

func (f *listFilter) newListRequest(r *http.Request, s *proxy.Scope) (*listRequest, error) {
	lr := &listRequest{s: s, r: r, pageSize: defaultPageSize}
	var size, token string
	if s.Op.Binding == a2a.BindingJSONRPC {
		if err := json.Unmarshal(s.Body, &lr.envelope); err != nil {
			return nil, a2a.ErrParse
		}
		lr.params = map[string]json.RawMessage{}
		if p := lr.envelope["params"]; len(p) > 0 && string(p) != "null" {
			if err := json.Unmarshal(p, &lr.params); err != nil {
				return nil, a2a.ErrInvalidParams.WithMessage(`"params" must be an object`)
			}
		}
		if v, ok := lr.params["pageSize"]; ok {
			size = strings.Trim(string(v), `"`)
		}
		if v, ok := lr.params["pageToken"]; ok && json.Unmarshal(v, &token) != nil {
			return nil, a2a.ErrInvalidParams.WithMessage("pageToken must be a string")
		}
	} else {
		lr.query = r.URL.Query()
		size, token = lr.query.Get("pageSize"), lr.query.Get("pageToken")
	}
	if size != "" && size != "null" {
		n, err := strconv.Atoi(size)
		if err != nil || n < 1 || n > maxPageSize {
			return nil, a2a.ErrInvalidParams.WithMessage("pageSize must be between 1 and 100")
		}
		lr.pageSize = n
	}
	c, ok := f.tokens.open(token, owner(s), time.Now())
	if !ok {
		// Forged, altered, expired or someone else's: one answer for all.
		s.Log().Info("page token refused", "token_bytes", len(token))
		return nil, a2a.ErrInvalidParams.WithMessage("pageToken is not a valid token for this list; start again without one")
	}
	lr.cursor = c
	return lr, nil
}

// at returns the request and scope that ask the agent for the page behind
// its token.
func (lr *listRequest) at(upstreamToken string) (*http.Request, *proxy.Scope) {
	s := *lr.s
	r := lr.r
	if lr.envelope != nil {
		setOrDelete(lr.params, "pageToken", upstreamToken)
		lr.params["pageSize"] = json.RawMessage(strconv.Itoa(lr.pageSize))
		lr.envelope["params"], _ = json.Marshal(lr.params)
		s.Body, _ = json.Marshal(lr.envelope)
	} else {
		q := url.Values{}
		for k, v := range lr.query {
			q[k] = v
		}
		q.Del("pageToken")
		if upstreamToken != "" {
			q.Set("pageToken", upstreamToken)
		}
		q.Set("pageSize", strconv.Itoa(lr.pageSize))
		r = lr.r.Clone(lr.r.Context())
		r.URL.RawQuery = q.Encode()
	}
	return r, &s
}

func setOrDelete(m map[string]json.RawMessage, k, v string) {
	if v == "" {
		delete(m, k)
		return
	}
	m[k], _ = json.Marshal(v)
}

// listPage is the part of a ListTasks result the gateway reads: the tasks,
// with their ids and the tasks they reference.
type listPage struct {
	Tasks         []a2a.ListedTask
	NextPageToken string
}

// stage serves ListTasks: it asks the agent for pages, keeps the caller's
// tasks and writes one page in the agent's format.
func (f *listFilter) stage(next proxy.Handler) proxy.Handler {
	return func(w http.ResponseWriter, r *http.Request, s *proxy.Scope) error {
		if s.Op.Method != a2a.MethodListTasks {
			return next(w, r, s)
		}
		lr, err := f.newListRequest(r, s)
		if err != nil {
			return err
		}
		var kept []json.RawMessage
		cur := lr.cursor
		var header http.Header
		complete := cur == (pageCursor{})
		for calls := 0; ; calls++ {
			if calls == f.maxPages {
				complete = false
				break
			}
			rr, ss := lr.at(cur.Upstream)
			rec := newRecorder()
			if err := next(rec, rr, ss); err != nil {
				return err
			}
			page, ok, err := readListPage(s, rec)
			if err != nil {
				return err
			}
			if !ok {
				// An error or something unexpected: the caller sees it as the agent sent it.
				rec.copyTo(w)
				return nil
			}
			if len(page.NextPageToken) > maxUpstreamToken {
				s.Log().Warn("agent page token over the size limit", "limit_bytes", maxUpstreamToken)
				return a2a.ErrInvalidAgentResponse.WithMessage("the agent's page token is too long")
			}
			header = rec.header
			skip := min(cur.Skip, len(page.Tasks))
			tasks := page.Tasks[skip:]
			owned, err := ownedListed(r.Context(), s, tasks)
			if err != nil {
				return err
			}
			for i, t := range tasks {
				if !owned[i] {
					continue
				}
				kept = append(kept, t.Raw)
				if len(kept) == lr.pageSize {
					if rest := i + 1; rest < len(tasks) {
						cur = pageCursor{Upstream: cur.Upstream, Skip: cur.Skip + rest}
					} else {
						cur = pageCursor{Upstream: page.NextPageToken}
					}
					return f.writeListPage(w, s, header, kept, cur, false)
				}
			}
			if page.NextPageToken == "" {
				return f.writeListPage(w, s, header, kept, pageCursor{}, complete)
			}
			cur = pageCursor{Upstream: page.NextPageToken}
		}
		return f.writeListPage(w, s, header, kept, cur, false)
	}
}

// readListPage reads the agent's page; ok is false for an answer that is
// not a page (an error), which the caller sees as the gateway relayed it. A
// page whose tasks cannot all be read unambiguously is refused: a task the
// gateway could not read is a task it could not filter.
func readListPage(s *proxy.Scope, rec *recorder) (page listPage, ok bool, err error) {
	if rec.status != http.StatusOK {
		return page, false, nil
	}
	body := rec.body.Bytes()
	if s.Op.Binding == a2a.BindingJSONRPC {
		res, _, err := a2a.UnwrapRPC(body)
		if err != nil || res == nil {
			return page, false, nil
		}
		body = res
	}
	tasks, next, err := a2a.ReadListTasks(s.Op, body)
	if err != nil {
		s.Log().Warn("agent ListTasks answer refused", "err", err)
		return page, false, a2a.ErrInvalidAgentResponse
	}
	return listPage{Tasks: tasks, NextPageToken: next}, true, nil
}

// ownedListed reports which listed tasks the caller may see: its own tasks
// whose messages reference only its own tasks. A reference to another
// tenant's task, or one the gateway never saw, would reveal it, so such a
// task is left out like a foreign one. One ownership lookup for the page.
func ownedListed(ctx context.Context, s *proxy.Scope, tasks []a2a.ListedTask) ([]bool, error) {
	ids := make([]string, 0, len(tasks))
	for _, t := range tasks {
		ids = append(ids, t.ID)
		ids = append(ids, t.References...)
	}
	owned, err := s.Grant.OwnedTasks(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(tasks))
	at := 0
	for i, t := range tasks {
		out[i] = !slices.Contains(owned[at:at+1+len(t.References)], false)
		if owned[at] && !out[i] {
			s.Log().Warn("agent listed a task of the caller's that references a task the caller does not own; task left out", "task_id", t.ID)
		}
		at += 1 + len(t.References)
	}
	return out, nil
}

// writeListPage writes the filtered page. totalSize is given only when it
// is exact: every matching task fitted in this one page.
func (f *listFilter) writeListPage(w http.ResponseWriter, s *proxy.Scope, h http.Header, tasks []json.RawMessage, next pageCursor, exact bool) error {
	if tasks == nil {
		tasks = []json.RawMessage{}
	}
	result := map[string]any{"tasks": tasks, "pageSize": len(tasks)}
	if next != (pageCursor{}) {
		result["nextPageToken"] = f.tokens.issue(next, owner(s), time.Now())
	} else {
		result["nextPageToken"] = ""
	}
	if exact {
		result["totalSize"] = len(tasks)
	}
	var body []byte
	if s.Op.Binding == a2a.BindingJSONRPC {
		body, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": s.Op.RPCID, "result": result})
	} else {
		body, _ = json.Marshal(result)
	}
	if ct := h.Get("Content-Type"); ct != "" {
		w.Header().Set("Content-Type", ct)
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	return nil
}

// recorder captures a non-streaming answer so the gateway can read it
// before deciding what the caller sees.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newRecorder() *recorder { return &recorder{header: http.Header{}} }

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}
func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

func (r *recorder) copyTo(w http.ResponseWriter) {
	for k, v := range r.header {
		w.Header()[k] = v
	}
	w.WriteHeader(r.status)
	_, _ = w.Write(r.body.Bytes())
}
