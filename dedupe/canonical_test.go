package dedupe

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// Bodies whose canonical form the one pass must write exactly as decoding
// and encoding again does, or refuse exactly when that does.
var canonicalCorpus = []string{
	`{}`, `[]`, `null`, `true`, `false`, `0`, `-0`, `1.5e+10`, `-12.0E-3`, `12345678901234567890`,
	`""`, `"plain"`, `  {"b":1,"a":2}  `, `{"a":1,"a":2}`, `{"b":{"y":1,"x":[3,{"d":4,"c":5}]},"a":null}`,
	`{"a":1,"b":2,"a":3,"c":{"z":0,"z":1}}`, `{"":1," ":2}`, `[1,"two",{"3":4},[],{}]`,
	`"<script>&amp;</script>"`, `"\u003c\u003e\u0026"`, `"tab\there\nnew\rret\bback\fform"`,
	`"\u0000\u001f\u007f"`, `"\/slash\\back\"quote"`, `"line\u2028para\u2029"`, "\"line\u2028raw\u2029\"",
	`"\ud83d\ude00"`, `"\ud83d"`, `"\ud83dx"`, `"\ude00\ud83d"`, `"\ud83d\u0041"`, `"é ü 日本"`,
	"\"bad \xff utf8 \xc3\x28\"", "{\"k\xff\":1}", `{"\u00e9":1,"e":2,"é":3}`, `{"B":1,"a":2,"A":3,"b":4}`,
	// Malformed: each must be refused.
	``, `{`, `}`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[1 2]`, `{"a" 1}`, `{a:1}`, `'a'`, `tru`, `nul`,
	`01`, `1.`, `.5`, `1e`, `1e+`, `-`, `--1`, `+1`, `"unterminated`, `"bad \x escape"`, `"\u12"`, `"\u12zz"`,
	"\"raw \x01 control\"", `{"a":1}}`, `[1]]`, `{"a":1} x`, `1 x`, `1x`, `truex`, `"s"x`, `[1] x`,
	"\f", " \v", "1\f",
}

func TestCanonicalValueMatchesDecodeAndEncode(t *testing.T) {
	for _, in := range canonicalCorpus {
		checkCanonicalValue(t, []byte(in))
	}
}

func TestCanonicalParamsMatchesDecodeAndEncode(t *testing.T) {
	envelopes := []string{
		`null`, `{}`, `[]`, `"s"`, `1`, `{"jsonrpc":"2.0","id":1,"method":"m"}`,
		`{"params":{"b":1,"a":2}}`, `{"PARAMS":1,"params":2}`, `{"params":1,"Params":2}`, `{"paramſ":[1]}`,
		`{"params":{"a":1}} x`, `{"params":{"a":1}}  `, `{"params":{"a":1},}`, `{"params":{"a":1}`, `{"id":{"x":1},"params":null}`,
	}
	for _, in := range canonicalCorpus {
		envelopes = append(envelopes, `{"jsonrpc":"2.0","id":"x","params":`+in+`,"method":"SendMessage"}`)
	}
	for _, in := range envelopes {
		checkCanonicalParams(t, []byte(in))
	}
}

// Nesting beyond the one pass's depth takes the decoder's way.
func TestCanonicalDeepNesting(t *testing.T) {
	for _, depth := range []int{maxCanonicalDepth - 1, maxCanonicalDepth, maxCanonicalDepth + 1, 200} {
		obj := strings.Repeat(`{"b":1,"a":`, depth) + "0" + strings.Repeat("}", depth)
		arr := strings.Repeat("[", depth) + "0" + strings.Repeat("]", depth)
		for _, in := range []string{obj, arr, strings.TrimSuffix(obj, "}")} {
			checkCanonicalValue(t, []byte(in))
			checkCanonicalParams(t, []byte(`{"params":`+in+`}`))
		}
	}
}

func FuzzCanonical(f *testing.F) {
	for _, in := range canonicalCorpus {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkCanonicalValue(t, in)
		checkCanonicalParams(t, in)
	})
}

// reused is one canonicalizer for every check, as the pool reuses them:
// nothing of one body may leak into the form of the next.
var reused canonicalizer

func checkCanonicalValue(t *testing.T, in []byte) {
	t.Helper()
	got, err := reused.canonicalValue(in)
	want, wantErr := canonicalSlow(in)
	compareCanonical(t, in, got, err, want, wantErr)
}

func checkCanonicalParams(t *testing.T, in []byte) {
	t.Helper()
	got, err := reused.canonicalParams(in)
	var env struct {
		Params json.RawMessage `json:"params"`
	}
	want, wantErr := []byte(nil), json.Unmarshal(in, &env)
	if wantErr == nil {
		want, wantErr = canonicalSlow(env.Params)
	}
	compareCanonical(t, in, got, err, want, wantErr)
}

func compareCanonical(t *testing.T, in, got []byte, err error, want []byte, wantErr error) {
	t.Helper()
	if (err != nil) != (wantErr != nil) {
		t.Errorf("%q: error %v, want %v", in, err, wantErr)
		return
	}
	if err == nil && !bytes.Equal(got, want) {
		t.Errorf("%q:\n got %s\nwant %s", in, got, want)
	}
}
