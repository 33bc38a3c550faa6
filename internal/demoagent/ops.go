package demoagent

import (
	"bytes"
	"context"
	"strings"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

var (
	errShuttingDown = a2a.ErrInternal.WithMessage("the agent is shutting down")
	errNoStreaming  = a2a.ErrUnsupportedOperation.WithMessage("this agent does not stream; send and poll the task instead")
)

func (a *Agent) dispatch(ctx context.Context, c *call) (reply, *a2a.Error) {
	a.log.Debug("request", "method", c.op.Method.String(), "version", c.op.Version.String(),
		"binding", c.op.Binding.String(), "task", c.op.TaskID)
	if a.isClosed() {
		return reply{}, errShuttingDown
	}
	if a.noStream && c.op.Method.Streaming() {
		return reply{}, errNoStreaming
	}
	switch c.op.Method {
	case a2a.MethodSend, a2a.MethodStream:
		return a.send(ctx, c)
	case a2a.MethodGetTask:
		return a.getTask(c)
	case a2a.MethodListTasks:
		return a.listTasks(c)
	case a2a.MethodCancelTask:
		return a.cancelTask(c)
	case a2a.MethodSubscribe:
		return a.subscribe(c)
	case a2a.MethodExtendedCard:
		return reply{result: a.card(true)}, nil
	}
	if c.op.Method.PushConfig() {
		return a.pushConfigOp(c)
	}
	return reply{}, a2a.ErrMethodNotFound
}

func (a *Agent) isClosed() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.closed
}

// send serves SendMessage and SendStreamingMessage in every dialect: it
// starts a task, resumes an interrupted one, or answers with a message.
func (a *Agent) send(ctx context.Context, c *call) (reply, *a2a.Error) {
	op := c.op
	in, e := decodeSend(c.params, c.d)
	if e != nil {
		return reply{}, e
	}
	rawPush := []byte(op.PushConfig)
	if conf := in.Configuration; rawPush == nil && conf != nil && len(conf.PushNotification) > 0 && !bytes.Equal(conf.PushNotification, []byte("null")) {
		rawPush = conf.PushNotification
	}
	var cfg *pushConfig
	if rawPush != nil {
		if !a.push {
			return reply{}, a2a.ErrPushNotSupported
		}
		if cfg, e = parsePushConfig(rawPush, c.d, "", "", op.Tenant); e != nil {
			return reply{}, e
		}
	}
	text := in.text()
	sc := securedScenario(ctx, parseScenario(text))
	streaming := op.Method == a2a.MethodStream
	msg := message{id: op.MessageID, contextID: op.ContextID, taskID: op.TaskID, role: roleUser, parts: in.parts}
	if msg.id == "" {
		msg.id = newID() // legacy messages carry no id
	}

	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return reply{}, errShuttingDown
	}
	var t *task
	if op.TaskID != "" {
		t = a.tasks[op.TaskID]
	}
	switch {
	case t != nil:
		if e := a.resumeLocked(t, c, msg, resumeInput{text: text, credential: in.credential(c.authorization)}, cfg); e != nil {
			a.mu.Unlock()
			return reply{}, e
		}
	case op.TaskID != "" && op.Version != a2a.VLegacy:
		a.mu.Unlock()
		return reply{}, a2a.ErrTaskNotFound
	case sc.kind == scMessage && op.Version != a2a.VLegacy:
		a.mu.Unlock()
		return a.messageReply(c, msg, streaming), nil
	default:
		t = a.startLocked(c, msg, sc, cfg)
	}
	d := c.dialectFor(t)
	if streaming {
		v := t.view(in.historyLength(), true)
		s := &stream{first: d.streamTask(v), t: t, d: d}
		if !endsStream(v.status.state) {
			s.sub = t.subscribeLocked()
		}
		a.mu.Unlock()
		return reply{stream: s}, nil
	}
	a.mu.Unlock()
	if in.blocking(c.plainBlocking) {
		a.await(ctx, t)
	}
	a.mu.Lock()
	v := t.view(in.historyLength(), true)
	a.mu.Unlock()
	return reply{result: d.taskResult(v)}, nil
}

// messageReply answers the "message" scenario with a plain message.
func (a *Agent) messageReply(c *call, in message, streaming bool) reply {
	ctxID := in.contextID
	if ctxID == "" {
		ctxID = newID()
	}
	m := message{id: newID(), contextID: ctxID, role: roleAgent, parts: []part{{text: replyText(in)}}}
	res := c.d.messageResult(m)
	if streaming {
		return reply{stream: &stream{first: res, d: c.d}}
	}
	return reply{result: res}
}

func replyText(in message) string {
	var texts []string
	for _, p := range in.parts {
		if !p.isData {
			texts = append(texts, p.text)
		}
	}
	return "Hello from the demo agent. You said: " + strings.Join(texts, " ")
}

// startLocked creates a task and starts its runner. The runner blocks on
// the lock the caller holds, so a stream subscribed before unlocking sees
// every event.
func (a *Agent) startLocked(c *call, msg message, sc scenario, cfg *pushConfig) *task {
	id := newID()
	if c.op.Version == a2a.VLegacy {
		id = c.op.TaskID // legacy clients choose the task id
	}
	if msg.contextID == "" {
		msg.contextID = newID()
	}
	msg.taskID = id
	ctx, cancel := context.WithCancel(a.ctx)
	a.seq++
	t := &task{
		id: id, contextID: msg.contextID, seq: a.seq, origin: c.d,
		ctx: ctx, cancel: cancel, resume: make(chan resumeInput, 1),
		status:  status{state: a2a.StateSubmitted, at: time.Now()},
		history: []message{msg},
		subs:    map[*subscriber]struct{}{},
		changed: make(chan struct{}),
	}
	if cfg != nil {
		cfg.taskID = id
		t.setPushConfigLocked(cfg)
	}
	a.tasks[id] = t
	a.order = append(a.order, t)
	a.evictLocked()
	a.wg.Add(1)
	go a.run(t, sc)
	return t
}

// evictLocked forgets the oldest finished tasks once there are too many.
func (a *Agent) evictLocked() {
	if len(a.tasks) <= maxTasks {
		return
	}
	kept := a.order[:0]
	for _, t := range a.order {
		if len(a.tasks) > maxTasks && t.status.state.Terminal() {
			delete(a.tasks, t.id)
			continue
		}
		kept = append(kept, t)
	}
	clear(a.order[len(kept):])
	a.order = kept
}

// resumeLocked hands a follow-up message to an interrupted task and moves it
// to working before the caller returns, so a blocking send cannot see the
// interrupted state it is answering.
func (a *Agent) resumeLocked(t *task, c *call, msg message, in resumeInput, cfg *pushConfig) *a2a.Error {
	if c.op.ContextID != "" && c.op.ContextID != t.contextID {
		return a2a.ErrInvalidParams.WithMessage("the message's context id differs from the task's")
	}
	st := t.status.state
	switch {
	case st.Terminal():
		return a2a.ErrUnsupportedOperation.WithMessage("the task is " + st.String() + "; start a new task that references it instead")
	case !st.Interrupted():
		return a2a.ErrUnsupportedOperation.WithMessage("the task is " + st.String() + " and is not waiting for a message")
	}
	select {
	case t.resume <- in:
	default:
		return a2a.ErrInternal.WithMessage("the task is already resuming")
	}
	msg.taskID, msg.contextID = t.id, t.contextID
	t.history = append(t.history, msg)
	if st == a2a.StateAuthRequired && in.credential != "" {
		t.credentials = append(t.credentials, in.credential)
	}
	if cfg != nil {
		cfg.taskID = t.id
		t.setPushConfigLocked(cfg)
	}
	a.setStatusLocked(t, status{state: a2a.StateWorking, at: time.Now()})
	return nil
}

// await waits until the task ends or is interrupted, the caller leaves, or
// blockingLimit passes.
func (a *Agent) await(ctx context.Context, t *task) {
	timer := time.NewTimer(blockingLimit)
	defer timer.Stop()
	for {
		a.mu.Lock()
		st, changed := t.status.state, t.changed
		a.mu.Unlock()
		if endsStream(st) {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		case <-timer.C:
			return
		case <-a.ctx.Done():
			return
		}
	}
}

func (a *Agent) getTask(c *call) (reply, *a2a.Error) {
	q, e := decodeTaskQuery(c.params, c.query, false)
	if e != nil {
		return reply{}, e
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.tasks[c.op.TaskID]
	if t == nil {
		return reply{}, a2a.ErrTaskNotFound
	}
	return reply{result: c.dialectFor(t).task(t.view(q.historyLength, q.includeArtifacts))}, nil
}

func (a *Agent) cancelTask(c *call) (reply, *a2a.Error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.tasks[c.op.TaskID]
	if t == nil {
		return reply{}, a2a.ErrTaskNotFound
	}
	if st := t.status.state; st.Terminal() {
		return reply{}, a2a.ErrTaskNotCancelable.WithMessage("the task is already " + st.String())
	}
	a.setStatusLocked(t, status{state: a2a.StateCanceled, msg: t.agentMessage(part{text: "Canceled on request."}), at: time.Now()})
	t.cancel()
	return reply{result: c.dialectFor(t).task(t.view(-1, true))}, nil
}

func (a *Agent) subscribe(c *call) (reply, *a2a.Error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.tasks[c.op.TaskID]
	if t == nil {
		return reply{}, a2a.ErrTaskNotFound
	}
	if st := t.status.state; st.Terminal() {
		return reply{}, a2a.ErrUnsupportedOperation.WithMessage("the task is " + st.String() + "; there is nothing to subscribe to")
	}
	d := c.dialectFor(t)
	v := t.view(-1, true)
	s := &stream{first: d.streamTask(v), t: t, d: d}
	if !endsStream(v.status.state) {
		s.sub = t.subscribeLocked()
	}
	return reply{stream: s}, nil
}

func (t *task) subscribeLocked() *subscriber {
	s := &subscriber{ch: make(chan event, subscriberBuffer)}
	t.subs[s] = struct{}{}
	return s
}

func (a *Agent) unsubscribe(t *task, s *subscriber) {
	a.mu.Lock()
	delete(t.subs, s)
	a.mu.Unlock()
}
