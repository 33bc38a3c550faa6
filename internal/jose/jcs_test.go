package jose

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// The number serialisation table of RFC 8785 Appendix B, as IEEE 754 bit
// patterns and the ECMAScript text they must produce.
func TestAppendNumberRFC8785AppendixB(t *testing.T) {
	tests := []struct {
		bits uint64
		want string // "" means the value has no JSON form
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x7fffffffffffffff, ""},
		{0x7ff0000000000000, ""},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
		// The sample lines of the ES6 number test file.
		{0x4340000000000001, "9007199254740994"},
		{0x4340000000000002, "9007199254740996"},
	}
	for _, tc := range tests {
		t.Run(strconv.FormatUint(tc.bits, 16), func(t *testing.T) {
			f := math.Float64frombits(tc.bits)
			b, err := appendNumber(nil, f)
			got := string(b)
			if tc.want == "" {
				if !errors.Is(err, ErrNotCanonicalizable) {
					t.Fatalf("appendNumber(%v) = %q, %v; want ErrNotCanonicalizable", f, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("appendNumber(%v) = %q, %v; want %q", f, got, err, tc.want)
			}
			if back, err := strconv.ParseFloat(got, 64); err != nil || back != f && !(f == 0 && back == 0) {
				t.Fatalf("%q does not round-trip to %v", got, f)
			}
		})
	}
}

var canonicalizeVectors = []struct {
	name, in, want string
}{
	{
		// RFC 8785 section 3.2.2 example.
		name: "values",
		in: `{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`,
		want: `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`,
	},
	{
		// RFC 8785 section 3.2.3 sorting example, extended: UTF-16 order puts
		// the emoji (a surrogate pair) before U+FB33, unlike code point order.
		name: "sorting",
		in: `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\u000a": "Newline",
  "1": "One",
  "\u0080": "Control\u007f",
  "\ud83d\ude02": "Smiley",
  "\u00f6": "Latin Small Letter O With Diaeresis",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "</script>": "Browser Challenge"
}`,
		want: "{\"\\n\":\"Newline\",\"\\r\":\"Carriage Return\",\"1\":\"One\",\"</script>\":\"Browser Challenge\",\"\u0080\":\"Control\u007f\",\"\u00f6\":\"Latin Small Letter O With Diaeresis\",\"\u20ac\":\"Euro Sign\",\"\U0001F602\":\"Smiley\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}",
	},
	{
		name: "structures",
		in: `{
  "1": {"f": {"f": "hi","F": 5} ,"\n": 56.0},
  "10": { },
  "": "empty",
  "a": { },
  "111": [ {"e": "yes","E": "no" } ],
  "A": { }
}`,
		want: `{"":"empty","1":{"\n":56,"f":{"F":5,"f":"hi"}},"10":{},"111":[{"E":"no","e":"yes"}],"A":{},"a":{}}`,
	},
	{
		name: "arrays",
		in:   "[\n  56,\n  {\n    \"d\": true,\n    \"10\": null,\n    \"1\": [ ]\n  }\n]\n",
		want: `[56,{"1":[],"10":null,"d":true}]`,
	},
	{
		name: "unnormalised unicode stays as is",
		in:   `{"Unnormalized Unicode":"A\u030a"}`,
		want: "{\"Unnormalized Unicode\":\"A\u030a\"}",
	},
	{
		name: "sorting ignores locale",
		in:   `{"peach":"This sorting order","péché":"is wrong according to French","pêche":"but canonicalization MUST","sin":"ignore locale"}`,
		want: `{"peach":"This sorting order","péché":"is wrong according to French","pêche":"but canonicalization MUST","sin":"ignore locale"}`,
	},
	{name: "scalar", in: " -0.0 ", want: "0"},
	{name: "controls escaped in lower-case hex", in: `"\u001F\u0000\b\f\t"`, want: `"\u001f\u0000\b\f\t"`},
	{name: "html not escaped", in: `"<a href=\"x\">&amp;</a>"`, want: `"<a href=\"x\">&amp;</a>"`},
	{name: "large integer becomes a double", in: `12345678901234567890`, want: `12345678901234567000`},
}

func TestCanonicalizeVectors(t *testing.T) {
	for _, tc := range canonicalizeVectors {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Canonicalize([]byte(tc.in))
			if err != nil {
				t.Fatalf("Canonicalize: %v", err)
			}
			if string(got) != tc.want {
				t.Fatalf("Canonicalize =\n%s\nwant\n%s", got, tc.want)
			}
			again, err := Canonicalize(got)
			if err != nil || string(again) != string(got) {
				t.Fatalf("not idempotent: %s, %v", again, err)
			}
		})
	}
}

var canonicalizeRefusals = []struct {
	name, in string
}{
	{"empty", ""},
	{"duplicate member", `{"a":1,"a":2}`},
	{"duplicate nested member", `{"x":{"b":true,"b":true}}`},
	{"lone high surrogate", `"\ud83d"`},
	{"lone high surrogate before text", `"\ud83dx"`},
	{"high surrogate with non-surrogate", `"\ud83d\u0041"`},
	{"lone low surrogate", `"\ude02"`},
	{"invalid utf-8", "\"\xff\""},
	{"utf-8 encoded surrogate", "\"\xed\xa0\x80\""},
	{"raw control character", "\"a\nb\""},
	{"number out of range", `1e400`},
	{"leading zero", `01`},
	{"bare fraction", `1.`},
	{"bare exponent", `1e`},
	{"plus sign", `+1`},
	{"trailing data", `{} {}`},
	{"trailing comma", `[1,]`},
	{"single quotes", `{'a':1}`},
	{"unterminated string", `"abc`},
	{"bad escape", `"\x"`},
	{"short unicode escape", `"\u12"`},
	{"missing colon", `{"a" 1}`},
	{"unterminated object", `{"a":1`},
	{"bad literal", `nul`},
	{"too deep", strings.Repeat("[", maxJSONDepth+2) + strings.Repeat("]", maxJSONDepth+2)},
}

func TestCanonicalizeRefuses(t *testing.T) {
	for _, tc := range canonicalizeRefusals {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Canonicalize([]byte(tc.in))
			if !errors.Is(err, ErrNotCanonicalizable) {
				t.Fatalf("Canonicalize(%q) = %s, %v; want ErrNotCanonicalizable", tc.in, got, err)
			}
		})
	}
}

// Canonicalize works in pooled memory; what it returns must not be part of it.
func TestCanonicalizeResultOutlivesNextCall(t *testing.T) {
	first, err := Canonicalize([]byte(`{"b":"\n","a":[1]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := string(first)
	for _, in := range []string{`{"y":"\t","x":[2]}`, `{"a":1,"a":2}`} {
		Canonicalize([]byte(in))
	}
	if string(first) != want {
		t.Fatalf("an earlier result changed from %s to %s", want, first)
	}
}

// nestedOutOfOrder is text whose objects nest depth deep, each with its
// nested member before a member that sorts first, around a string of size
// bytes: ordering each level moves everything inside it.
func nestedOutOfOrder(depth, size int) []byte {
	return []byte(strings.Repeat(`{"b":`, depth) + `"` + strings.Repeat("x", size) + `"` + strings.Repeat(`,"a":1}`, depth))
}

// The one pass rewrites an out-of-order object by copying what it holds;
// nested out of order, level under level, that would copy the innermost
// text once per level. Past maxRewriteFactor times the text's length of
// copying, Canonicalize goes by the tree instead, with the same result.
func TestCanonicalizeBoundsRewrites(t *testing.T) {
	copied := func(data []byte) (budget int) {
		s := getScratch()
		defer s.release()
		s.p.data, s.p.build = data, &s.w
		s.w.budget = maxRewriteFactor * len(data)
		if err := s.p.parse(); err != nil {
			t.Fatal(err)
		}
		return s.w.budget
	}
	for _, tc := range []struct {
		name     string
		data     []byte
		fallback bool
	}{
		{"event", []byte(`{"statusUpdate":{"taskId":"t","status":{"state":"TASK_STATE_WORKING","message":{"role":"ROLE_AGENT","parts":[{"text":"x"}],"messageId":"m"}},"contextId":"c"}}`), false},
		{"a few levels", nestedOutOfOrder(3, 1000), false},
		{"deep", nestedOutOfOrder(maxJSONDepth-1, 100000), true},
	} {
		if got := copied(tc.data) < 0; got != tc.fallback {
			t.Errorf("%s: went by the tree %v, want %v", tc.name, got, tc.fallback)
		}
		got, err := Canonicalize(tc.data)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		v, err := ParseJSON(tc.data)
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := Canonical(v); !bytes.Equal(got, want) {
			t.Errorf("%s: Canonicalize differs from the tree's form", tc.name)
		}
	}
}

func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,-0,1e300,"x\u00e9"],"b":{"c":null}}`, `"\ud83d\ude02"`, `[]`, `{"\u20ac":1,"\ufb33":2,"\ud83d\ude00":3}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := Canonicalize(data)
		if err != nil {
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		var in, back any
		if err := json.Unmarshal(data, &in); err != nil {
			t.Fatalf("unmarshal input: %v", err)
		}
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("canonical output %q is not JSON: %v", out, err)
		}
		if !reflect.DeepEqual(in, back) {
			t.Fatalf("canonical form changed the value:\n in  %q\n out %q", data, out)
		}
		again, err := Canonicalize(out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("not idempotent: %q -> %q, %v", out, again, err)
		}
	})
}

// Canonicalize writes as it reads; ParseJSON and Canonical go through a
// tree. Both must give the same bytes, and refuse the same text.
func FuzzCanonicalizeMatchesTree(f *testing.F) {
	for _, tc := range canonicalizeVectors {
		f.Add([]byte(tc.in))
		f.Add([]byte(tc.want))
	}
	for _, tc := range canonicalizeRefusals {
		f.Add([]byte(tc.in))
	}
	for _, ev := range benchmarkEvents {
		f.Add([]byte(ev.payload))
	}
	f.Add(nestedOutOfOrder(40, 10)) // past the rewrite bound: by the tree
	for _, s := range []string{
		`{"a":1,"\u0061":2}`,
		`{"a":{"b":1},"\u0062":{"b":2},"b":3}`,
		`{"\ud83d\ude00":1,"\uff61":2,"\ue000":3,"\u00e9":4,"e\u0301":5}`,
		`{"\ud83d\ude00\ud83d":1}`,
		`"\udc00\ud800"`,
		`"\ud800\udbff"`,
		`"\ud800\"`,
		`"\uD83D\uDE00\uFFFF\u0000\u001f\u007f\u2028"`,
		"\"\xef\xbf\xbd\xf4\x8f\xbf\xbf\xf4\x90\x80\x80\"",
		"\"\xc0\xaf\"",
		"{\"\xff\":1}",
		`[1e400,-1e400]`, `1e-400`, `-0`, `-0.0e-0`, `1E21`, `1e21`, `1E20`, `0.000001`, `1e-7`, `1.5e-7`,
		`123456789012345678901234567890`, `-9007199254740993`, `5e-324`, `2.4703282292062328e-324`, `1.7976931348623158e308`,
		`1.7976931348623159e308`, `0.1e1`, `00`, `-`, `-a`, `1.e1`, `.5`, `1e+`, `1E-05`,
		" \t\r\n{ \t\r\n\"a\" \t\r\n: \t\r\n[ \t\r\n1 \t\r\n, \t\r\nnull \t\r\n] \t\r\n} \t\r\n",
		"{\f}", "\x00", `{}`, `[]`, `[{}]`, `{"":{}}`, `[[],[[]]]`, `{"b":[],"a":{}}`,
		`"\u0000\b\t\n\f\r\"\\\/"`, "\"\x7f\"", "\"\x1f\"",
		`truex`, `[true false]`, `nulll`, `{"a":1,}`, `{,}`, `[,]`, `{"a"}`, `{"a":}`, `{1:2}`, `"\u00g0"`, `"\U0041"`,
		`{"b":1,"a":2,"c":{"z":[3,{"y":1,"x":2}],"\n":0}}`,
		strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth),
		strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1),
		strings.Repeat("[", maxJSONDepth+2) + strings.Repeat("]", maxJSONDepth+2),
		strings.Repeat("[", maxJSONDepth) + "1" + strings.Repeat("]", maxJSONDepth),
		strings.Repeat("[", maxJSONDepth+1) + "1" + strings.Repeat("]", maxJSONDepth+1),
		strings.Repeat(`{"b":0,"a":`, maxJSONDepth) + "1" + strings.Repeat("}", maxJSONDepth),
		strings.Repeat(`{"a":`, maxJSONDepth+1) + "{}" + strings.Repeat("}", maxJSONDepth+1),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := Canonicalize(data)
		var want []byte
		v, treeErr := ParseJSON(data)
		if treeErr == nil {
			want, treeErr = Canonical(v)
		}
		switch {
		case err != nil && treeErr != nil:
			if !errors.Is(err, ErrNotCanonicalizable) || !errors.Is(treeErr, ErrNotCanonicalizable) {
				t.Fatalf("refusals of %q are not ErrNotCanonicalizable: %v; %v", data, err, treeErr)
			}
		case err != nil || treeErr != nil:
			t.Fatalf("%q: Canonicalize gives %q, %v; the tree gives %q, %v", data, got, err, want, treeErr)
		case !bytes.Equal(got, want):
			t.Fatalf("%q: Canonicalize gives\n%q\nthe tree gives\n%q", data, got, want)
		}
	})
}

// The payloads of two streamed events, as push.EventID canonicalizes them.
var benchmarkEvents = []struct{ name, payload string }{
	{"artifactUpdate", `{"artifactUpdate":{"taskId":"t1","contextId":"c","artifact":{"artifactId":"a","parts":[{"text":"12"}]},"append":true}}`},
	{"statusUpdate", `{"statusUpdate":{"taskId":"9f2c6a1e-4b7d-4e0a-9c3b-2d5e8f1a7b64","contextId":"0d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6","status":{"state":"TASK_STATE_WORKING","timestamp":"2026-12-03T10:00:00.123Z","message":{"messageId":"m1","role":"ROLE_AGENT","parts":[{"text":"working on it"}]}},"final":false}}`},
}

func BenchmarkCanonicalize(b *testing.B) {
	for _, ev := range benchmarkEvents {
		data := []byte(ev.payload)
		b.Run(ev.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Canonicalize(data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(ev.name+"/tree", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				v, err := ParseJSON(data)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := Canonical(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
