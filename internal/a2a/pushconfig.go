package a2a

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// PushConfig is a push-notification config as a client gives it, in any
// version: 1.0 TaskPushNotificationConfig (flat, authentication.scheme) or
// 0.3 PushNotificationConfig (authentication.schemes).
type PushConfig struct {
	ID, URL, Token, Scheme, Credentials string
}

type pushConfigWire struct {
	ID             string `json:"id"`
	URL            string `json:"url"`
	Token          string `json:"token"`
	Authentication *struct {
		Scheme      string   `json:"scheme"`
		Schemes     []string `json:"schemes"`
		Credentials string   `json:"credentials"`
	} `json:"authentication"`
}

// ParsePushConfig reads a config: raw is Operation.PushConfig, the body of
// a create or the config given inline with a send. 0.3 names one scheme
// or several; the first is the one used.
func ParsePushConfig(raw []byte) (PushConfig, *Error) {
	var w pushConfigWire
	if err := json.Unmarshal(raw, &w); err != nil {
		return PushConfig{}, ErrInvalidParams.WithMessage("the push notification config could not be read: it must be an object with a string url")
	}
	c := PushConfig{ID: w.ID, URL: w.URL, Token: w.Token}
	if a := w.Authentication; a != nil {
		c.Scheme, c.Credentials = a.Scheme, a.Credentials
		if c.Scheme == "" && len(a.Schemes) > 0 {
			c.Scheme = a.Schemes[0]
		}
	}
	if c.URL == "" {
		return PushConfig{}, ErrInvalidParams.WithMessage("the push notification config needs a url")
	}
	return c, nil
}

// PushConfigResult renders a stored config as version v and binding b
// answer a push-config create or get: 1.0 the flat
// TaskPushNotificationConfig; 0.3 {taskId, pushNotificationConfig} over
// JSON-RPC and the protobuf {name, pushNotificationConfig} over HTTP+JSON.
func PushConfigResult(v Version, b Binding, taskID string, c PushConfig) map[string]any {
	if v == V10 {
		out := map[string]any{"id": c.ID, "taskId": taskID, "url": c.URL}
		if c.Token != "" {
			out["token"] = c.Token
		}
		if c.Scheme != "" {
			auth := map[string]any{"scheme": c.Scheme}
			if c.Credentials != "" {
				auth["credentials"] = c.Credentials
			}
			out["authentication"] = auth
		}
		return out
	}
	inner := map[string]any{"id": c.ID, "url": c.URL}
	if c.Token != "" {
		inner["token"] = c.Token
	}
	if c.Scheme != "" {
		auth := map[string]any{"schemes": []string{c.Scheme}}
		if c.Credentials != "" {
			auth["credentials"] = c.Credentials
		}
		inner["authentication"] = auth
	}
	if b == BindingREST {
		return map[string]any{"name": "tasks/" + taskID + "/pushNotificationConfigs/" + c.ID, "pushNotificationConfig": inner}
	}
	return map[string]any{"taskId": taskID, "pushNotificationConfig": inner}
}

// PushConfigList renders the answer to a push-config list: 1.0 (and 0.3
// protobuf JSON) {configs, nextPageToken}, 0.3 JSON-RPC a bare array.
func PushConfigList(v Version, b Binding, taskID string, cs []PushConfig) any {
	list := make([]any, len(cs))
	for i, c := range cs {
		list[i] = PushConfigResult(v, b, taskID, c)
	}
	if v == V10 || b == BindingREST {
		return map[string]any{"configs": list, "nextPageToken": ""}
	}
	return list
}

// PushConfigDeleted is the JSON-RPC result of a push-config delete: 1.0
// an empty object (google.protobuf.Empty), 0.3 null. Over HTTP+JSON a
// delete answers 204 without a body.
func PushConfigDeleted(v Version) json.RawMessage {
	if v == V10 {
		return json.RawMessage("{}")
	}
	return json.RawMessage("null")
}

// pushSpelling is one member that carries a push config given with a
// send: in the send's params or in their configuration, and the version and
// binding whose specification names it so (0: both bindings).
type pushSpelling struct {
	inConfiguration bool
	member          member
	version         Version
	binding         Binding
}

// pushSpellings is every spelling of an inline push config (each also in
// its snake_case form, which protobuf JSON parsers accept). A send is read
// with all of them whatever version and binding it speaks, since an agent
// may accept another version's spelling; more than one in a request is
// refused, and the one present is checked and taken out like any other.
var pushSpellings = []pushSpelling{
	{false, members("pushNotification")[0], VLegacy, BindingJSONRPC},  // TaskSendParams.pushNotification
	{true, members("pushNotificationConfig")[0], V03, BindingJSONRPC}, // MessageSendConfiguration.pushNotificationConfig
	{true, members("pushNotification")[0], V03, BindingREST},          // SendMessageConfiguration.push_notification (a2a.v1)
	{true, members("taskPushNotificationConfig")[0], V10, 0},          // SendMessageConfiguration.task_push_notification_config
}

// configKeys are the members of a send's configuration other than its
// push config; the gateway forwards these and refuses any other. Clients
// mix 0.3's blocking and 1.0's returnImmediately, so both are accepted in
// either version: neither carries an id or a URL.
var configKeys = members("acceptedOutputModes", "historyLength", "blocking", "returnImmediately")

// configurationKeys is every member configuration admits: configKeys, then
// the push spellings.
var configurationKeys = append(slices.Clone(configKeys), pushSpellingsIn(true)...)

// pushSpellingsIn returns the push spellings of configuration, or of params.
func pushSpellingsIn(configuration bool) []member {
	var out []member
	for _, sp := range pushSpellings {
		if sp.inConfiguration == configuration {
			out = append(out, sp.member)
		}
	}
	return out
}

// The members of a push config the gateway reads or forwards, in any
// version: 1.0 adds tenant and taskId to the flat config, 0.3 names
// several authentication schemes.
var (
	pushConfigKeys = members("id", "url", "token", "authentication", "tenant", "taskId")
	pushAuthKeys   = members("scheme", "schemes", "credentials")
	// The members of a 0.3 or legacy push-config create around the config:
	// the task (over HTTP+JSON the path names it; name, or a taskId, must
	// agree), then the config.
	pushSetKeysRPC    = members("taskId", "pushNotificationConfig")
	pushSetKeysREST   = members("name", "pushNotificationConfig", "taskId")
	pushSetKeysLegacy = members("id", "pushNotificationConfig")
)

// checkPushConfigMembers refuses a push config with a member the gateway
// does not know: the agent must not be handed what the gateway did not check.
func checkPushConfigMembers(raw []byte) *Error {
	out := make([][]byte, len(pushConfigKeys))
	if err := pickStrict(raw, pushConfigKeys, out, knownOnly); err != nil {
		return invalidIn(err, "the push notification config")
	}
	auth := out[3]
	if auth == nil {
		return nil
	}
	if !isObject(auth) {
		return ErrInvalidParams.WithMessage("the push notification config's authentication must be an object")
	}
	if err := pickStrict(auth, pushAuthKeys, make([][]byte, len(pushAuthKeys)), knownOnly); err != nil {
		return invalidIn(err, "the push notification config's authentication")
	}
	return nil
}

// StripPushConfig removes the push config given inline with a send from
// body, in whichever spelling of pushSpellings it came (in params or
// params.configuration over JSON-RPC, at the top or in configuration over
// HTTP+JSON); every other byte stays as it was. body must have been
// classified (the members it reads are unambiguous); a body without one is
// returned as is.
func StripPushConfig(body []byte, b Binding) ([]byte, error) {
	var at [2]member
	for _, sp := range pushSpellings {
		path := at[:0]
		if b == BindingJSONRPC {
			path = append(path, paramsMember)
		}
		if sp.inConfiguration {
			path = append(path, configurationMember)
		}
		body = cutMember(body, path, sp.member)
	}
	return body, nil
}

// The members a push config is found below.
var (
	paramsMember        = members("params")[0]
	configurationMember = members("configuration")[0]
)

// CheckPushConfigText refuses config values that would corrupt the
// headers of a notification: control characters, and a scheme that is not
// an HTTP authentication scheme token.
func CheckPushConfigText(c PushConfig) *Error {
	for _, f := range []struct{ name, v string }{{"id", c.ID}, {"token", c.Token}, {"authentication credentials", c.Credentials}} {
		if strings.ContainsFunc(f.v, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }) {
			return ErrInvalidParams.WithMessage(fmt.Sprintf("the push notification config's %s holds a control character", f.name))
		}
	}
	if c.Scheme != "" && !isToken(c.Scheme) {
		return ErrInvalidParams.WithMessage("the push notification config's authentication scheme is not an HTTP authentication scheme")
	}
	if c.Credentials != "" && c.Scheme == "" {
		return ErrInvalidParams.WithMessage("the push notification config's authentication has credentials but no scheme")
	}
	if c.Credentials == "" && c.Scheme != "" && !strings.EqualFold(c.Scheme, "Bearer") {
		// "Bearer" alone asks for the sender's own token (the gateway's JWT);
		// any other scheme needs credentials to send.
		return ErrInvalidParams.WithMessage("the push notification config's authentication scheme " + quoteClip(c.Scheme) + " has no credentials")
	}
	return nil
}

// isToken accepts an RFC 9110 token.
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return s != ""
}
