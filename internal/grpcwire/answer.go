package grpcwire

import (
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a03"
)

// ReadAnswer decodes one answer message to op (a unary answer, or one
// message of a stream) as strictly as a request, and returns the event,
// as a2a.ReadAnswer reads a REST answer of op's version, and the protobuf
// JSON of the message: the HTTP+JSON body of that version, which is what
// observers and the rest of the gateway see of a gRPC answer.
func ReadAnswer(op *a2a.Operation, msg []byte) (a2a.Event, []byte, error) {
	r, ok := lookup(op.Version, op.Method)
	if !ok {
		return a2a.Event{}, nil, fmt.Errorf("%w: no gRPC method %s in A2A %s", a2a.ErrNotA2A, op.Method, op.Version)
	}
	answer := newOf(r.response)
	if err := checkWire(msg, answer.ProtoReflect().Descriptor()); err != nil {
		return a2a.Event{}, nil, fmt.Errorf("%w: %v", a2a.ErrNotA2A, err)
	}
	if err := proto.Unmarshal(msg, answer); err != nil {
		return a2a.Event{}, nil, fmt.Errorf("%w: %v", a2a.ErrNotA2A, err)
	}
	payload, err := protojson.Marshal(answer)
	if err != nil {
		return a2a.Event{}, nil, fmt.Errorf("%w: the answer holds a value without a JSON form: %v", a2a.ErrNotA2A, err)
	}
	rest := *op
	rest.Binding = a2a.BindingREST
	ev, _, err := a2a.ReadAnswer(&rest, payload)
	if err != nil {
		return a2a.Event{}, nil, err
	}
	return ev, payload, nil
}

// EncodeAnswer turns the protobuf JSON of an answer to op (as ReadAnswer
// returned it, or rewritten or replayed by the gateway) back into the
// protobuf message of op's method. Members the message does not define are
// refused, not dropped.
func EncodeAnswer(op *a2a.Operation, payload []byte) ([]byte, error) {
	r, ok := lookup(op.Version, op.Method)
	if !ok {
		return nil, fmt.Errorf("grpcwire: no gRPC method %s in A2A %s", op.Method, op.Version)
	}
	answer := newOf(r.response)
	if err := protojson.Unmarshal(payload, answer); err != nil {
		return nil, fmt.Errorf("grpcwire: the answer to %s has no protobuf form: %w", op.Method, err)
	}
	return marshal(answer)
}

// marshal encodes m deterministically (map entries sorted), so one answer
// always has one encoding.
func marshal(m proto.Message) ([]byte, error) {
	return proto.MarshalOptions{Deterministic: true}.Marshal(m)
}

// EncodeRequest builds the request message of m in version v for the
// gateway's own calls to a gRPC agent, from the JSON-RPC params the
// gateway would send the agent over JSON-RPC (a2a.RPCRequest). In 1.0
// these are the protobuf JSON of the request, which is also the HTTP+JSON
// body; a 0.3 send takes the protobuf JSON of its request too (the 0.3
// HTTP+JSON body), the other 0.3 methods their JSON-RPC params, whose ids
// become the resource names of the gRPC request.
func EncodeRequest(v a2a.Version, m a2a.Method, params []byte) ([]byte, error) {
	r, ok := lookup(v, m)
	if !ok {
		return nil, fmt.Errorf("grpcwire: no gRPC method %s in A2A %s", m, v)
	}
	if v == a2a.V10 || m == a2a.MethodSend || m == a2a.MethodStream {
		return EncodeRequestMessage(v, m, params)
	}
	req := newOf(r.request)
	body, err := rpcBody(v, m, params)
	if err != nil {
		return nil, err
	}
	op, e := a2a.ClassifyRPC(body, v, true)
	if e != nil {
		return nil, fmt.Errorf("grpcwire: params of %s: %w", m, e)
	}
	if strings.Contains(op.TaskID, "/") || strings.Contains(op.PushConfigID, "/") {
		// A resource name could not say where the id ends.
		return nil, fmt.Errorf("grpcwire: an id with a slash has no 0.3 resource name")
	}
	task := "tasks/" + op.TaskID
	switch req := req.(type) {
	case *a2a03.GetTaskRequest:
		req.Name = task
	case *a2a03.CancelTaskRequest:
		req.Name = task
	case *a2a03.TaskSubscriptionRequest:
		req.Name = task
	case *a2a03.ListTaskPushNotificationConfigRequest:
		req.Parent = task
	case *a2a03.GetTaskPushNotificationConfigRequest:
		req.Name = configResource(op.TaskID, op.PushConfigID)
	case *a2a03.DeleteTaskPushNotificationConfigRequest:
		req.Name = configResource(op.TaskID, op.PushConfigID)
	case *a2a03.CreateTaskPushNotificationConfigRequest:
		cfg := &a2a03.PushNotificationConfig{}
		if err := protojson.Unmarshal(op.PushConfig, cfg); err != nil {
			return nil, fmt.Errorf("grpcwire: push notification config: %w", err)
		}
		req.Parent, req.ConfigId = task, cfg.GetId()
		req.Config = &a2a03.TaskPushNotificationConfig{Name: configResource(op.TaskID, cfg.GetId()), PushNotificationConfig: cfg}
	}
	return marshal(req)
}

// configResource is the 0.3 name of a push config; without a config id,
// the name of the task alone (a 0.3 get of the task's single config).
func configResource(task, cfg string) string {
	if cfg == "" {
		return "tasks/" + task
	}
	return "tasks/" + task + "/pushNotificationConfigs/" + cfg
}

// rpcBody wraps params into a JSON-RPC request of m, for the classifier.
func rpcBody(v a2a.Version, m a2a.Method, params []byte) ([]byte, error) {
	if len(params) == 0 {
		params = []byte("{}")
	}
	return json.Marshal(rpcEnvelope{JSONRPC: "2.0", Method: a2a.RPCMethodName(m, v), Params: params})
}

type rpcEnvelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      int             `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}
