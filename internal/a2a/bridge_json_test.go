package a2a

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// slowDecode is decodeJSON's reference: encoding/json with UseNumber, one
// value and nothing after it.
func slowDecode(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, ErrNotA2A
	}
	return v, nil
}

// slowEncode is what the fast writer must write: encoding/json's output.
func slowEncode(v any, html bool) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

var fastJSONSeeds = []string{
	`{"task":{"id":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"answer","parts":[{"text":"xxxx"}]}]}}`,
	`{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"a\"b\\c\/d\b\f\n\r\t\u0001\u00e9\u2028\ud83d\ude00<>&"}],"metadata":{"n":-1.5e+3,"z":0,"f":false,"t":true,"x":null,"a":[],"o":{}}}`,
	`[1,2.0,-0,1E9,"\u0000"]`, `"é ☃ 😀"`, `  {"a" : [ 1 , { "b" : null } ] }  `, `{"a":1,"a":2}`,
	// Left to encoding/json: malformed, lone surrogates, invalid UTF-8,
	// trailing data.
	`{"a":1,}`, `[1 2]`, `{"a"}`, `01`, `-`, `1.`, `1e`, `"\ud800"`, `"\ud800\u0041"`, "\"\xff\"", `{} {}`, `{} ]`, `nul`, `truex`,
	`"\x"`, `"\u12"`, "\"a\tb\"", `{"a":`, `[`, ``, ` `,
	strings.Repeat("[", 100) + strings.Repeat("]", 100),
}

func TestFastJSONMatchesEncodingJSON(t *testing.T) {
	for _, s := range fastJSONSeeds {
		checkFastJSON(t, []byte(s))
	}
	// The fast paths must take the common answer, or they save nothing.
	for _, s := range fastJSONSeeds[:6] {
		v, ok := fastDecode([]byte(s))
		if !ok {
			t.Fatalf("fast decode left %s to encoding/json", s)
		}
		if _, ok := appendFastJSON(nil, v, false); !ok {
			t.Fatalf("fast write left %s to encoding/json", s)
		}
	}
	for _, s := range []string{`{"a":1,}`, `"\ud800"`, "\"\xff\"", `{} ]`, strings.Repeat("[", 100) + strings.Repeat("]", 100)} {
		if _, ok := fastDecode([]byte(s)); ok {
			t.Fatalf("fast decode read %q, which it leaves to encoding/json", s)
		}
	}
	for _, v := range []any{"\xff", json.Number(""), json.Number("1x"), 1.5, map[string]string{}, []string{"a"}} {
		if _, ok := appendFastJSON(nil, v, false); ok {
			t.Fatalf("fast write wrote %#v, which it leaves to encoding/json", v)
		}
	}
}

// checkFastJSON checks the fast paths against encoding/json on b: a value
// the fast decoder reads is the one encoding/json reads, and what the fast
// writer writes is byte for byte what encoding/json writes.
func checkFastJSON(t *testing.T, b []byte) {
	t.Helper()
	want, err := slowDecode(b)
	got, ok := fastDecode(b)
	if ok {
		if err != nil {
			t.Fatalf("fast decode read %q, encoding/json refuses it: %v", b, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("fast decode of %q: %#v, encoding/json: %#v", b, got, want)
		}
	}
	if err != nil {
		return
	}
	for _, html := range []bool{false, true} {
		out, ok := appendFastJSON([]byte("prefix"), want, html)
		if !ok {
			continue
		}
		ref, err := slowEncode(want, html)
		if err != nil {
			t.Fatalf("fast write of %#v, encoding/json refuses it: %v", want, err)
		}
		if !bytes.Equal(out[len("prefix"):], ref) {
			t.Fatalf("fast write (html %v) of %q:\n%s\nencoding/json:\n%s", html, b, out[len("prefix"):], ref)
		}
	}
}

func FuzzFastJSON(f *testing.F) {
	for _, s := range fastJSONSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkFastJSON)
}

func BenchmarkDecodeJSON(b *testing.B) {
	answer := []byte(`{"task":{"id":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"answer","parts":[{"text":"` +
		strings.Repeat("x", 850) + `"}]}]}}`)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v, _ := fastDecode(answer)
			_, _ = appendFastJSON(nil, v, false)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v, _ := slowDecode(answer)
			_, _ = slowEncode(v, false)
		}
	})
}
