package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/grpcwire"
)

// The gateway's own calls (Call, CallStream: watchdog polls and cancels,
// the push relay's subscriptions, re-reads and webhook registration) are
// asked for as JSON-RPC calls of a version, whose callers read the results
// as that version's JSON-RPC results. A bridged agent speaks one form
// only, so they reach it in that form: the request is spelled there by
// a2a.TranslateRequest, every answer and event is read there as strictly
// as a forwarded one, and spelled back by a2a.TranslateResult.
//
// The rules that face callers do not apply to these calls: the forms a
// bridge offers are for callers, and the push-config methods, which the
// gateway answers for callers from its own store, reach the agent when
// the gateway registers its own webhook there.

// ownCallForm is the form the gateway's own calls of version v take to a:
// bridged reports that a is bridged and does not speak v over JSON-RPC.
func (a *Agent) ownCallForm(v a2a.Version) (to a2a.Form, bridged bool) {
	if a.Bridge == nil {
		return a2a.Form{}, false
	}
	to = a.Bridge.Agent
	return to, to != a2a.Form{Version: v, Binding: a2a.BindingJSONRPC}
}

// ownCall is one call of the gateway's own to a bridged agent: the
// request as the agent's form spells it, and how its answers are read.
type ownCall struct {
	// caller is the form the call was asked for in (a version over
	// JSON-RPC), agent the agent's.
	caller, agent a2a.Form
	// op is the call as classified in the caller's form; read is the same
	// operation in the agent's, which its answers are read against.
	op, read *a2a.Operation
	up       a2a.UpstreamRequest
}

// newOwnCall spells the JSON-RPC call of m in version v with params in
// form to. A call to cannot carry is refused here, before the agent is
// asked.
func newOwnCall(v a2a.Version, m a2a.Method, params any, to a2a.Form) (*ownCall, error) {
	body := a2a.RPCRequest(v, m, callID, params)
	op, e := a2a.ClassifyRPC(body, v, true)
	if e != nil {
		return nil, e
	}
	up, e := a2a.TranslateRequest(op, nil, body, to, callID)
	if e != nil {
		return nil, e
	}
	read := *op
	read.Version, read.Binding, read.RPCID = to.Version, to.Binding, callID
	return &ownCall{caller: a2a.FormOf(op), agent: to, op: op, read: &read, up: up}, nil
}

// result spells one answer or event the agent sent, read in its form, in
// the caller's, and reads it there again: what the caller gets is what
// the gateway can read unambiguously in the caller's form, or nothing.
func (c *ownCall) result(res []byte) (a2a.Event, []byte, error) {
	out, err := a2a.TranslateResult(c.op.Method, res, c.agent, c.caller)
	if err != nil {
		return a2a.Event{}, nil, fmt.Errorf("the agent's answer has no %s form: %w", c.caller, err)
	}
	ev, out, err := a2a.ReadAnswer(callOp(c.caller.Version, c.op.Method), a2a.RPCResult(callID, out))
	if err != nil {
		return a2a.Event{}, nil, fmt.Errorf("the agent's answer spelled in %s: %w", c.caller, err)
	}
	return ev, out, nil
}

// request is the HTTP request of c to a (JSON-RPC or HTTP+JSON) within
// ctx; stream asks for an event stream.
func (c *ownCall) request(ctx context.Context, a *Agent, stream bool) (*http.Request, error) {
	if c.agent.Binding == a2a.BindingJSONRPC {
		return a.rpcCallRequest(ctx, c.agent.Version, c.up.Body, stream)
	}
	u := a.upstreamURL(strings.TrimSuffix(a.cfg.RESTPath, "/")+c.up.Path, c.up.Query.Encode())
	return a.callRequest(ctx, c.agent.Version, c.up.HTTPMethod, u.String(), c.up.Body, stream)
}

// message is c's request message to a gRPC agent.
func (c *ownCall) message() ([]byte, error) {
	return grpcwire.EncodeRequestMessage(c.agent.Version, c.op.Method, c.up.Body)
}

// callBridged sends the unary call c to a in a's form and returns the
// answer in the caller's.
func (g *Gateway) callBridged(ctx context.Context, a *Agent, c *ownCall) (a2a.Event, []byte, error) {
	m := c.op.Method
	var res []byte
	if c.agent.Binding == a2a.BindingGRPC {
		msg, err := c.message()
		if err != nil {
			return a2a.Event{}, nil, fmt.Errorf("call %s %s: %w", a.Name, m, err)
		}
		if res, err = g.callGRPC(ctx, a, c.agent.Version, m, msg); err != nil {
			return a2a.Event{}, nil, err
		}
	} else {
		req, err := c.request(ctx, a, false)
		if err != nil {
			return a2a.Event{}, nil, err
		}
		if _, res, err = g.callHTTP(a, req, c.read); err != nil {
			return a2a.Event{}, nil, err
		}
	}
	ev, out, err := c.result(res)
	if err != nil {
		return a2a.Event{}, nil, fmt.Errorf("call %s %s: %w", a.Name, m, err)
	}
	return ev, out, nil
}

// callStreamBridged is CallStream of c to a in a's form, each event handed
// to yield in the caller's. A 1.0 subscription starts with the task, as
// 1.0 requires; a 0.3 agent's may start with an update, so the task is
// read first then (agentTask).
func (g *Gateway) callStreamBridged(ctx context.Context, a *Agent, c *ownCall, yield func(ev a2a.Event, result []byte) error) error {
	m := c.op.Method
	taskFirst := needsTaskFirst(m, c.caller, c.agent)
	each := func(first a2a.Event, res []byte) error {
		if taskFirst {
			taskFirst = false
			if first.Kind != a2a.EventTask {
				_, task, err := g.agentTask(ctx, a, c.op.TaskID, c.op.Tenant)
				if err != nil {
					return fmt.Errorf("%w: %s %s: %w", ErrStreamEnded, a.Name, m, err)
				}
				if err := g.yieldResult(c, task, yield); err != nil {
					return err
				}
			}
		}
		return g.yieldResult(c, res, yield)
	}
	if c.agent.Binding == a2a.BindingGRPC {
		msg, err := c.message()
		if err != nil {
			return fmt.Errorf("call stream %s %s: %w", a.Name, m, err)
		}
		return g.callStreamGRPC(ctx, a, c.agent.Version, m, msg, each)
	}
	req, err := c.request(context.Background(), a, true)
	if err != nil {
		return err
	}
	return g.callStreamHTTP(ctx, a, req, c.read, each)
}

// yieldResult hands one event of c's stream, read in the agent's form, to
// yield in the caller's.
func (g *Gateway) yieldResult(c *ownCall, res []byte, yield func(ev a2a.Event, result []byte) error) error {
	ev, out, err := c.result(res)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrStreamEnded, c.op.Method, err)
	}
	return yield(ev, out)
}

// needsTaskFirst reports whether a subscription of a caller in form from
// to an agent in form to must be given the task first: 1.0 requires a
// subscription to start with the task, 0.3 does not, so a 0.3 agent's
// stream may start with an update.
func needsTaskFirst(m a2a.Method, from, to a2a.Form) bool {
	return m == a2a.MethodSubscribe && from.Version == a2a.V10 && to.Version != a2a.V10
}

// agentTask reads task taskID from bridged agent a, once, with GetTask in
// a's own form, and returns it as the stream event of that form a
// subscription there would start with, for a 1.0 subscription whose
// agent's stream does not (needsTaskFirst). It is spelled through 1.0,
// which names that event, like any other translated answer.
func (g *Gateway) agentTask(ctx context.Context, a *Agent, taskID, tenant string) (a2a.Event, []byte, error) {
	pivot := a2a.Form{Version: a2a.V10, Binding: a2a.BindingJSONRPC}
	c, err := newOwnCall(pivot.Version, a2a.MethodGetTask, a2a.TaskParams{ID: taskID, Tenant: tenant}, a.Bridge.Agent)
	if err != nil {
		return a2a.Event{}, nil, fmt.Errorf("the stream does not start with the task, which cannot be read: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Timeouts.Request.D())
	defer cancel()
	ev, task, err := g.callBridged(ctx, a, c)
	if err == nil && (ev.Kind != a2a.EventTask || ev.TaskID != taskID) {
		err = errors.New("the agent did not answer with the task")
	}
	var event []byte
	if err == nil {
		event, err = a2a.TranslateResult(a2a.MethodSubscribe, a2a.TaskEvent(pivot.Version, task), pivot, a.Bridge.Agent)
	}
	if err != nil {
		return a2a.Event{}, nil, fmt.Errorf("the stream does not start with the task, which cannot be read: %w", err)
	}
	return ev, event, nil
}

// readTask starts reading the task of a forwarded 1.0 subscription to a
// bridged agent of another version (needsTaskFirst) with agentTask, and
// returns what waits for it; nil when the subscription needs no task. The
// read goes out with the subscription, not after: an agent may send
// nothing, not even its stream's headers, before its first event (a2a-go's
// servers do not), and a task read only then would already hold the events
// relayed after it.
func (c *bridgeCall) readTask() func() (a2a.Event, []byte, error) {
	if !needsTaskFirst(c.s.Op.Method, c.from, c.to) {
		return nil
	}
	type read struct {
		ev   a2a.Event
		task []byte
		err  error
	}
	done := make(chan read, 1)
	go func() {
		ev, task, err := c.g.agentTask(c.ctx, c.s.Agent, c.s.Op.TaskID, c.s.Op.Tenant)
		done <- read{ev, task, err}
	}()
	return func() (a2a.Event, []byte, error) {
		r := <-done
		return r.ev, r.task, r.err
	}
}

// taskFirst makes a forwarded 1.0 subscription to a bridged agent of
// another version start with the task (needsTaskFirst): when the agent's
// first event is not the task, the task read alongside the subscription
// (readTask) is relayed before it, like any event of the agent's stream.
func (c *bridgeCall) taskFirst(ans agentAnswer, task func() (a2a.Event, []byte, error)) agentAnswer {
	if !ans.stream() || task == nil {
		return ans
	}
	return &taskFirstAnswer{agentAnswer: ans, task: task}
}

// taskFirstAnswer is an agent's stream with the task put first.
type taskFirstAnswer struct {
	agentAnswer
	task    func() (a2a.Event, []byte, error)
	started bool
	// held is the agent's first event, relayed after the task.
	held       *a2a.Event
	heldResult []byte
}

func (t *taskFirstAnswer) next() (a2a.Event, []byte, bool, error) {
	if t.held != nil {
		ev := *t.held
		t.held = nil
		return ev, t.heldResult, false, nil
	}
	ev, result, keepAlive, err := t.agentAnswer.next()
	if t.started || err != nil || keepAlive {
		return ev, result, keepAlive, err
	}
	t.started = true
	if ev.Kind == a2a.EventTask || ev.Kind == a2a.EventError {
		return ev, result, false, nil
	}
	tev, task, terr := t.task()
	if terr != nil {
		return a2a.Event{}, nil, false, &upstreamFailure{
			err:    terr,
			a2aErr: a2a.ErrInvalidAgentResponse.WithMessage("the agent's stream does not start with the task, and the task cannot be read"),
		}
	}
	t.held, t.heldResult = &ev, result
	return tev, task, false, nil
}
