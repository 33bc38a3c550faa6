package gateway_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
)

// oddMember is a member no re-encoder would write back as sent: Go's
// escapes "<", ">" and "&", others escape U+2028 or unescape "\/".
const oddMember = `"x-odd"	:  "a<b>&c` + "\u2028" + `\/d"`

// unusual rewrites a JSON body into an equivalent one that a decoder and
// encoder would not give back: members in reverse order, white space of
// every kind between tokens, "/" and "e" escaped in keys and strings,
// other characters as raw UTF-8, and oddMember first in the top object
// when odd is set.
func unusual(t *testing.T, body []byte, odd bool) []byte {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var out bytes.Buffer
	var value func(top bool)
	value = func(top bool) {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("reshape %s: %v", body, err)
		}
		switch v := tok.(type) {
		case json.Delim:
			closing := map[json.Delim]string{'{': "}", '[': "]"}[v]
			var items [][]byte
			for dec.More() {
				start := out.Len()
				if v == '{' {
					k, _ := dec.Token()
					oddString(&out, k.(string))
					out.WriteString(" :\n\t")
				}
				value(false)
				items = append(items, bytes.Clone(out.Bytes()[start:]))
				out.Truncate(start)
			}
			if _, err := dec.Token(); err != nil {
				t.Fatalf("reshape %s: %v", body, err)
			}
			if v == '{' {
				slices.Reverse(items)
				if top && odd {
					items = slices.Insert(items, 0, []byte(oddMember))
				}
			}
			out.WriteString(string(v) + "\r\n ")
			out.Write(bytes.Join(items, []byte(" ,\t")))
			out.WriteString("\n" + closing)
		case string:
			oddString(&out, v)
		case json.Number:
			out.WriteString(v.String())
		case bool:
			out.WriteString(map[bool]string{true: "true", false: "false"}[v])
		case nil:
			out.WriteString("null")
		}
	}
	value(true)
	return out.Bytes()
}

func oddString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '/':
			b.WriteString(`\/`)
		case r == 'e':
			b.WriteString(`\u0065`)
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			b.WriteString(`\u00` + "0123456789abcdef"[r>>4:r>>4+1] + "0123456789abcdef"[r&15:r&15+1])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

// TestForwardedBytesExact sends every operation of every version and
// binding that the gateway forwards unchanged, in bodies a re-encoding
// would change (key order, escapes, white space), and checks that the
// agent, a real server on loopback recording what it reads off the wire,
// receives the caller's exact bytes. ListTasks is among them: the gateway
// pages it (proxy/list) by splicing its paging into the caller's bytes, and
// a first page of the size it asks for leaves nothing to change.
func TestForwardedBytesExact(t *testing.T) {
	env := gwtest.Start(t)
	c := newCaller(t, env)
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(sink.Close)

	var cases []fwdCase
	cases = append(cases, v10Cases()...)
	cases = append(cases, v03Cases()...)
	cases = append(cases, legacyCases()...)
	sent := 0
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var task string
			if tc.fixture != noFixture {
				task = c.waitingTask(t)
			}
			if tc.fixture == pushFixture {
				c.pushConfig(t, task, fixtureConfig, sink.URL)
			}
			env.Agent.ResetRequests()
			rq := tc.request(c, task, sink.URL)
			if len(rq.body) > 0 {
				// A push config admits only the members the gateway knows.
				odd := rq.rpc || tc.method != a2a.MethodPushConfigSet
				rq.body = unusual(t, rq.body, odd)
				if odd && !strings.Contains(string(rq.body), `a<b>&c`) {
					t.Fatalf("reshaped body lacks the odd member: %s", rq.body)
				}
				sent++
			}
			body, events := c.exchange(t, rq, tc.answer)
			tc.check(t, task, sink.URL, body, events)
			got := env.Agent.Requests()
			if len(got) != 1 {
				t.Fatalf("the agent received %d requests, want 1", len(got))
			}
			if !bytes.Equal(got[0].Body, rq.body) {
				t.Fatalf("the body changed on the way:\n got %q\nwant %q", got[0].Body, rq.body)
			}
		})
	}
	if sent == 0 {
		t.Fatal("no case sent a body")
	}
}
