package a2a

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"
)

// sendShape is a send in one version and binding, with the push config
// (or any other member) spliced into params or params.configuration.
type sendShape struct {
	name    string
	version Version
	binding Binding
	// params builds the send's params (the REST body) around top, which is
	// added to params, and conf, added to configuration.
	params func(top, conf string) string
}

func sendShapes() []sendShape {
	msg03 := `{"kind":"message","messageId":"m-1","role":"user","parts":[{"kind":"text","text":"hi"}]}`
	msg10 := `{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hi"}]}`
	proto03 := `{"messageId":"m-1","role":"ROLE_USER","content":[{"text":"hi"}]}`
	legacy := `{"role":"user","parts":[{"type":"text","text":"hi"}]}`
	join := func(parts ...string) string {
		var out []string
		for _, p := range parts {
			if p != "" {
				out = append(out, p)
			}
		}
		return strings.Join(out, ",")
	}
	around := func(head, msg, confHead string) func(top, conf string) string {
		return func(top, conf string) string {
			return `{` + join(head, `"message":`+msg, top, `"configuration":{`+join(confHead, conf)+`}`) + `}`
		}
	}
	return []sendShape{
		{"legacy JSON-RPC", VLegacy, BindingJSONRPC, around(`"id":"task-l"`, legacy, "")},
		{"0.3 JSON-RPC", V03, BindingJSONRPC, around("", msg03, `"blocking":true`)},
		{"0.3 HTTP+JSON", V03, BindingREST, around("", proto03, `"acceptedOutputModes":["text/plain"]`)},
		{"1.0 JSON-RPC", V10, BindingJSONRPC, around(`"tenant":"acme"`, msg10, `"returnImmediately":true`)},
		{"1.0 HTTP+JSON", V10, BindingREST, around("", msg10, `"historyLength":3`)},
	}
}

// classifySend classifies params as the send of shape sh; body is what the
// gateway received.
func classifySend(sh sendShape, params string) (body []byte, op *Operation, e *Error) {
	if sh.binding == BindingREST {
		path := "/message:send"
		if sh.version == V03 {
			path = "/v1/message:send"
		}
		body = []byte(params)
		op, e = ClassifyREST(http.MethodPost, path, nil, body, sh.version, true)
		return body, op, e
	}
	body = []byte(rpcBody(`"r"`, RPCMethodName(MethodSend, sh.version), params))
	op, e = ClassifyRPC(body, sh.version, sh.version != VLegacy)
	return body, op, e
}

// pushSpellingPlaces is every way a push config can be written into a
// send: each spelling of the table in its camelCase and snake_case form,
// escaped, and in the other place (params for configuration's spellings).
func pushSpellingPlaces() []struct {
	label     string
	top, conf bool
	key       string
} {
	type place = struct {
		label     string
		top, conf bool
		key       string
	}
	var out []place
	for _, sp := range pushSpellings {
		for _, key := range []string{sp.member.name, sp.member.alias, fmt.Sprintf(`\u%04x`, sp.member.name[0]) + sp.member.name[1:]} {
			p := place{label: key + " (" + sp.version.String() + " " + bindingName(sp.binding) + ")", key: key}
			p.conf, p.top = sp.inConfiguration, !sp.inConfiguration
			out = append(out, p)
		}
	}
	return out
}

func bindingName(b Binding) string {
	if b == 0 {
		return "both bindings"
	}
	return b.String()
}

// Every spelling of an inline push config, in every version and binding,
// is found, handed to the push stage and taken out of the forwarded body
// like the canonical one; the body without it carries no config at all.
func TestPushSpellingsAreReadAndStrippedEverywhere(t *testing.T) {
	const cfg = `{"url":"http://127.0.0.1:19101/x","token":"t"}`
	for _, sh := range sendShapes() {
		for _, pl := range pushSpellingPlaces() {
			t.Run(sh.name+"/"+pl.label, func(t *testing.T) {
				member := `"` + pl.key + `":` + cfg
				top, conf := "", ""
				if pl.top {
					top = member
				} else {
					conf = member
				}
				body, op, e := classifySend(sh, sh.params(top, conf))
				if e != nil {
					t.Fatalf("refused: %v", e)
				}
				if string(op.PushConfig) != cfg {
					t.Fatalf("PushConfig = %q, want %s", op.PushConfig, cfg)
				}
				stripped, err := StripPushConfig(body, sh.binding)
				if err != nil {
					t.Fatal(err)
				}
				want, _, _ := classifySend(sh, sh.params("", ""))
				if string(stripped) != string(want) {
					t.Fatalf("stripped body\n got %s\nwant %s", stripped, want)
				}
				if strings.Contains(string(stripped), "127.0.0.1") {
					t.Fatalf("the URL survived: %s", stripped)
				}
			})
		}
	}
}

// The canonical spelling of each version and binding is in the table.
func TestPushSpellingsCoverEveryDialect(t *testing.T) {
	for _, want := range []struct {
		v    Version
		b    Binding
		name string
	}{
		{VLegacy, BindingJSONRPC, "pushNotification"},
		{V03, BindingJSONRPC, "pushNotificationConfig"},
		{V03, BindingREST, "pushNotification"},
		{V10, BindingJSONRPC, "taskPushNotificationConfig"},
		{V10, BindingREST, "taskPushNotificationConfig"},
	} {
		found := false
		for _, sp := range pushSpellings {
			if sp.version == want.v && (sp.binding == want.b || sp.binding == 0) && sp.member.name == want.name {
				found = true
			}
		}
		if !found {
			t.Errorf("no spelling %s for %v %v", want.name, want.v, want.b)
		}
	}
}

// Two push configs in one send, in any two spellings or places, are
// refused: agents would disagree about which one counts.
func TestPushSpellingsTwiceRefused(t *testing.T) {
	places := pushSpellingPlaces()
	for _, sh := range sendShapes() {
		for i, a := range places {
			for _, b := range places[i+1:] {
				var top, conf []string
				for j, pl := range []struct {
					label     string
					top, conf bool
					key       string
				}{a, b} {
					m := `"` + pl.key + `":{"url":"https://h` + string(rune('0'+j)) + `.example/x"}`
					if pl.top {
						top = append(top, m)
					} else {
						conf = append(conf, m)
					}
				}
				_, op, e := classifySend(sh, sh.params(strings.Join(top, ","), strings.Join(conf, ",")))
				if e == nil {
					t.Errorf("%s: %s and %s accepted, PushConfig %s", sh.name, a.label, b.label, op.PushConfig)
				} else if e.Code != ErrInvalidParams.Code {
					t.Errorf("%s: %s and %s: error %d %q, want InvalidParams", sh.name, a.label, b.label, e.Code, e.Message)
				}
			}
		}
	}
}

// configuration admits only the members the protocol defines; anything
// else could be a push config under a name the gateway does not check.
func TestConfigurationAllowlist(t *testing.T) {
	for _, sh := range sendShapes() {
		for _, m := range []string{
			`"pushNotifications":{"url":"https://x.example/"}`,
			`"webhook":"https://x.example/"`,
			`"pushConfig":{"url":"https://x.example/"}`,
			`"x-future-field":1`,
			`"callbackUrl":"https://x.example/"`,
			`"metadata":{"url":"https://x.example/"}`,
		} {
			_, _, e := classifySend(sh, sh.params("", m))
			if e == nil || e.Code != ErrInvalidParams.Code {
				t.Errorf("%s: configuration member %s: %v, want InvalidParams", sh.name, m, e)
				continue
			}
			name, _, _ := strings.Cut(strings.Trim(m, `"`), `"`)
			if !strings.Contains(e.Message, name) {
				t.Errorf("%s: the refusal %q does not name %s", sh.name, e.Message, name)
			}
		}
		for _, m := range []struct{ member, name string }{
			{`"acceptedOutputModes":["text/plain"]`, "acceptedOutputModes"}, {`"accepted_output_modes":[]`, "acceptedOutputModes"},
			{`"historyLength":0`, "historyLength"}, {`"history_length":null`, "historyLength"},
			{`"blocking":false`, "blocking"}, {`"returnImmediately":true`, "returnImmediately"},
		} {
			if strings.Contains(sh.params("", ""), m.name) {
				continue // the shape has it already
			}
			if _, _, e := classifySend(sh, sh.params("", m.member)); e != nil {
				t.Errorf("%s: configuration member %s refused: %v", sh.name, m, e)
			}
		}
	}
}

// A push config, inline or registered, admits only the members the gateway
// reads; its authentication too.
func TestPushConfigMembersAllowlist(t *testing.T) {
	bad := []string{
		`{"url":"https://x.example/","callback":"http://127.0.0.1/"}`,
		`{"url":"https://x.example/","pushNotificationConfig":{"url":"http://127.0.0.1/"}}`,
		`{"url":"https://x.example/","authentication":{"scheme":"Bearer","credentials":"c","url":"http://127.0.0.1/"}}`,
		`{"url":"https://x.example/","authentication":"Bearer"}`,
		`{"url":"https://x.example/","URL":"http://127.0.0.1/"}`,
		`{"url":"https://x.example/","url ":"http://127.0.0.1/"}`,
		`{"url":"https://x.example/","ｕｒｌ":"http://127.0.0.1/"}`,
	}
	for _, cfg := range bad {
		for _, sh := range sendShapes() {
			key := "taskPushNotificationConfig"
			if sh.version == V03 {
				key = "pushNotificationConfig"
			}
			if _, _, e := classifySend(sh, sh.params("", `"`+key+`":`+cfg)); e == nil || e.Code != ErrInvalidParams.Code {
				t.Errorf("%s inline %s: %v, want InvalidParams", sh.name, cfg, e)
			}
		}
		flat := `{"taskId":"task-1",` + cfg[1:]
		if _, e := ClassifyRPC([]byte(rpcBody(`1`, "CreateTaskPushNotificationConfig", flat)), V10, true); e == nil || e.Code != ErrInvalidParams.Code {
			t.Errorf("1.0 create %s: %v, want InvalidParams", flat, e)
		}
		if _, e := ClassifyREST(http.MethodPost, "/tasks/task-1/pushNotificationConfigs", nil, []byte(cfg), V10, true); e == nil || e.Code != ErrInvalidParams.Code {
			t.Errorf("1.0 REST create %s: %v, want InvalidParams", cfg, e)
		}
		wrapped := `{"taskId":"task-1","pushNotificationConfig":` + cfg + `}`
		if _, e := ClassifyRPC([]byte(rpcBody(`1`, "tasks/pushNotificationConfig/set", wrapped)), V03, false); e == nil || e.Code != ErrInvalidParams.Code {
			t.Errorf("0.3 set %s: %v, want InvalidParams", wrapped, e)
		}
	}
	// The 0.3 and legacy wrappers are allowlisted as well.
	for _, tc := range []struct{ method, params string }{
		{"tasks/pushNotificationConfig/set", `{"taskId":"t","pushNotificationConfig":{"url":"https://x.example/"},"configuration":{"url":"http://127.0.0.1/"}}`},
		{"tasks/pushNotification/set", `{"id":"t","pushNotificationConfig":{"url":"https://x.example/"},"pushNotification":{"url":"http://127.0.0.1/"}}`},
	} {
		if _, e := ClassifyRPC([]byte(rpcBody(`1`, tc.method, tc.params)), V03, false); e == nil || e.Code != ErrInvalidParams.Code {
			t.Errorf("%s %s: %v, want InvalidParams", tc.method, tc.params, e)
		}
	}
	// Over 0.3 HTTP+JSON, name carries the task id too (SDKs read it).
	for _, body := range []string{
		`{"name":"tasks/t/pushNotificationConfigs/c","pushNotificationConfig":{"url":"https://x.example/"},"x":1}`,
		`{"name":"tasks/victim/pushNotificationConfigs/c","pushNotificationConfig":{"url":"https://x.example/"}}`,
		`{"name":"tasks/t/pushNotificationConfigs/c/../../victim","pushNotificationConfig":{"url":"https://x.example/"}}`,
		`{"name":"tasks/t","pushNotificationConfig":{"url":"https://x.example/"}}`,
		`{"name":7,"pushNotificationConfig":{"url":"https://x.example/"}}`,
		`{"id":"victim","pushNotificationConfig":{"url":"https://x.example/"}}`,
	} {
		if _, e := ClassifyREST(http.MethodPost, "/v1/tasks/t/pushNotificationConfigs", nil, []byte(body), V03, false); e == nil || e.Code != ErrInvalidParams.Code {
			t.Errorf("0.3 REST create %s: %v, want InvalidParams", body, e)
		}
	}
	for _, body := range []string{
		`{"name":"tasks/t/pushNotificationConfigs/c","pushNotificationConfig":{"url":"https://x.example/"}}`,
		`{"name":"tasks/t/pushNotificationConfigs/","pushNotificationConfig":{"url":"https://x.example/"}}`,
	} {
		if _, e := ClassifyREST(http.MethodPost, "/v1/tasks/t/pushNotificationConfigs", nil, []byte(body), V03, false); e != nil {
			t.Errorf("0.3 REST create %s refused: %v", body, e)
		}
	}
	// Over 0.3 JSON-RPC, an id next to taskId could name a task to an agent
	// that also speaks the legacy dialect.
	if _, e := ClassifyRPC([]byte(rpcBody(`1`, "tasks/pushNotificationConfig/set", `{"taskId":"t","id":"victim","pushNotificationConfig":{"url":"https://x.example/"}}`)), V03, false); e == nil || e.Code != ErrInvalidParams.Code {
		t.Errorf("0.3 set with taskId and id: %v, want InvalidParams", e)
	}
}

// badKeyShapes are member names that parsers read differently whatever
// the name: name with something some decoders drop, trim or replace.
func badKeyShapes(name string) map[string]string {
	return map[string]string{
		"NUL suffix":            name + `\u0000`,
		"escaped tab":           name + `\t`,
		"escaped newline":       name + `\n`,
		"DEL":                   name + "\x7f",
		"C1 control":            name + `\u0085`,
		"trailing space":        name + " ",
		"leading space":         " " + name,
		"no-break space":        name + `\u00a0`,
		"ideographic space":     `\u3000` + name,
		"invalid UTF-8":         name + "\xff",
		"truncated UTF-8":       name + "\xc3",
		"lone surrogate":        name + `\ud800`,
		"replacement character": name + `\ufffd`,
		"zero-width space":      `\u200b` + name,
		"zero-width joiner":     name[:1] + `\u200d` + name[1:],
		"byte order mark":       `\ufeff` + name,
		"bidi override":         name + `\u202e`,
	}
}

// lookalikeKeyShapes are names that fold to name: refused where name is a
// member the gateway reads, since some agents fold them.
func lookalikeKeyShapes(name string) map[string]string {
	return map[string]string{
		"fullwidth":              fullwidth(name),
		"fullwidth first letter": fullwidth(name[:1]) + name[1:],
		"upper case":             strings.ToUpper(name),
	}
}

func fullwidth(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(r + 0xFEE0)
	}
	return b.String()
}

// strictObjects is every object the classifier walks, as a request with a
// hole ("@K" for a member name, "@V" for a string naming another task) in
// that object. Each request is accepted with @K = member; known says
// whether the classifier reads that member.
func strictObjects() []strictObject {
	return []strictObject{
		{"envelope", "id", true, false, V03, `{"jsonrpc":"2.0","@K":1,"method":"tasks/get","params":{"id":"task-1"}}`},
		{"envelope (unknown member)", "x-extra", false, false, V03, `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"task-1"},"@K":"@V"}`},
		{"get params", "id", true, false, V10, `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"@K":"@V"}}`},
		{"list params", "contextId", true, false, V10, `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"@K":"@V"}}`},
		{"send params", "tenant", true, false, V10, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m"},"@K":"@V"}}`},
		{"send params (unknown member)", "metadata", false, false, V10, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m"},"@K":"@V"}}`},
		{"message", "taskId", true, false, V03, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"messageId":"m","@K":"@V"}}}`},
		{"message (unknown member)", "extensions", false, false, V03, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"messageId":"m","@K":"@V"}}}`},
		{"REST send body", "message", true, true, V10, `{"@K":{"messageId":"m","taskId":"@V"}}`},
		{"REST message", "taskId", true, true, V10, `{"message":{"messageId":"m","@K":"@V"}}`},
		{"configuration", "pushNotificationConfig", true, false, V03, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"messageId":"m"},"configuration":{"@K":{"url":"https://@V.example/"}}}}`},
		{"push config", "url", true, false, V10, `{"jsonrpc":"2.0","id":1,"method":"CreateTaskPushNotificationConfig","params":{"taskId":"task-1","@K":"https://@V.example/"}}`},
		{"push config authentication", "credentials", true, false, V10, `{"jsonrpc":"2.0","id":1,"method":"CreateTaskPushNotificationConfig","params":{"taskId":"task-1","url":"https://x.example/","authentication":{"scheme":"Basic","@K":"@V"}}}`},
		{"0.3 push config wrapper", "taskId", true, false, V03, `{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/set","params":{"@K":"@V","pushNotificationConfig":{"url":"https://x.example/"}}}`},
	}
}

type strictObject struct {
	name, member string
	known, rest  bool
	version      Version
	body         string
}

// readOf is what an operation tells the gateway, its push config parsed.
func readOf(op *Operation) string {
	c := *op
	c.PushConfig = nil
	pc, _ := ParsePushConfig(op.PushConfig)
	return fmt.Sprintf("%+v %+v", c, pc)
}

func (obj strictObject) classify(key string) (*Operation, *Error) {
	body := strings.NewReplacer("@K", key, "@V", "task-victim").Replace(obj.body)
	if obj.rest {
		return ClassifyREST(http.MethodPost, "/message:send", nil, []byte(body), obj.version, true)
	}
	return ClassifyRPC([]byte(body), obj.version, obj.version == V10)
}

// Every member name that decoders could read differently, in every object
// the classifier walks, known member or not, is refused; so are lookalikes
// of the members it reads. The plain name in the same place is accepted,
// and an escaped spelling of it is read as the name itself.
func TestAmbiguousMemberNamesRefused(t *testing.T) {
	for _, obj := range strictObjects() {
		plain, e := obj.classify(obj.member)
		if e != nil {
			t.Errorf("%s: the plain member %q refused: %v", obj.name, obj.member, e)
			continue
		}
		escaped, e := obj.classify(fmt.Sprintf(`\u%04x`, obj.member[0]) + obj.member[1:])
		if e != nil || readOf(escaped) != readOf(plain) {
			t.Errorf("%s: the escaped member read as %s, %v; the plain one as %s", obj.name, readOf(escaped), e, readOf(plain))
		}
		refused := badKeyShapes(obj.member)
		if obj.known {
			for k, v := range lookalikeKeyShapes(obj.member) {
				refused[k] = v
			}
		}
		for shape, key := range refused {
			_, e := obj.classify(key)
			if e == nil {
				t.Errorf("%s: %s (%q) accepted", obj.name, shape, key)
				continue
			}
			if e.Code != ErrInvalidParams.Code && e.Code != ErrInvalidRequest.Code {
				t.Errorf("%s: %s: error %d %q, want InvalidParams or InvalidRequest", obj.name, shape, e.Code, e.Message)
			}
			if !json.Valid(e.RPCErrorBody(V10, nil)) || !utf8.ValidString(e.Message) {
				t.Errorf("%s: %s: the error does not encode: %q", obj.name, shape, e.Message)
			}
		}
	}
}

func TestCheckRequestContentType(t *testing.T) {
	for _, tc := range []struct {
		values []string
		body   bool
		ok     bool
	}{
		{[]string{"application/json"}, true, true},
		{[]string{"application/a2a+json"}, true, true},
		{[]string{"Application/JSON; charset=UTF-8"}, true, true},
		{[]string{`application/json; charset="utf-8"`}, true, true},
		{[]string{"application/a2a+json;charset=utf-8"}, true, true},
		{nil, false, true},
		{[]string{"application/json"}, false, true},

		{nil, true, false},
		{[]string{""}, true, false},
		{[]string{"text/plain"}, true, false},
		{[]string{"text/plain; charset=utf-8"}, true, false},
		{[]string{"application/x-www-form-urlencoded"}, true, false},
		{[]string{"multipart/form-data; boundary=x"}, true, false},
		{[]string{"application/json; charset=utf-16"}, true, false},
		{[]string{"application/json; charset=utf-16le"}, true, false},
		{[]string{"application/json; charset=iso-8859-1"}, true, false},
		{[]string{"application/json; charset=utf-8; charset=utf-16"}, true, false},
		{[]string{"application/json; boundary=x"}, true, false},
		{[]string{"application/json", "text/plain"}, true, false},
		{[]string{"application/json", "application/json"}, true, false},
		{[]string{"application/json, text/plain"}, true, false},
		{[]string{"application/jsonx"}, true, false},
		{[]string{"application/*"}, true, false},
		{[]string{"application/json-seq"}, true, false},
		{[]string{"text/plain"}, false, false},
	} {
		h := http.Header{}
		for _, v := range tc.values {
			h.Add("Content-Type", v)
		}
		e := CheckRequestContentType(h, tc.body)
		if tc.ok != (e == nil) {
			t.Errorf("%q (body %v): %v, want accepted %v", tc.values, tc.body, e, tc.ok)
			continue
		}
		if e != nil && (e.Code != -32005 || e.HTTPStatus != http.StatusUnsupportedMediaType || e.Message == "") {
			t.Errorf("%q: error %+v, want ContentTypeNotSupported with HTTP 415", tc.values, e)
		}
	}
}
