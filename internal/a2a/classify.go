package a2a

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// Binding is the transport binding of a request.
type Binding uint8

const (
	BindingJSONRPC Binding = iota + 1
	BindingREST
	// BindingGRPC is A2A over gRPC: protobuf messages, read by
	// internal/grpcwire into the same Operation as the JSON bindings.
	BindingGRPC
)

// String is the binding's name in logs, traces and metric labels.
func (b Binding) String() string {
	switch b {
	case BindingREST:
		return "rest"
	case BindingGRPC:
		return "grpc"
	}
	return "jsonrpc"
}

// MaxIDLength bounds every identifier the gateway reads from a request; a
// longer one is refused rather than stored or used as a key.
const MaxIDLength = 512

// Operation is what one request asks for, read once from the request and
// handed to every stage of the gateway, so no stage reads the body again.
// The body is forwarded as sent; where the gateway must change it (the
// routing tenant, a ListTasks page), the change is spliced in (splice.go).
type Operation struct {
	Method  Method
	Version Version
	// VersionExplicit is true when the caller sent A2A-Version.
	VersionExplicit bool
	Binding         Binding
	// RPCMethod is the JSON-RPC method name as sent; RPCID the request id verbatim.
	RPCMethod string
	RPCID     json.RawMessage

	TaskID           string
	ContextID        string
	MessageID        string
	ReferenceTaskIDs []string
	PushConfigID     string
	Tenant           string
	// PushConfig is the raw push-notification config: the body of a
	// push-config create, or the one given inline with a send.
	PushConfig json.RawMessage
	// PageSize and PageToken are a ListTasks request's paging, as sent:
	// PageSize is the text of the number (or of the string holding it),
	// "" when absent; its bounds are the list stage's to judge.
	PageSize, PageToken string
}

// HasTaskRefs reports whether the request names any existing task or context.
func (op *Operation) HasTaskRefs() bool {
	return op.TaskID != "" || op.ContextID != "" || len(op.ReferenceTaskIDs) > 0
}

// The member names the gateway reads. Listed once so the strict walker and
// the error messages agree.
var (
	rpcEnvelopeKeys = members("jsonrpc", "id", "method", "params")
	// messageKeys ends with metadata, read only so that it is unambiguous:
	// the gateway splices its credential into it and takes the caller's out.
	messageKeys = members("messageId", "taskId", "contextId", "referenceTaskIds", "metadata")
	// sendKeys ends with the push spellings of params (sendPushAt on).
	sendKeys      = append(members("message", "configuration", "tenant", "id", "sessionId"), pushSpellingsIn(false)...)
	taskParamKeys = members("id", "taskId", "tenant", "pushNotificationConfigId", "pushNotificationConfig", "contextId")
	// listParamKeys are taskParamKeys and the paging of a ListTasks.
	listParamKeys = append(slices.Clone(taskParamKeys), members("pageSize", "pageToken")...)
)

// ClassifyRPC reads a JSON-RPC request body. version is the negotiated
// version; when the caller sent none, the method name decides, so a 1.0
// method is read as 1.0 even from a client that forgot the header.
func ClassifyRPC(body []byte, version Version, explicit bool) (*Operation, *Error) {
	op := &Operation{Binding: BindingJSONRPC, Version: version, VersionExplicit: explicit}
	if !json.Valid(body) {
		return op, ErrParse
	}
	if i := skipSpace(body, 0); i < len(body) && body[i] == '[' {
		return op, ErrInvalidRequest.WithMessage("batch requests are not supported")
	}
	var env [4][]byte
	if err := pickStrict(body, rpcEnvelopeKeys, env[:], 0); err != nil {
		return op, invalid(ErrInvalidRequest, err)
	}
	op.RPCID = env[1]
	if v, _ := jsonString(env[0], "jsonrpc"); v != "2.0" {
		return op, ErrInvalidRequest.WithMessage(`"jsonrpc" must be "2.0"`)
	}
	if env[1] == nil || !(env[1][0] == '"' || env[1][0] == '-' || (env[1][0] >= '0' && env[1][0] <= '9')) {
		op.RPCID = nil
		return op, ErrInvalidRequest.WithMessage(`"id" must be a string or a number`)
	}
	name, err := jsonString(env[2], "method")
	if err != nil || name == "" {
		return op, ErrInvalidRequest.WithMessage(`"method" must be a non-empty string`)
	}
	op.RPCMethod = name
	rm, ok := rpcMethods[name]
	if !ok {
		return op, ErrMethodNotFound.WithMessage("method " + quoteClip(name) + " is not supported")
	}
	op.Method = rm.method
	if explicit && rm.version != VLegacy && rm.version != version {
		// Agents disagree on whether the header or the method name decides
		// how params are read; a request where they differ is ambiguous.
		return op, ErrMethodNotFound.WithMessage("method " + quoteClip(name) + " does not belong to A2A " + version.String())
	}
	op.Version = rm.version
	params := env[3]
	if params == nil {
		params = []byte("{}")
	}
	if !isObject(params) {
		return op, ErrInvalidParams.WithMessage(`"params" must be an object`)
	}
	if e := op.readParams(params); e != nil {
		return op, e
	}
	return op, op.validate()
}

// PeekRPCID returns the id of a JSON-RPC request body, or nil, for error
// answers to requests refused before classification (an unsupported
// version, say).
func PeekRPCID(body []byte) json.RawMessage {
	if !json.Valid(body) {
		return nil
	}
	var env [4][]byte
	if pick(body, rpcEnvelopeKeys, env[:]) != nil || env[1] == nil {
		return nil
	}
	if c := env[1][0]; c == '"' || c == '-' || (c >= '0' && c <= '9') {
		return env[1]
	}
	return nil
}

// readParams fills the ids from JSON-RPC params, or from a REST body.
func (op *Operation) readParams(params []byte) *Error {
	switch op.Method {
	case MethodSend, MethodStream:
		return op.readSend(params)
	case MethodListTasks:
		var v [8][]byte
		if err := pickStrict(params, listParamKeys, v[:], 0); err != nil {
			return invalid(ErrInvalidParams, err)
		}
		if op.Binding == BindingJSONRPC {
			// Over HTTP+JSON the query carries the paging (ClassifyREST).
			if e := op.readPaging(v[6], v[7]); e != nil {
				return e
			}
		}
		return firstErr(op.setString(&op.Tenant, v[2], "tenant"), op.setString(&op.ContextID, v[5], "contextId"))
	case MethodExtendedCard:
		var v [6][]byte
		if err := pickStrict(params, taskParamKeys, v[:], 0); err != nil {
			return invalid(ErrInvalidParams, err)
		}
		return firstErr(op.setString(&op.Tenant, v[2], "tenant"), op.setString(&op.ContextID, v[5], "contextId"))
	}
	var v [6][]byte
	if err := pickStrict(params, taskParamKeys, v[:], 0); err != nil {
		return invalid(ErrInvalidParams, err)
	}
	if op.Method == MethodPushConfigSet && op.Version != V10 {
		if e := op.readPushSetWrapper(params); e != nil {
			return e
		}
	}
	id, task := v[0], v[1]
	switch {
	case op.Method.PushConfig() && op.Version == V10:
		// 1.0 push-config requests: taskId names the task, id the config.
		if e := op.setString(&op.PushConfigID, id, "id"); e != nil {
			return e
		}
		id = task
	case op.Method == MethodPushConfigSet && op.Version == V03:
		id = task
	}
	if op.Binding == BindingREST && op.TaskID != "" {
		// The path names the task; a body naming another one is ambiguous.
		var fromBody string
		if e := op.setString(&fromBody, id, "taskId"); e != nil {
			return e
		}
		if fromBody != "" && fromBody != op.TaskID {
			return ErrInvalidParams.WithMessage("the task id in the body differs from the one in the path")
		}
	} else if e := op.setString(&op.TaskID, id, "id"); e != nil {
		return e
	}
	if op.Method == MethodPushConfigGet || op.Method == MethodPushConfigDelete {
		if op.Version != V10 {
			if e := op.setString(&op.PushConfigID, v[3], "pushNotificationConfigId"); e != nil {
				return e
			}
		}
	}
	if op.Method == MethodPushConfigSet {
		if op.Version == V10 {
			op.PushConfig = params
		} else {
			op.PushConfig = v[4]
		}
	}
	return op.setString(&op.Tenant, v[2], "tenant")
}

// readPaging reads a ListTasks body's pageSize (a number, or a string
// holding one) and pageToken.
func (op *Operation) readPaging(size, token []byte) *Error {
	op.PageSize = string(size)
	if len(size) > 0 && size[0] == '"' {
		op.PageSize, _ = jsonString(size, "pageSize")
	}
	var err error
	if op.PageToken, err = jsonString(token, "pageToken"); err != nil {
		return ErrInvalidParams.WithMessage(err.Error())
	}
	return nil
}

// readPushSetWrapper reads what wraps a 0.3 or legacy push config on a
// create as strictly as the config: only the members of the caller's
// dialect, and a 0.3 HTTP+JSON name ("tasks/{id}/pushNotificationConfigs/
// {cfg}", from which SDKs take the task id) naming the task in the path.
func (op *Operation) readPushSetWrapper(params []byte) *Error {
	keys := pushSetKeysRPC
	switch {
	case op.Version == VLegacy:
		keys = pushSetKeysLegacy
	case op.Binding == BindingREST:
		keys = pushSetKeysREST
	}
	v := make([][]byte, len(keys))
	if err := pickStrict(params, keys, v, knownOnly); err != nil {
		return invalidIn(err, "the push notification config request")
	}
	if op.Binding != BindingREST || v[0] == nil {
		return nil
	}
	name, err := jsonString(v[0], "name")
	if err != nil {
		return ErrInvalidParams.WithMessage(err.Error())
	}
	cfg, ok := strings.CutPrefix(name, "tasks/"+op.TaskID+"/pushNotificationConfigs/")
	if !ok || strings.Contains(cfg, "/") {
		return ErrInvalidParams.WithMessage(`"name" must be tasks/{id}/pushNotificationConfigs/{configId} for the task in the path`)
	}
	return nil
}

// sendPushAt is the index in sendKeys of its first push spelling.
const sendPushAt = 5

func (op *Operation) readSend(params []byte) *Error {
	v := make([][]byte, len(sendKeys))
	if err := pickStrict(params, sendKeys, v, 0); err != nil {
		return invalid(ErrInvalidParams, err)
	}
	msg, conf := v[0], v[1]
	if e := op.setString(&op.Tenant, v[2], "tenant"); e != nil {
		return e
	}
	if msg == nil || !isObject(msg) {
		return ErrInvalidParams.WithMessage(`"message" must be an object`)
	}
	var m [5][]byte
	if err := pickStrict(msg, messageKeys, m[:], 0); err != nil {
		return invalid(ErrInvalidParams, err)
	}
	if e := firstErr(
		op.setString(&op.MessageID, m[0], "message.messageId"),
		op.setString(&op.TaskID, m[1], "message.taskId"),
		op.setString(&op.ContextID, m[2], "message.contextId"),
	); e != nil {
		return e
	}
	refs, err := jsonStrings(m[3], "message.referenceTaskIds")
	if err != nil {
		return ErrInvalidParams.WithMessage(err.Error())
	}
	for _, r := range refs {
		if r == "" {
			return ErrInvalidParams.WithMessage("message.referenceTaskIds holds an empty id")
		}
		if e := checkID(r, "message.referenceTaskIds"); e != nil {
			return e
		}
	}
	op.ReferenceTaskIDs = refs
	// The push config, under any of pushSpellings, in every version.
	push := v[sendPushAt:]
	if conf != nil {
		inConf, e := readConfiguration(conf)
		if e != nil {
			return e
		}
		push = append(push, inConf...)
	}
	for _, p := range push {
		if p == nil {
			continue
		}
		if op.PushConfig != nil {
			return ErrInvalidParams.WithMessage("the request names two push notification configs")
		}
		op.PushConfig = p
	}
	if op.Version == VLegacy {
		// Legacy clients choose the task id and group by sessionId.
		var id, session string
		if e := firstErr(op.setString(&id, v[3], "id"), op.setString(&session, v[4], "sessionId")); e != nil {
			return e
		}
		if id == "" {
			return ErrInvalidParams.WithMessage(`"id" (the task id) is required`)
		}
		op.TaskID, op.ContextID = id, session
		return nil
	}
	if op.MessageID == "" {
		return ErrInvalidParams.WithMessage("message.messageId is required")
	}
	return nil
}

// readConfiguration checks a send's configuration against
// configurationKeys, refusing any other member (it could be a push config
// under a name the gateway does not know, which the agent would act on
// unchecked), and returns the raw push configs it holds, nil where absent.
func readConfiguration(conf []byte) ([][]byte, *Error) {
	if !isObject(conf) {
		return nil, ErrInvalidParams.WithMessage(`"configuration" must be an object`)
	}
	out := make([][]byte, len(configurationKeys))
	if err := pickStrict(conf, configurationKeys, out, knownOnly); err != nil {
		return nil, invalidIn(err, "configuration")
	}
	return out[len(configKeys):], nil
}

// validate checks what every method needs once the ids are read.
func (op *Operation) validate() *Error {
	if op.Method.TaskScoped() && op.TaskID == "" {
		return ErrInvalidParams.WithMessage("the task id is required")
	}
	// 0.3 lets a get name only the task (its single config); 1.0 and every
	// delete name the config.
	if op.PushConfigID == "" && (op.Method == MethodPushConfigDelete && op.Version != VLegacy || op.Method == MethodPushConfigGet && op.Version == V10) {
		return ErrInvalidParams.WithMessage("the push notification config id is required")
	}
	if op.PushConfig != nil {
		if !isObject(op.PushConfig) {
			return ErrInvalidParams.WithMessage("the push notification config must be an object")
		}
		return checkPushConfigMembers(op.PushConfig)
	}
	return nil
}

func (op *Operation) setString(dst *string, raw []byte, name string) *Error {
	s, err := jsonString(raw, name)
	if err != nil {
		return ErrInvalidParams.WithMessage(err.Error())
	}
	if e := checkID(s, name); e != nil {
		return e
	}
	if s != "" {
		*dst = s
	}
	return nil
}

// checkID refuses ids the gateway could read differently from an agent:
// over-long ones, and ones that are not clean UTF-8 (decoders replace bad
// bytes and lone surrogates with U+FFFD in different ways, so two distinct
// ids on the wire could name one task at the agent).
func checkID(s, name string) *Error {
	if len(s) > MaxIDLength {
		return ErrInvalidParams.WithMessage(name + " is longer than the gateway accepts")
	}
	if !utf8.ValidString(s) || strings.ContainsRune(s, utf8.RuneError) {
		return ErrInvalidParams.WithMessage(name + " is not valid UTF-8")
	}
	return nil
}

func invalid(base *Error, err error) *Error {
	var amb *ambiguityError
	var bad *badKeyError
	var unknown *unknownMemberError
	if errors.As(err, &amb) || errors.As(err, &bad) || errors.As(err, &unknown) {
		return base.WithMessage(err.Error())
	}
	return base.WithMessage(base.Message + ": " + err.Error())
}

// invalidIn is invalid as InvalidParams, saying in which object.
func invalidIn(err error, where string) *Error {
	e := invalid(ErrInvalidParams, err)
	e.Message = where + ": " + e.Message
	return e
}

func firstErr(errs ...*Error) *Error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// restRoute is one row of the HTTP+JSON path table: the segments after the
// optional tenant, where "{id}" and "{cfg}" are variables and ":verb"
// suffixes are matched on the task id segment.
type restRoute struct {
	httpMethod string
	pattern    []string
	verb       string
	method     Method
}

// restPrefix03 is the segment 0.3 puts every path under.
const restPrefix03 = "v1"

// restRoutes is the one table of HTTP+JSON paths, which both classifies
// requests and spells the gateway's own (1.0 form; 0.3 puts the same
// paths under /v1/, and names the extended card /v1/card).
var restRoutes = []restRoute{
	{http.MethodPost, []string{"message:send"}, "", MethodSend},
	{http.MethodPost, []string{"message:stream"}, "", MethodStream},
	{http.MethodGet, []string{"tasks"}, "", MethodListTasks},
	{http.MethodGet, []string{"tasks", "{id}"}, "", MethodGetTask},
	{http.MethodPost, []string{"tasks", "{id}"}, "cancel", MethodCancelTask},
	{http.MethodGet, []string{"tasks", "{id}"}, "subscribe", MethodSubscribe},
	{http.MethodPost, []string{"tasks", "{id}"}, "subscribe", MethodSubscribe},
	{http.MethodPost, []string{"tasks", "{id}", "pushNotificationConfigs"}, "", MethodPushConfigSet},
	{http.MethodGet, []string{"tasks", "{id}", "pushNotificationConfigs"}, "", MethodPushConfigList},
	{http.MethodGet, []string{"tasks", "{id}", "pushNotificationConfigs", "{cfg}"}, "", MethodPushConfigGet},
	{http.MethodDelete, []string{"tasks", "{id}", "pushNotificationConfigs", "{cfg}"}, "", MethodPushConfigDelete},
	{http.MethodGet, []string{"extendedAgentCard"}, "", MethodExtendedCard},
}

// restPatterns03 are the 0.3 paths (below /v1/) that differ from 1.0's;
// 0.3 callers are also served at the 1.0 one (/v1/extendedAgentCard).
var restPatterns03 = map[Method][]string{MethodExtendedCard: {"card"}}

// patternIn is r's path pattern in version v.
func (r *restRoute) patternIn(v Version) []string {
	if p, ok := restPatterns03[r.method]; ok && v != V10 {
		return p
	}
	return r.pattern
}

// RESTPath returns the HTTP+JSON path of m for version v, with the task
// and config ids filled in. Used when the gateway calls an agent itself.
func RESTPath(m Method, v Version, taskID, configID string) (httpMethod, path string) {
	for _, r := range restRoutes {
		if r.method != m {
			continue
		}
		pattern := r.patternIn(v)
		segs := make([]string, 0, len(pattern)+1)
		if v != V10 {
			segs = append(segs, restPrefix03)
		}
		for _, p := range pattern {
			switch p {
			case "{id}":
				p = url.PathEscape(taskID)
				if r.verb != "" {
					p += ":" + r.verb
				}
			case "{cfg}":
				p = url.PathEscape(configID)
			}
			segs = append(segs, p)
		}
		return r.httpMethod, "/" + strings.Join(segs, "/")
	}
	return "", ""
}

// ClassifyREST reads an HTTP+JSON request: path is the escaped path below
// the agent's REST base ("/tasks/abc:cancel"), body the request body.
func ClassifyREST(httpMethod, path string, query url.Values, body []byte, version Version, explicit bool) (*Operation, *Error) {
	op := &Operation{Binding: BindingREST, Version: RESTPathVersion(path, version, explicit), VersionExplicit: explicit}
	segs, ok := splitPath(path)
	if !ok {
		return op, ErrInvalidRequest.WithMessage("malformed path")
	}
	line, matched := matchRESTLine(httpMethod, segs, op.Version)
	if !matched {
		return op, ErrMethodNotFound.WithMessage("no A2A operation at " + httpMethod + " " + quoteClip(path))
	}
	op.Method, op.Tenant, op.TaskID, op.PushConfigID = line.method, line.tenant, line.taskID, line.configID
	for _, s := range []string{op.Tenant, op.TaskID, op.PushConfigID} {
		if e := checkID(s, "an id in the path"); e != nil {
			return op, e
		}
	}
	if op.Method == MethodListTasks {
		// Frameworks disagree on repeated parameters (first, last, array)
		// and some read the snake_case name: one value, once, or refuse.
		vals := append(query["contextId"], query["context_id"]...)
		if len(vals) > 1 {
			return op, ErrInvalidParams.WithMessage("contextId is given more than once")
		}
		if len(vals) == 1 {
			if e := checkID(vals[0], "contextId"); e != nil {
				return op, e
			}
			op.ContextID = vals[0]
		}
		op.PageSize, op.PageToken = query.Get("pageSize"), query.Get("pageToken")
	}
	if len(body) > 0 && skipSpace(body, 0) < len(body) {
		if !json.Valid(body) {
			return op, ErrParse
		}
		if !isObject(body) {
			return op, ErrInvalidRequest.WithMessage("the request body must be a JSON object")
		}
		pathTenant := op.Tenant
		if e := op.readParams(body); e != nil {
			return op, e
		}
		if pathTenant != "" && op.Tenant != pathTenant {
			return op, ErrInvalidParams.WithMessage("the tenant in the body differs from the one in the path")
		}
	} else if op.Method == MethodSend || op.Method == MethodStream || op.Method == MethodPushConfigSet {
		return op, ErrInvalidRequest.WithMessage("a JSON request body is required")
	}
	return op, op.validate()
}

// RESTPathVersion is the version of a REST call to path (escaped, below the
// agent's REST base) with negotiated version v: the one the caller names,
// else 0.3 under /v1/ and 1.0 elsewhere, because the paths outside /v1/
// exist only in the 1.0 binding. It needs no body, so errors raised before
// the body is read take the caller's shape too.
func RESTPathVersion(path string, v Version, explicit bool) Version {
	if explicit {
		return v
	}
	first, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	if s, err := url.PathUnescape(first); err == nil && s == restPrefix03 {
		return V03
	}
	return V10
}

// restLine is what an HTTP+JSON request line names.
type restLine struct {
	method                   Method
	tenant, taskID, configID string
}

// matchRESTLine reads the unescaped segments of a path in version v: 0.3
// puts the routes under /v1/ and names the extended card /v1/card; 1.0
// allows every route under /{tenant}/.
func matchRESTLine(httpMethod string, segs []string, v Version) (restLine, bool) {
	if len(segs) > 0 && segs[0] == restPrefix03 && v == V03 {
		segs = segs[1:]
		for _, r := range restRoutes {
			if p, ok := restPatterns03[r.method]; ok && slices.Equal(segs, p) {
				segs = r.pattern
			}
		}
	}
	route, taskID, cfgID, matched := matchREST(httpMethod, segs)
	tenant := ""
	if !matched && len(segs) > 1 && v == V10 {
		route, taskID, cfgID, matched = matchREST(httpMethod, segs[1:])
		tenant = segs[0]
	}
	return restLine{route.method, tenant, taskID, cfgID}, matched
}

// readRESTLine reads an escaped path as ClassifyREST does for a caller
// that named version v, and fails where one that did not would read the
// path as another version's (a 1.0 tenant "v1").
func readRESTLine(httpMethod, path string, v Version) (restLine, bool) {
	if RESTPathVersion(path, v, false) != v {
		return restLine{}, false
	}
	segs, ok := splitPath(path)
	if !ok {
		return restLine{}, false
	}
	return matchRESTLine(httpMethod, segs, v)
}

func matchREST(httpMethod string, segs []string) (r restRoute, taskID, cfgID string, ok bool) {
	for _, r := range restRoutes {
		if r.httpMethod != httpMethod || len(r.pattern) != len(segs) {
			continue
		}
		taskID, cfgID, ok = "", "", true
		for i, p := range r.pattern {
			s := segs[i]
			switch p {
			case "{id}":
				id, verb := s, ""
				if j := strings.LastIndexByte(s, ':'); j >= 0 && (s[j+1:] == "cancel" || s[j+1:] == "subscribe") {
					id, verb = s[:j], s[j+1:]
				}
				ok = verb == r.verb && id != ""
				taskID = id
			case "{cfg}":
				ok = s != ""
				cfgID = s
			default:
				ok = s == p
			}
			if !ok {
				break
			}
		}
		if ok {
			return r, taskID, cfgID, true
		}
	}
	return restRoute{}, "", "", false
}

// splitPath splits an escaped path into unescaped segments. Paths that an
// agent could read differently from the gateway are refused: empty, "." and
// ".." segments, encoded slashes and backslashes.
func splitPath(escaped string) ([]string, bool) {
	escaped = strings.TrimPrefix(escaped, "/")
	if escaped == "" {
		return nil, true
	}
	raw := strings.Split(strings.TrimSuffix(escaped, "/"), "/")
	segs := make([]string, len(raw))
	for i, r := range raw {
		s, err := url.PathUnescape(r)
		// An encoded ':' would be a verb separator here and part of the id
		// to other routers.
		if err != nil || s == "" || s == "." || s == ".." || strings.ContainsAny(s, "/\\") || strings.Contains(strings.ToUpper(r), "%3A") {
			return nil, false
		}
		segs[i] = s
	}
	return segs, true
}
