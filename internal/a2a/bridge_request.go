package a2a

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// TranslateRequest spells the request op was classified from in form to.
// body is the request as the pipeline leaves it: the JSON-RPC request, the
// REST body (query is its URL query), or for gRPC the protobuf JSON of the
// request message. id is the JSON-RPC id of a JSON-RPC request to the agent.
//
// A method to lacks is refused with ErrUnsupportedOperation, a member that
// cannot be carried with ErrInvalidParams, both naming what and why in the
// caller's terms.
//
// The ids (task, config, context, tenant) are taken from op, which the
// pipeline may have changed (the routing tenant); every other member is
// read from body by the request table (bridge_request_tables.go) and
// refused when the table does not know it.
func TranslateRequest(op *Operation, query url.Values, body []byte, to Form, id json.RawMessage) (UpstreamRequest, *Error) {
	from := FormOf(op)
	if from == to {
		return sameForm(op, query, body), nil
	}
	if op.Version != V10 && op.Version != V03 || to.Version != V10 && to.Version != V03 {
		// Pre-0.2 clients choose the task id and group by sessionId; no
		// later version lets a client name a new task, so nothing maps.
		return UpstreamRequest{}, ErrUnsupportedOperation.WithMessage("requests of A2A " + op.Version.String() + " cannot be bridged to A2A " + to.Version.String())
	}
	if op.Method == MethodListTasks && to.Version != V10 {
		return UpstreamRequest{}, ErrUnsupportedOperation.WithMessage("ListTasks does not exist in A2A " + to.Version.String() + ", which the agent speaks")
	}
	t := tableOf(op.Method)
	if t == nil {
		return UpstreamRequest{}, ErrMethodNotFound.WithMessage("method " + op.Method.String() + " cannot be bridged")
	}
	r := bridgeReq{op: op, from: from, to: to, size: len(body)}
	if e := r.read(t, query, body); e != nil {
		return UpstreamRequest{}, e
	}
	return r.write(t, id)
}

// sameForm is the request as it came: the proxy forwards such requests
// unchanged and needs no translation.
func sameForm(op *Operation, query url.Values, body []byte) UpstreamRequest {
	u := UpstreamRequest{Body: body}
	if op.Binding == BindingREST {
		u.HTTPMethod, u.Path = restRequestLine(op.Method, op.Version, op.Tenant, op.TaskID, op.PushConfigID)
		u.Query = query
	}
	return u
}

// restRequestLine is RESTPath below the 1.0 tenant prefix.
func restRequestLine(m Method, v Version, tenant, taskID, configID string) (string, string) {
	method, path := RESTPath(m, v, taskID, configID)
	if tenant != "" && v == V10 {
		path = "/" + url.PathEscape(tenant) + path
	}
	return method, path
}

// bridgeReq is one request between reading and writing: the values of its
// members in the caller's spelling (raw JSON, ints normalised), and the
// send's blocking mode.
type bridgeReq struct {
	op       *Operation
	from, to Form
	vals     [slots][]byte
	// names are the caller's member names of vals, for error messages.
	names [slots]string
	// immediate is a send's returnImmediately: 0 unknown, else 1 + value.
	immediate uint8
	// conf is whether a send has a configuration.
	conf bool
	// configID is the push config's id: the Operation's, or on a create
	// the config's own (0.3 names it only there).
	configID string
	// size is the length of the caller's request.
	size int
}

// read fills r from the caller's request.
func (r *bridgeReq) read(t *memberTable, query url.Values, body []byte) *Error {
	sp := spellingOf(r.from)
	params := body
	switch r.from.Binding {
	case BindingJSONRPC:
		var env [4][]byte
		if err := pick(body, rpcEnvelopeKeys, env[:]); err != nil {
			return ErrInvalidRequest.WithMessage(err.Error())
		}
		params = env[3]
	case BindingREST:
		if e := r.readQuery(t, sp, query); e != nil {
			return e
		}
	}
	if len(params) > 0 && skipSpace(params, 0) < len(params) {
		if r.op.Method == MethodPushConfigSet && sp == sp10 {
			// A 1.0 create's params are the config, beside its ids.
			cfg := params
			for _, m := range pushConfigIDKeys {
				cfg = cutMember(cfg, nil, m)
			}
			r.vals[slotPush], r.names[slotPush] = cfg, "the push notification config"
		} else if e := r.readObject(t, sp, params, ""); e != nil {
			return e
		}
	}
	r.configID = r.op.PushConfigID
	if r.op.Method == MethodPushConfigSet {
		if r.vals[slotPush] == nil {
			return ErrInvalidParams.WithMessage("the push notification config is required")
		}
		var id [1][]byte // pushConfigKeys starts with the config's id
		if err := pick(r.vals[slotPush], pushConfigKeys[:1], id[:]); err != nil {
			return ErrInvalidParams.WithMessage("the push notification config must be an object")
		}
		var err error
		if r.configID, err = jsonString(id[0], "id"); err != nil {
			return ErrInvalidParams.WithMessage("the push notification config's " + err.Error())
		}
	}
	return r.settle(sp)
}

// readObject reads the members of obj by table t.
func (r *bridgeReq) readObject(t *memberTable, sp spelling, obj []byte, where string) *Error {
	if !isObject(obj) {
		if where == "" {
			return ErrInvalidParams.WithMessage("the params must be an object")
		}
		return ErrInvalidParams.WithMessage(where + " must be an object")
	}
	keys := t.keys[sp]
	var buf [8][]byte
	out := buf[:0]
	if len(keys) > len(buf) {
		out = make([][]byte, len(keys))
	}
	out = out[:len(keys)]
	if err := pickStrict(obj, keys, out, knownOnly); err != nil {
		if where == "" {
			return invalid(ErrInvalidParams, err)
		}
		return invalidIn(err, where)
	}
	for i, v := range out {
		m := &t.rows[t.at[sp][i]]
		if v == nil || m.slot.isID() {
			continue
		}
		name := keys[i].name
		if where != "" {
			name = where + "." + name
		}
		if m.nested != nil {
			r.conf = r.conf || m.slot == slotConfiguration
			if e := r.readObject(m.nested, sp, v, name); e != nil {
				return e
			}
			continue
		}
		if e := r.set(m.slot, v, name); e != nil {
			return e
		}
	}
	return nil
}

// set stores the value of one member, checked against its slot's kind.
func (r *bridgeReq) set(s slot, v []byte, name string) *Error {
	if r.vals[s] != nil {
		return ErrInvalidParams.WithMessage(name + " is given more than once")
	}
	v, ok := checkValue(slotKinds[s], v)
	if !ok {
		return ErrInvalidParams.WithMessage(name + " has a value of the wrong type")
	}
	r.vals[s], r.names[s] = v, name
	return nil
}

// readQuery reads an HTTP+JSON query: the members of a request without a
// body, one value each. Only the version negotiation may stand beside them.
func (r *bridgeReq) readQuery(t *memberTable, sp spelling, query url.Values) *Error {
	for k, vs := range query {
		if strings.EqualFold(k, VersionHeader) {
			continue
		}
		m := t.find(sp, k)
		if m == nil || m.nested != nil {
			return ErrInvalidParams.WithMessage("the query parameter " + quoteClip(k) + " is not one the gateway accepts for " + r.op.Method.String())
		}
		if len(vs) != 1 {
			return ErrInvalidParams.WithMessage("the query parameter " + quoteClip(k) + " is given more than once")
		}
		if m.slot == slotContextID {
			continue // read by the classifier
		}
		if m.slot.isID() {
			// The path names it; the classifier does not compare a query value.
			return ErrInvalidParams.WithMessage("the query parameter " + quoteClip(k) + " belongs in the path")
		}
		if e := r.set(m.slot, queryValue(slotKinds[m.slot], vs[0]), k); e != nil {
			return e
		}
	}
	return nil
}

// queryValue is a query value as the JSON its member would hold.
func queryValue(k valueKind, s string) []byte {
	switch k {
	case kindInt, kindBool:
		return []byte(s)
	case kindEnum:
		if _, err := strconv.ParseInt(s, 10, 32); err == nil {
			return []byte(s)
		}
	}
	b, _ := json.Marshal(s)
	return b
}

// checkValue checks a raw value against k and returns it normalised: an
// int as its number (protobuf JSON also writes it as a string).
func checkValue(k valueKind, v []byte) ([]byte, bool) {
	if len(v) == 0 {
		return nil, false // an empty query value
	}
	switch k {
	case kindObject:
		return v, isObject(v)
	case kindString:
		return v, v[0] == '"'
	case kindBool:
		return v, string(v) == "true" || string(v) == "false"
	case kindStrings:
		return v, rawStrings(v)
	case kindEnum:
		if v[0] == '"' {
			return v, true
		}
	}
	s := string(v)
	if v[0] == '"' {
		s, _ = jsonString(v, "")
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 0 {
		return nil, false
	}
	return strconv.AppendInt(nil, n, 10), true
}

// settle turns the caller's values into what they mean: a 0.3 protobuf
// history length of 0 is no limit; blocking and returnImmediately become
// one mode.
func (r *bridgeReq) settle(sp spelling) *Error {
	if h := r.vals[slotHistoryLength]; h != nil && string(h) == "0" && (sp == sp03REST || sp == sp03GRPC) {
		// a2a.v1: "if 0, the history will be unlimited".
		r.vals[slotHistoryLength] = nil
	}
	ri, bl := r.vals[slotReturnImmediately], r.vals[slotBlocking]
	r.vals[slotReturnImmediately], r.vals[slotBlocking] = nil, nil
	switch {
	case ri != nil && bl != nil && string(ri) == string(bl):
		return ErrInvalidParams.WithMessage("configuration.blocking and configuration.returnImmediately disagree")
	case ri != nil:
		r.immediate = 1 + b2u(string(ri) == "true")
	case bl != nil:
		r.immediate = 1 + b2u(string(bl) == "false")
	case r.op.Method == MethodSend:
		r.immediate = 1 + b2u(r.from.Version == V03 && sp != sp03RPC && r.conf)
	}
	return nil
}

// A send that names no blocking mode: 1.0 waits ("false (default)"). A 0.3
// protobuf configuration's blocking is a plain bool, false when unset, and
// false is non-blocking (a2a.v1 SendMessageConfiguration). A 0.3 JSON-RPC
// send gives no default in the specification; agents (a2a-go v0.3.3
// a2asrv, "default Blocking to TRUE") wait, and clients (a2a-go's) send a
// blocking request without configuration, so it waits. A 0.3 protobuf send
// without configuration is read alike, as a2a-go's protobuf reader does.

func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// write spells r in r.to.
func (r *bridgeReq) write(t *memberTable, id json.RawMessage) (UpstreamRequest, *Error) {
	sp := spellingOf(r.to)
	if e := r.checkLoss(t, sp); e != nil {
		return UpstreamRequest{}, e
	}
	if e := r.checkIDs(); e != nil {
		return UpstreamRequest{}, e
	}
	var u UpstreamRequest
	inQuery := false
	if r.to.Binding == BindingREST {
		var e *Error
		if u.HTTPMethod, u.Path, e = r.restLine(); e != nil {
			return u, e
		}
		inQuery = u.HTTPMethod == http.MethodGet || u.HTTPMethod == http.MethodDelete
		if inQuery {
			u.Query = url.Values{}
		}
	}
	w := reqWriter{r: r, sp: sp, query: u.Query, size: r.size + 64}
	params, e := w.object(t, true)
	if e != nil {
		return u, e
	}
	switch r.to.Binding {
	case BindingJSONRPC:
		if len(id) == 0 {
			id = r.op.RPCID
		}
		if len(id) == 0 || !(id[0] == '"' || id[0] == '-' || id[0] >= '0' && id[0] <= '9') || !json.Valid(id) {
			return u, ErrInternal.WithMessage("a JSON-RPC request to the agent needs a string or number id")
		}
		b := make([]byte, 0, len(params)+len(id)+64)
		b = append(b, `{"jsonrpc":"2.0","id":`...)
		b = append(b, id...)
		b = append(b, `,"method":`...)
		b = appendJSONString(b, RPCMethodName(r.op.Method, r.to.Version))
		b = append(b, `,"params":`...)
		b = append(b, params...)
		u.Body = append(b, '}')
	default:
		if !inQuery {
			u.Body = params
		}
	}
	return u, nil
}

// checkLoss refuses a value the agent's spelling cannot carry, and drops
// one that says nothing (an empty metadata object, a zero page size, an
// empty page token).
func (r *bridgeReq) checkLoss(t *memberTable, sp spelling) *Error {
	for s := slotTenant; s < slots; s++ {
		v := r.vals[s]
		if v == nil || s == slotPush && r.op.Method == MethodPushConfigSet || t.carries(sp, s) {
			continue
		}
		if isEmptyRaw(v) {
			r.vals[s] = nil
			continue
		}
		return ErrInvalidParams.WithMessage(r.names[s] + " has no equivalent in A2A " + r.to.Version.String() + " over " + r.to.Binding.CardName() + ", which the agent speaks")
	}
	if h := r.vals[slotHistoryLength]; string(h) == "0" && (sp == sp03REST || sp == sp03GRPC) {
		return ErrInvalidParams.WithMessage(r.names[slotHistoryLength] + " 0 asks for no history, which A2A 0.3 over " + r.to.Binding.CardName() + " reads as no limit")
	}
	return nil
}

// checkIDs refuses ids the agent's form cannot carry: a 0.3 resource name
// cannot say where an id with a slash ends, and 0.3 over HTTP+JSON has no
// path for the single config of a task.
func (r *bridgeReq) checkIDs() *Error {
	op := r.op
	if op.Method == MethodPushConfigGet && op.PushConfigID == "" && (r.to.Version == V10 || r.to.Binding == BindingREST) {
		return ErrInvalidParams.WithMessage("the push notification config id is required by A2A " + r.to.Version.String() + " over " + r.to.Binding.CardName() + ", which the agent speaks")
	}
	if r.to.Version == V03 && r.to.Binding != BindingJSONRPC && (strings.Contains(op.TaskID, "/") || strings.Contains(r.configID, "/")) {
		return ErrInvalidParams.WithMessage("an id holds a slash, which an A2A 0.3 resource name cannot carry")
	}
	return nil
}

// restLine is the request line in r.to, checked to classify back to the
// same method and ids: a task id "x:subscribe" or a tenant "tasks" would
// make another path.
func (r *bridgeReq) restLine() (string, string, *Error) {
	op := r.op
	tenant := op.Tenant
	if r.to.Version != V10 {
		tenant = ""
	}
	method, path := restRequestLine(op.Method, r.to.Version, tenant, op.TaskID, op.PushConfigID)
	want := restLine{method: op.Method, tenant: tenant}
	if op.Method.TaskScoped() {
		want.taskID = op.TaskID
	}
	if op.Method == MethodPushConfigGet || op.Method == MethodPushConfigDelete {
		want.configID = op.PushConfigID
	}
	if got, ok := readRESTLine(method, path, r.to.Version); !ok || got != want {
		return "", "", ErrInvalidParams.WithMessage("the ids of this request cannot be spelled in an A2A " + r.to.Version.String() + " HTTP+JSON path")
	}
	return method, path, nil
}

// reqWriter writes one request's params in spelling sp.
type reqWriter struct {
	r     *bridgeReq
	sp    spelling
	query url.Values
	// size is the room to reserve: about the size of the caller's request.
	size int
}

// object writes the members of table t as a JSON object, or into the
// query when w has one (the top level of a request without a body).
func (w *reqWriter) object(t *memberTable, top bool) ([]byte, *Error) {
	r := w.r
	b := make([]byte, 1, w.size)
	b[0] = '{'
	n := 0
	add := func(name string, v []byte) {
		if w.query != nil {
			w.query.Set(name, queryText(v))
			return
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = appendJSONString(b, name)
		b = append(b, ':')
		b = append(b, v...)
	}
	if top && r.op.Method == MethodPushConfigSet && w.sp == sp10 {
		// The 1.0 create is the flat config beside its ids.
		cfg, e := r.pushConfig()
		if e != nil {
			return nil, e
		}
		for _, m := range t.rows {
			if v := w.id(m.slot); v != nil && m.names[sp10] != "" {
				add(m.names[sp10], v)
			}
		}
		if inner := bytes.TrimSpace(cfg[1 : len(cfg)-1]); len(inner) > 0 {
			if n > 0 {
				b = append(b, ',')
			}
			b = append(b, inner...)
		}
		return append(b, '}'), nil
	}
	for i := range t.rows {
		m := &t.rows[i]
		name := m.names[w.sp]
		if name == "" {
			continue
		}
		var v []byte
		switch {
		case m.slot.isID():
			v = w.id(m.slot)
		case m.nested != nil:
			inner, e := (&reqWriter{r: r, sp: w.sp, size: 64}).object(m.nested, false)
			if e != nil {
				return nil, e
			}
			if len(inner) > 2 {
				v = inner
			}
		default:
			var e *Error
			if v, e = w.value(m.slot); e != nil {
				return nil, e
			}
		}
		if v != nil {
			add(name, v)
		}
	}
	return append(b, '}'), nil
}

// id is the value of an id slot, nil where the agent's form has it
// elsewhere (an HTTP+JSON path) or the request has none.
func (w *reqWriter) id(s slot) []byte {
	op := w.r.op
	rest := w.r.to.Binding == BindingREST
	var v string
	switch s {
	case slotTenant:
		if rest {
			return nil
		}
		v = op.Tenant
	case slotTaskID:
		if rest {
			return nil
		}
		v = op.TaskID
	case slotConfigID:
		if rest {
			return nil
		}
		v = w.r.configID
	case slotTaskName:
		v = "tasks/" + op.TaskID
	case slotConfigName:
		switch {
		case w.r.configID != "":
			v = "tasks/" + op.TaskID + "/pushNotificationConfigs/" + w.r.configID
		case op.Method != MethodPushConfigSet:
			// A 0.3 get of the task's single config names the task.
			v = "tasks/" + op.TaskID
		}
	case slotContextID:
		v = op.ContextID
	}
	if v == "" {
		return nil
	}
	return appendJSONString(nil, v)
}

// value is the value of slot s in the agent's spelling.
func (w *reqWriter) value(s slot) ([]byte, *Error) {
	r := w.r
	switch s {
	case slotReturnImmediately:
		if r.to.Version == V10 && r.immediate == 2 {
			return []byte("true"), nil
		}
		return nil, nil
	case slotBlocking:
		if r.to.Version == V10 || r.immediate == 0 {
			return nil, nil
		}
		return []byte(strconv.FormatBool(r.immediate == 1)), nil
	case slotMessage:
		return r.translated(objMessage, s)
	case slotPush:
		return r.pushConfig()
	}
	return r.vals[s], nil
}

// pushConfig is the push config in the agent's dialect: in 1.0 the flat
// config without its ids, which the request writes.
func (r *bridgeReq) pushConfig() ([]byte, *Error) {
	cfg, e := r.translated(objPushConfig, slotPush)
	if e != nil || cfg == nil || r.to.Version != V10 {
		return cfg, e
	}
	for _, m := range pushConfigIDKeys {
		cfg = cutMember(cfg, nil, m)
	}
	return cfg, nil
}

// translated is the object in slot s translated to the agent's dialect
// (as it came when the dialect is the caller's).
func (r *bridgeReq) translated(k objectKind, s slot) ([]byte, *Error) {
	v := r.vals[s]
	from, to := dialectOf(r.from), dialectOf(r.to)
	if v == nil || from == to {
		return v, nil
	}
	out, err := translateJSON(k, v, from, to)
	if err != nil {
		return nil, ErrInvalidParams.WithMessage(r.names[s] + ": " + strings.TrimPrefix(err.Error(), ErrNotA2A.Error()+": "))
	}
	return out, nil
}

// queryText is a scalar JSON value as a query value.
func queryText(v []byte) string {
	if len(v) > 0 && v[0] == '"' {
		s, _ := jsonString(v, "")
		return s
	}
	return string(v)
}

// appendJSONString appends s as a JSON string; s is valid UTF-8 (the
// classifier refuses ids that are not).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
