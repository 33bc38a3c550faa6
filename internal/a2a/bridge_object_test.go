package a2a

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// bridgeDecode decodes a test object the way the bridge does.
func bridgeDecode(t testing.TB, s string) map[string]any {
	t.Helper()
	v, err := decodeJSON([]byte(s))
	if err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v.(map[string]any)
}

// sameJSON compares two JSON texts by value.
func sameJSON(t testing.TB, got []byte, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("result is not JSON: %v: %s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want is not JSON: %v: %s", err, want)
	}
	return reflect.DeepEqual(g, w)
}

func mustTranslate(t *testing.T, k objectKind, s string, from, to dialect) []byte {
	t.Helper()
	out, err := translateObject(k, bridgeDecode(t, s), from, to)
	if err != nil {
		t.Fatalf("%s -> %s: %v\n%s", from, to, err, s)
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The same objects in each dialect, written from the specifications.
// Every member is one both sides have, so each translates to the other.
var (
	brMessage10 = `{"messageId":"m-1","contextId":"ctx-1","taskId":"task-1","role":"ROLE_USER",
		"parts":[{"text":"hi","metadata":{"n":1}},{"raw":"AAEC","filename":"a.bin","mediaType":"application/octet-stream"},
		{"url":"https://files.example.com/a.pdf","filename":"a.pdf","mediaType":"application/pdf"},{"data":{"k":[1,2.50,"x"]}}],
		"metadata":{"big":12345678901234567890},"extensions":["https://ext.example.com/x"],"referenceTaskIds":["task-0"]}`
	brMessage03 = `{"kind":"message","messageId":"m-1","contextId":"ctx-1","taskId":"task-1","role":"user",
		"parts":[{"kind":"text","text":"hi","metadata":{"n":1}},{"kind":"file","file":{"bytes":"AAEC","name":"a.bin","mimeType":"application/octet-stream"}},
		{"kind":"file","file":{"uri":"https://files.example.com/a.pdf","name":"a.pdf","mimeType":"application/pdf"}},{"kind":"data","data":{"k":[1,2.50,"x"]}}],
		"metadata":{"big":12345678901234567890},"extensions":["https://ext.example.com/x"],"referenceTaskIds":["task-0"]}`
	// 0.3 protobuf JSON has no referenceTaskIds, part metadata or file
	// names.
	brMessage10ForProto = `{"messageId":"m-1","contextId":"ctx-1","taskId":"task-1","role":"ROLE_AGENT",
		"parts":[{"text":"hi"},{"raw":"AAEC","mediaType":"application/octet-stream"},
		{"url":"https://files.example.com/a.pdf","mediaType":"application/pdf"},{"data":{"k":[1,2.50,"x"]}}],
		"metadata":{"big":12345678901234567890},"extensions":["https://ext.example.com/x"]}`
	brMessage03Proto = `{"messageId":"m-1","contextId":"ctx-1","taskId":"task-1","role":"ROLE_AGENT",
		"content":[{"text":"hi"},{"file":{"fileWithBytes":"AAEC","mimeType":"application/octet-stream"}},
		{"file":{"fileWithUri":"https://files.example.com/a.pdf","mimeType":"application/pdf"}},{"data":{"data":{"k":[1,2.50,"x"]}}}],
		"metadata":{"big":12345678901234567890},"extensions":["https://ext.example.com/x"]}`
)

func TestTranslateMessage(t *testing.T) {
	cases := []struct {
		name     string
		a, b     string
		from, to dialect
	}{
		{"1.0 and 0.3 JSON-RPC", brMessage10, brMessage03, dialect10, dialect03},
		{"1.0 and 0.3 protobuf JSON", brMessage10ForProto, brMessage03Proto, dialect10, dialect03Proto},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := mustTranslate(t, objMessage, c.a, c.from, c.to); !sameJSON(t, got, c.b) {
				t.Errorf("%s -> %s:\n got %s\nwant %s", c.from, c.to, got, c.b)
			}
			if got := mustTranslate(t, objMessage, c.b, c.to, c.from); !sameJSON(t, got, c.a) {
				t.Errorf("%s -> %s:\n got %s\nwant %s", c.to, c.from, got, c.a)
			}
		})
	}
}

// Numbers reach the other side as they were written.
func TestTranslateKeepsNumbers(t *testing.T) {
	got := mustTranslate(t, objMessage, brMessage10, dialect10, dialect03)
	for _, n := range []string{"12345678901234567890", "2.50"} {
		if !strings.Contains(string(got), n) {
			t.Errorf("%s lost %s", got, n)
		}
	}
}

func TestTranslateMessageRefuses(t *testing.T) {
	cases := []struct {
		name     string
		in       string
		from, to dialect
		member   string
	}{
		{"unknown member", `{"messageId":"m","role":"ROLE_USER","parts":[],"color":"red"}`, dialect10, dialect03, "color"},
		{"0.3 name in 1.0", `{"messageId":"m","role":"ROLE_USER","content":[]}`, dialect10, dialect03, "content"},
		{"1.0 name in 0.3 proto", `{"messageId":"m","role":"ROLE_USER","parts":[]}`, dialect03Proto, dialect10, "parts"},
		{"other letter case", `{"messageID":"m","role":"ROLE_USER","parts":[]}`, dialect10, dialect03, "messageID"},
		{"references to 0.3 proto", `{"messageId":"m","role":"ROLE_USER","parts":[],"referenceTaskIds":["t"]}`, dialect10, dialect03Proto, "referenceTaskIds"},
		{"part metadata to 0.3 proto", `{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x","metadata":{"a":1}}]}`, dialect10, dialect03Proto, "metadata"},
		{"unspecified role to 0.3", `{"messageId":"m","role":"ROLE_UNSPECIFIED","parts":[]}`, dialect10, dialect03, "role"},
		{"role in another dialect", `{"messageId":"m","role":"user","parts":[]}`, dialect10, dialect03, "role"},
		{"role number in 0.3 JSON-RPC", `{"messageId":"m","role":1,"parts":[]}`, dialect03, dialect10, "role"},
		{"wrong kind", `{"kind":"task","messageId":"m","role":"user","parts":[]}`, dialect03, dialect10, "kind"},
		{"id not a string", `{"messageId":7,"role":"ROLE_USER","parts":[]}`, dialect10, dialect03, "messageId"},
		{"two contents", `{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x","url":"https://a"}]}`, dialect10, dialect03, "text"},
		{"no content", `{"messageId":"m","role":"ROLE_USER","parts":[{"metadata":{}}]}`, dialect10, dialect03, "text"},
		{"data not an object to 0.3", `{"messageId":"m","role":"ROLE_USER","parts":[{"data":[1]}]}`, dialect10, dialect03, "data"},
		{"file with bytes and uri", `{"messageId":"m","role":"user","parts":[{"kind":"file","file":{"bytes":"AA","uri":"https://a"}}]}`, dialect03, dialect10, "file"},
		{"kind against content", `{"messageId":"m","role":"user","parts":[{"kind":"data","text":"x"}]}`, dialect03, dialect10, "kind"},
		{"unknown part member", `{"messageId":"m","role":"user","parts":[{"kind":"text","text":"x","lang":"en"}]}`, dialect03, dialect10, "lang"},
		{"unknown file member", `{"messageId":"m","role":"user","parts":[{"kind":"file","file":{"uri":"https://a","size":3}}]}`, dialect03, dialect10, "size"},
		{"0.3 proto data not a DataPart", `{"messageId":"m","role":"ROLE_USER","content":[{"data":{"k":1}}]}`, dialect03Proto, dialect10, "data"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := translateObject(objMessage, bridgeDecode(t, c.in), c.from, c.to)
			if !errors.Is(err, ErrNotA2A) {
				t.Fatalf("got %v, want an error wrapping ErrNotA2A", err)
			}
			if !strings.Contains(err.Error(), `"`+c.member+`"`) {
				t.Errorf("error %q does not name %q", err, c.member)
			}
		})
	}
}

// Members without an equivalent that carry nothing the other side needs
// are dropped, as the table says.
func TestTranslateMessageDrops(t *testing.T) {
	in := `{"messageId":"m","role":"ROLE_USER","referenceTaskIds":[],"parts":[{"text":"x","mediaType":"text/markdown","filename":"a.md"},
		{"url":"https://a","filename":"a.pdf"}]}`
	got := mustTranslate(t, objMessage, in, dialect10, dialect03Proto)
	want := `{"messageId":"m","role":"ROLE_USER","content":[{"text":"x"},{"file":{"fileWithUri":"https://a"}}]}`
	if !sameJSON(t, got, want) {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

// partView holds a part's members by row of the part and file tables.
func TestPartViewRows(t *testing.T) {
	var p partView
	if len(p.part) != len(objectTables[objPart].members) || len(p.file) != len(objectTables[objFile].members) {
		t.Fatalf("partView has %d and %d rows, the tables %d and %d", len(p.part), len(p.file),
			len(objectTables[objPart].members), len(objectTables[objFile].members))
	}
	if objectTables[objPart].members[0].names[0] != "text" || objectTables[objFile].members[0].names[0] != "raw" || objectTables[objFile].members[1].names[0] != "url" {
		t.Fatal("partView reads the content rows first: text; raw, url")
	}
}
