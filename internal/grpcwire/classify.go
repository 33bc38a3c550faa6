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

// Classify decodes a request message of method m in version v strictly
// (checkWire) and classifies it into the Operation the JSON bindings
// produce for the same request, with Binding a2a.BindingGRPC.
//
// The request is read by the JSON-RPC classifier itself, from the JSON-RPC
// params the message stands for: in 1.0 these are the protobuf JSON of the
// request, in 0.3 the ids its resource names ("tasks/{id}") carry. So every
// binding validates a request by one set of rules, with one set of error
// messages.
func Classify(v a2a.Version, m a2a.Method, msg []byte) (*a2a.Operation, *a2a.Error) {
	op := &a2a.Operation{Method: m, Version: v, VersionExplicit: true, Binding: a2a.BindingGRPC}
	r, ok := lookup(v, m)
	if !ok {
		return op, a2a.ErrMethodNotFound.WithMessage(fmt.Sprintf("method %s does not belong to A2A %s over gRPC", m, v))
	}
	req := newOf(r.request)
	if e := decodeRequest(msg, req); e != nil {
		return op, e
	}
	params, e := rpcParams(v, m, req)
	if e != nil {
		return op, e
	}
	body, err := rpcBody(v, m, params)
	if err != nil {
		return op, a2a.ErrInvalidParams.WithMessage("the request could not be read")
	}
	got, e := a2a.ClassifyRPC(body, v, true)
	got.Binding, got.RPCMethod, got.RPCID = a2a.BindingGRPC, "", nil
	got.Method, got.Version, got.VersionExplicit = m, v, true
	return got, e
}

// decodeRequest checks msg and decodes it into req.
func decodeRequest(msg []byte, req proto.Message) *a2a.Error {
	if err := checkWire(msg, req.ProtoReflect().Descriptor()); err != nil {
		return a2a.ErrInvalidParams.WithMessage("the request message is ambiguous or malformed: " + err.Error())
	}
	if err := proto.Unmarshal(msg, req); err != nil {
		return a2a.ErrInvalidParams.WithMessage("the request message could not be decoded")
	}
	return nil
}

// rpcParams is the JSON-RPC params that req stands for.
func rpcParams(v a2a.Version, m a2a.Method, req proto.Message) (json.RawMessage, *a2a.Error) {
	if v == a2a.V10 || m == a2a.MethodSend || m == a2a.MethodStream {
		// 1.0 JSON-RPC params are the protobuf JSON of the request; a 0.3
		// send's protobuf JSON has the members of its JSON-RPC params
		// (message, configuration, metadata) under the same names.
		b, err := protojson.Marshal(req)
		if err != nil {
			return nil, a2a.ErrInvalidParams.WithMessage("the request holds a value without a JSON form")
		}
		return b, nil
	}
	p := map[string]any{}
	switch req := req.(type) {
	case *a2a03.GetTaskRequest:
		id, e := taskName(req.GetName(), "name")
		if e != nil {
			return nil, e
		}
		p["id"] = id
		if req.GetHistoryLength() != 0 {
			p["historyLength"] = req.GetHistoryLength()
		}
	case *a2a03.ListTaskPushNotificationConfigRequest:
		id, e := taskName(req.GetParent(), "parent")
		if e != nil {
			return nil, e
		}
		p["id"] = id
	case *a2a03.GetTaskPushNotificationConfigRequest:
		id, cfg, e := configName(req.GetName())
		if e != nil {
			return nil, e
		}
		p["id"], p["pushNotificationConfigId"] = id, cfg
	case *a2a03.DeleteTaskPushNotificationConfigRequest:
		id, cfg, e := configName(req.GetName())
		if e != nil {
			return nil, e
		}
		p["id"], p["pushNotificationConfigId"] = id, cfg
	case *a2a03.CreateTaskPushNotificationConfigRequest:
		return createParams(req)
	case interface{ GetName() string }: // CancelTaskRequest, TaskSubscriptionRequest
		id, e := taskName(req.GetName(), "name")
		if e != nil {
			return nil, e
		}
		p["id"] = id
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, a2a.ErrInvalidParams.WithMessage("the request could not be read")
	}
	return b, nil
}

// createParams reads a 0.3 push-config create: the task from parent, the
// config as given. The config's id travels in three places (config_id,
// config.name and config.push_notification_config.id); ones that are
// given must agree, as the REST classifier makes the body agree with the
// path.
func createParams(req *a2a03.CreateTaskPushNotificationConfigRequest) (json.RawMessage, *a2a.Error) {
	id, e := taskName(req.GetParent(), "parent")
	if e != nil {
		return nil, e
	}
	cfg := req.GetConfig().GetPushNotificationConfig()
	cfgID := cfg.GetId()
	if req.GetConfigId() != "" && req.GetConfigId() != cfgID {
		return nil, a2a.ErrInvalidParams.WithMessage("config_id differs from the push notification config's id")
	}
	if name := req.GetConfig().GetName(); name != "" {
		nameTask, nameCfg, e := configName(name)
		if e != nil {
			return nil, e
		}
		if nameTask != id || nameCfg != cfgID {
			return nil, a2a.ErrInvalidParams.WithMessage(`config.name must be tasks/{id}/pushNotificationConfigs/{configId} for the task in parent`)
		}
	}
	p := map[string]any{"taskId": id}
	if cfg != nil {
		b, err := protojson.Marshal(cfg)
		if err != nil {
			return nil, a2a.ErrInvalidParams.WithMessage("the push notification config could not be read")
		}
		p["pushNotificationConfig"] = json.RawMessage(b)
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, a2a.ErrInvalidParams.WithMessage("the request could not be read")
	}
	return b, nil
}

// taskName reads a 0.3 task resource name, "tasks/{id}". An empty name is
// no task, which the classifier refuses as a missing id.
func taskName(name, field string) (string, *a2a.Error) {
	if name == "" {
		return "", nil
	}
	id, ok := strings.CutPrefix(name, "tasks/")
	if !ok || id == "" || strings.Contains(id, "/") {
		return "", a2a.ErrInvalidParams.WithMessage(field + " must be tasks/{id}")
	}
	return id, nil
}

// configName reads a 0.3 push config resource name,
// "tasks/{id}/pushNotificationConfigs/{configId}"; the config id may be
// empty only in the form "tasks/{id}" that names the task alone.
func configName(name string) (task, cfg string, e *a2a.Error) {
	if name == "" {
		return "", "", nil
	}
	rest, ok := strings.CutPrefix(name, "tasks/")
	task, cfg, hasCfg := strings.Cut(rest, "/pushNotificationConfigs/")
	if !hasCfg {
		task = rest
	}
	if !ok || task == "" || strings.Contains(task, "/") || strings.Contains(cfg, "/") || hasCfg && cfg == "" {
		return "", "", a2a.ErrInvalidParams.WithMessage("name must be tasks/{id}/pushNotificationConfigs/{configId}")
	}
	return task, cfg, nil
}
