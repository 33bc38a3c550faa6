package console

import (
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/store"
	"github.com/a2a-gateway/a2a-gateway/push"
)

// agentSummary is one agent's row on the overview.
type agentSummary struct {
	Agent           string
	Open            int
	ByState         []stateCount
	Orphans         int
	OrphansMore     bool
	DeadLetters     int
	DeadLettersMore bool
	// Escalations counts the watchdog's escalations on this replica.
	Escalations float64
	Rate        *Rate
}

type stateCount struct {
	State string
	N     int
}

type overviewData struct {
	Agents    []agentSummary
	Receivers []push.ReceiverState
	Push      bool
	Window    time.Duration
	Watchdog  []watchdogCount
}

type watchdogCount struct {
	Agent, Action, State string
	N                    float64
}

// overview reads, per agent, its counts by state (one call) and one page
// of orphans; one page of dead letters for all agents; and the breakers
// and rates this replica holds.
func (c *Console) overview(q *request) {
	ctx := q.r.Context()
	d := overviewData{Push: c.o.DeadLetters != nil, Window: c.o.Config.RateWindow.D()}
	rates := map[string]Rate{}
	for _, r := range c.rates.current(q.now) {
		rates[r.Agent] = r
	}
	dead := map[string]int{}
	var deadMore bool
	if c.o.DeadLetters != nil {
		dls, next, err := c.o.DeadLetters.DeadLetters(ctx, "", store.MaxDeadLetterListLimit)
		if err != nil {
			c.storeError(q, err)
			return
		}
		for _, dl := range dls {
			dead[push.EndpointAgent(dl.Endpoint)]++
		}
		deadMore = next != ""
		d.Receivers = c.o.Deliveries.Receivers()
	}
	d.Watchdog = c.watchdogCounts()
	escalations := map[string]float64{}
	for _, w := range d.Watchdog {
		if w.Action == "escalate" {
			escalations[w.Agent] += w.N
		}
	}
	for _, agent := range c.o.Tasks.Agents() {
		counts, err := c.o.Lifecycle.CountByState(ctx, agent)
		if err != nil {
			c.storeError(q, err)
			return
		}
		s := agentSummary{Agent: agent, DeadLetters: dead[agent], DeadLettersMore: deadMore, Escalations: escalations[agent]}
		for _, st := range a2a.AllStates {
			if n := counts[st.String()]; n > 0 {
				s.ByState = append(s.ByState, stateCount{st.String(), n})
				if !st.Terminal() {
					s.Open += n
				}
			}
		}
		orphans, next, err := c.o.Lifecycle.List(ctx, store.LifecycleFilter{
			Agent: agent, State: store.LifecycleOpen, InactiveSince: q.now.Add(-c.o.Tasks.OrphanAfter()),
		}, "", c.o.Config.PageSize)
		if err != nil {
			c.storeError(q, err)
			return
		}
		s.Orphans, s.OrphansMore = len(orphans), next != ""
		if r, ok := rates[agent]; ok {
			s.Rate = &r
		}
		d.Agents = append(d.Agents, s)
	}
	c.page(q, "overview.html", "overview", "Overview", d)
}

// watchdogCounts reads a2agw_watchdog_actions_total from the registry.
func (c *Console) watchdogCounts() []watchdogCount {
	if c.o.Metrics == nil {
		return nil
	}
	mfs, err := c.o.Metrics.Gather()
	if err != nil {
		return nil
	}
	var out []watchdogCount
	for _, mf := range mfs {
		if mf.GetName() != "a2agw_watchdog_actions_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			w := watchdogCount{N: m.GetCounter().GetValue()}
			if w.N == 0 {
				continue
			}
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "agent":
					w.Agent = l.GetValue()
				case "action":
					w.Action = l.GetValue()
				case "state":
					w.State = l.GetValue()
				}
			}
			out = append(out, w)
		}
	}
	return out
}

// taskRow is a record as the lists show it.
type taskRow struct {
	store.TaskLifecycle
	Orphan, OverBudget bool
}

type tasksData struct {
	Agents                        []string
	States                        []string
	Agent, Tenant, State, Context string
	Inactive                      string
	Rows                          []taskRow
	Next                          string
	NextQuery                     template.URL
	Filtered                      bool
}

// tasks lists one page of an agent's records along the store's index.
// Tenant, state and inactivity select through the index; a context id
// filters the page after it is read, so a page may hold fewer rows.
func (c *Console) tasks(q *request) {
	v := q.r.URL.Query()
	agents := c.o.Tasks.Agents()
	d := tasksData{Agents: agents, Agent: v.Get("agent"), Tenant: v.Get("tenant"), State: v.Get("state"),
		Context: v.Get("context"), Inactive: v.Get("inactive")}
	d.States = append(d.States, store.LifecycleOpen)
	for _, s := range a2a.AllStates {
		d.States = append(d.States, s.String())
	}
	if d.Agent == "" && len(agents) > 0 {
		d.Agent = agents[0]
	}
	if !slices.Contains(agents, d.Agent) {
		c.refuse(q.w, http.StatusBadRequest, "agent must name a configured agent")
		return
	}
	f := store.LifecycleFilter{Agent: d.Agent, Tenant: d.Tenant}
	if d.State != "" {
		if d.State != store.LifecycleOpen {
			st := a2a.ParseState(d.State)
			if st == a2a.StateUnknown {
				c.refuse(q.w, http.StatusBadRequest, "state must be a task state or \"open\"")
				return
			}
			d.State = st.String()
		}
		f.State = d.State
	}
	if d.Inactive != "" {
		age, err := time.ParseDuration(d.Inactive)
		if err != nil || age <= 0 {
			c.refuse(q.w, http.StatusBadRequest, "inactive must be a duration such as 30m or 2h")
			return
		}
		f.InactiveSince = q.now.Add(-age)
	}
	recs, next, err := c.o.Lifecycle.List(q.r.Context(), f, v.Get("cursor"), c.o.Config.PageSize)
	if err != nil {
		c.storeError(q, err)
		return
	}
	for _, rec := range recs {
		if d.Context != "" && rec.ContextID != d.Context {
			d.Filtered = true
			continue
		}
		d.Rows = append(d.Rows, taskRow{rec, c.o.Tasks.Orphan(rec, q.now), c.o.Tasks.OverBudget(rec, q.now)})
	}
	if next != "" {
		nv := url.Values{}
		for _, k := range []string{"agent", "tenant", "state", "context", "inactive"} {
			if x := v.Get(k); x != "" {
				nv.Set(k, x)
			}
		}
		nv.Set("agent", d.Agent)
		nv.Set("cursor", next)
		d.Next, d.NextQuery = next, template.URL(nv.Encode())
	}
	c.page(q, "tasks.html", "tasks", "Tasks", d)
}

// taskData is the task page.
type taskData struct {
	Rec       taskRow
	Timeline  timeline
	Configs   []configView
	Attempts  []store.TaskAttempt
	Events    []eventView
	Challenge *store.Challenge
	CanCancel bool
	Push      bool
}

// configView is a push config as an operator sees it: its URL, and only
// whether it carries a token or credentials.
type configView struct {
	ID, URL, Tenant, Subject string
	Version                  string
	HasToken                 bool
	AuthScheme               string
	HasCredentials           bool
	Created                  time.Time
}

type eventView struct {
	Seq   int64
	ID    string
	At    time.Time
	Kind  string
	State string
	Bytes int
}

// maxTaskEvents bounds the events the task page reads.
const maxTaskEvents = 100

func (c *Console) task(q *request) {
	ctx := q.r.Context()
	agent, id, ok := c.taskRef(q)
	if !ok {
		return
	}
	rec, found, err := c.o.Lifecycle.Get(ctx, agent, id)
	if err != nil {
		c.storeError(q, err)
		return
	}
	if !found {
		c.refuse(q.w, http.StatusNotFound, "no record of this task")
		return
	}
	d := taskData{
		Rec:       taskRow{rec, c.o.Tasks.Orphan(rec, q.now), c.o.Tasks.OverBudget(rec, q.now)},
		Timeline:  buildTimeline(rec, q.now),
		CanCancel: !a2a.ParseState(rec.State).Terminal(),
		Push:      c.o.DeadLetters != nil,
	}
	cfgs, err := c.o.PushConfigs.List(ctx, agent, id)
	if err != nil {
		c.storeError(q, err)
		return
	}
	for _, pc := range cfgs {
		d.Configs = append(d.Configs, configView{
			ID: pc.ID, URL: pc.URL, Tenant: pc.Tenant, Subject: pc.Subject, Version: pc.Version.String(),
			HasToken: pc.Token != "", AuthScheme: pc.AuthScheme, HasCredentials: pc.AuthCredentials != "", Created: pc.Created,
		})
	}
	if c.o.Attempts != nil {
		if d.Attempts, err = c.o.Attempts.List(ctx, agent, id); err != nil {
			c.storeError(q, err)
			return
		}
	}
	if c.o.Events != nil {
		evs, _, err := c.o.Events.After(ctx, agent, id, "", maxTaskEvents)
		if err != nil {
			c.storeError(q, err)
			return
		}
		for _, e := range evs {
			ev := eventView{Seq: e.Seq, ID: e.ID, At: e.At, Bytes: len(e.Payload), Kind: "unreadable"}
			if pe, err := a2a.ParseResult(e.Payload); err == nil {
				ev.Kind = pe.Kind.String()
				if pe.State != a2a.StateUnknown {
					ev.State = pe.State.String()
				}
			}
			d.Events = append(d.Events, ev)
		}
	}
	if ch, ok, err := c.o.Challenges.Current(ctx, agent, id); err != nil {
		c.storeError(q, err)
		return
	} else if ok {
		d.Challenge = &ch
	}
	c.page(q, "task.html", "tasks", "Task "+id, d)
}

// taskRef reads the path's agent and task id.
func (c *Console) taskRef(q *request) (agent, id string, ok bool) {
	agent, id = q.r.PathValue("agent"), q.r.PathValue("task")
	if !slices.Contains(c.o.Tasks.Agents(), agent) {
		c.refuse(q.w, http.StatusNotFound, "no such agent")
		return "", "", false
	}
	if id == "" || len(id) > store.MaxNameBytes {
		c.refuse(q.w, http.StatusBadRequest, "invalid task id")
		return "", "", false
	}
	return agent, id, true
}

// deadRow is a dead letter as the list shows it.
type deadRow struct {
	store.DeadLetter
	Agent, Tenant, Receiver string
	LastStatus              int
	LastError               string
	Key                     string
}

type deadData struct {
	Rows             []deadRow
	Endpoint, Tenant string
	Next             string
	NextQuery        template.URL
	Filtered         bool
}

func newDeadRow(dl store.DeadLetter) deadRow {
	r := deadRow{DeadLetter: dl, Agent: push.EndpointAgent(dl.Endpoint), Tenant: push.EndpointTenant(dl.Endpoint),
		Key: dl.Endpoint + " " + dl.ID}
	if rcv, err := push.ReceiverOf(dl); err == nil {
		r.Receiver = rcv
	}
	if k := len(dl.Attempts); k > 0 {
		r.LastStatus, r.LastError = dl.Attempts[k-1].Status, dl.Attempts[k-1].Err
	}
	return r
}

// deadLetters lists one page of dead letters, oldest first, along the
// store's index; endpoint and tenant filter the page after it is read.
func (c *Console) deadLetters(q *request) {
	if c.o.DeadLetters == nil {
		c.refuse(q.w, http.StatusNotFound, "push notifications are off (push.enabled)")
		return
	}
	v := q.r.URL.Query()
	d := deadData{Endpoint: v.Get("endpoint"), Tenant: v.Get("tenant")}
	dls, next, err := c.o.DeadLetters.DeadLetters(q.r.Context(), v.Get("cursor"), min(c.o.Config.PageSize, store.MaxDeadLetterListLimit))
	if err != nil {
		c.storeError(q, err)
		return
	}
	for _, dl := range dls {
		row := newDeadRow(dl)
		if (d.Endpoint != "" && dl.Endpoint != d.Endpoint) || (d.Tenant != "" && row.Tenant != d.Tenant) {
			d.Filtered = true
			continue
		}
		d.Rows = append(d.Rows, row)
	}
	if next != "" {
		nv := url.Values{"cursor": {next}}
		if d.Endpoint != "" {
			nv.Set("endpoint", d.Endpoint)
		}
		if d.Tenant != "" {
			nv.Set("tenant", d.Tenant)
		}
		d.Next, d.NextQuery = next, template.URL(nv.Encode())
	}
	c.page(q, "deadletters.html", "deliveries", "Dead letters", d)
}

func (c *Console) deadLetter(q *request) {
	if c.o.DeadLetters == nil {
		c.refuse(q.w, http.StatusNotFound, "push notifications are off (push.enabled)")
		return
	}
	dl, ok, err := c.o.DeadLetters.GetDeadLetter(q.r.Context(), q.r.PathValue("endpoint"), q.r.PathValue("id"))
	if err != nil {
		c.storeError(q, err)
		return
	}
	if !ok {
		c.refuse(q.w, http.StatusNotFound, "no such dead letter (redelivered or discarded?)")
		return
	}
	c.page(q, "deadletter.html", "deliveries", "Dead letter "+dl.ID, newDeadRow(dl))
}

func (c *Console) endpoints(q *request) {
	if c.o.Deliveries == nil {
		c.refuse(q.w, http.StatusNotFound, "push notifications are off (push.enabled)")
		return
	}
	c.page(q, "endpoints.html", "endpoints", "Endpoints", c.o.Deliveries.Receivers())
}

// challengeHorizon is how far ahead the challenges page looks for
// expiries: beyond any challenge's lifetime, so every open one is due
// before it.
const challengeHorizon = 366 * 24 * time.Hour

type challengesData struct {
	Agent  string
	Agents []string
	Rows   []store.Challenge
	More   bool
}

// challenges lists an agent's open challenges, soonest expiry first, one
// page of the store's expiry index.
func (c *Console) challenges(q *request) {
	agents := c.o.Tasks.Agents()
	d := challengesData{Agents: agents, Agent: q.r.URL.Query().Get("agent")}
	if d.Agent == "" && len(agents) > 0 {
		d.Agent = agents[0]
	}
	if !slices.Contains(agents, d.Agent) {
		c.refuse(q.w, http.StatusBadRequest, "agent must name a configured agent")
		return
	}
	limit := c.o.Config.PageSize
	refs, err := c.o.Challenges.Due(q.r.Context(), d.Agent, q.now.Add(challengeHorizon), limit+1)
	if err != nil {
		c.storeError(q, err)
		return
	}
	if len(refs) > limit {
		refs, d.More = refs[:limit], true
	}
	for _, ref := range refs {
		ch, ok, err := c.o.Challenges.Current(q.r.Context(), ref.Agent, ref.TaskID)
		if err != nil {
			c.storeError(q, err)
			return
		}
		if ok && ch.ID == ref.ID {
			d.Rows = append(d.Rows, ch)
		}
	}
	c.page(q, "challenges.html", "challenges", "Auth challenges", d)
}

// storeError answers a store failure without its details, which go to the
// log.
func (c *Console) storeError(q *request, err error) {
	switch {
	case errors.Is(err, store.ErrInvalidArgument):
		c.refuse(q.w, http.StatusBadRequest, "invalid argument (a cursor from another listing?)")
	case errors.Is(err, store.ErrUnavailable):
		q.w.Header().Set("Retry-After", "1")
		c.refuse(q.w, http.StatusServiceUnavailable, "the store is temporarily unavailable")
	default:
		c.o.Log.Error("console: store error", "path", q.r.URL.Path, "err", err)
		c.refuse(q.w, http.StatusInternalServerError, "internal error")
	}
}
