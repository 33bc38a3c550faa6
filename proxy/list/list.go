// Package list is the pipeline stage that serves ListTasks: it filters the
// agent's pages to the caller's tasks and pages with tokens of its own.
package list

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/grpcwire"
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

// Filter serves ListTasks with the gateway's own page tokens.
type Filter struct {
	tokens *pageTokens
	// maxPages bounds the agent calls one ListTasks may make; the answer is
	// then a shorter page with a token to continue.
	maxPages int
}

// New builds the filter from the list_tasks section.
func New(o config.ListTasksOptions) (*Filter, error) {
	key, err := o.PageTokenKey()
	if err != nil {
		return nil, fmt.Errorf("list_tasks.page_token_key_env: %w", err)
	}
	return &Filter{tokens: newPageTokens(key, o.PageTokenTTL.D()), maxPages: o.MaxUpstreamPages}, nil
}

// owner is whom the scope's page tokens are for. The agent is named by its
// mount.
func owner(s *proxy.Scope) pageOwner {
	return pageOwner{tenant: s.Principal.Tenant, subject: s.Principal.Subject, agent: s.Agent.Name}
}

// listRequest is a ListTasks call the gateway re-issues with the agent's
// page tokens: the JSON-RPC body, into which the paging is spliced, or
// the REST query.
type listRequest struct {
	s        *proxy.Scope
	r        *http.Request
	query    url.Values
	pageSize int
	cursor   pageCursor
}

func (f *Filter) newListRequest(r *http.Request, s *proxy.Scope) (*listRequest, error) {
	lr := &listRequest{s: s, r: r, pageSize: defaultPageSize}
	if s.Op.Binding == a2a.BindingREST {
		lr.query = r.URL.Query()
	}
	if size := s.Op.PageSize; size != "" {
		n, err := strconv.Atoi(size)
		if err != nil || n < 1 || n > maxPageSize {
			return nil, a2a.ErrInvalidParams.WithMessage("pageSize must be between 1 and 100")
		}
		lr.pageSize = n
	}
	token := s.Op.PageToken
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
// its token; page receives what the forwarder read of the answer.
func (lr *listRequest) at(upstreamToken string, page *listPage) (*http.Request, *proxy.Scope, error) {
	s := *lr.s
	r := lr.r
	if s.Op.Binding == a2a.BindingGRPC {
		var err error
		if s.Body, err = grpcwire.SetListPage(s.Body, lr.pageSize, upstreamToken); err != nil {
			return nil, nil, err
		}
	} else if lr.query == nil {
		body := a2a.DeleteRPCParam(s.Body, "pageToken")
		var err error
		if upstreamToken != "" {
			token, _ := json.Marshal(upstreamToken)
			if body, err = a2a.SetRPCParam(body, "pageToken", token); err != nil {
				return nil, nil, err
			}
		}
		if s.Body, err = a2a.SetRPCParam(body, "pageSize", []byte(strconv.Itoa(lr.pageSize))); err != nil {
			return nil, nil, err
		}
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
	s.AddObserver(proxy.ObserverFunc(func(_ context.Context, _ *proxy.Scope, ev a2a.Event, _ []byte) error {
		if ev.Kind != a2a.EventError {
			*page = listPage{read: true, Tasks: ev.Listed, NextPageToken: ev.NextPageToken}
		}
		return nil
	}))
	return r, &s, nil
}

// listPage is what the forwarder read of one of the agent's pages: the
// tasks, with their ids and the tasks they reference. read is false for an
// answer that is not a page (an error).
type listPage struct {
	read          bool
	Tasks         []a2a.ListedTask
	NextPageToken string
}

// Stage serves ListTasks: it asks the agent for pages, keeps the caller's
// tasks and writes one page in the agent's format.
func (f *Filter) Stage(next proxy.Handler) proxy.Handler {
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
			var page listPage
			rr, ss, err := lr.at(cur.Upstream, &page)
			if err != nil {
				return a2a.ErrInvalidRequest.WithMessage("the ListTasks request could not be paged")
			}
			rec := proxy.NewRecorder()
			if err := next(rec, rr, ss); err != nil {
				return err
			}
			if !page.read || rec.Status() != http.StatusOK {
				// An error: the caller sees it as the gateway relayed it.
				rec.CopyTo(w)
				return nil
			}
			if len(page.NextPageToken) > maxUpstreamToken {
				s.Log().Warn("agent page token over the size limit", "limit_bytes", maxUpstreamToken)
				return a2a.ErrInvalidAgentResponse.WithMessage("the agent's page token is too long")
			}
			header = rec.Header()
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
func (f *Filter) writeListPage(w http.ResponseWriter, s *proxy.Scope, h http.Header, tasks []json.RawMessage, next pageCursor, exact bool) error {
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
	body, err := json.Marshal(result)
	if err != nil {
		return fmt.Errorf("encode the ListTasks page: %w", err)
	}
	if s.Op.Binding == a2a.BindingGRPC {
		return proxy.WriteGRPCAnswer(w, s, body)
	}
	if s.Op.Binding == a2a.BindingJSONRPC {
		body = a2a.RPCResult(s.Op.RPCID, body)
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
