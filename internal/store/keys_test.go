package store

import (
	"strings"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
)

func TestRefTaggedKeys(t *testing.T) {
	k := keyspace{prefix: "a2agw"}
	tests := []struct {
		agent string
		ref   Ref
		want  string
	}{
		{"billing", Ref{RefTask, "0b5e-41"}, "a2agw:own:{billing:t:0b5e-41}"},
		{"billing", Ref{RefContext, "0b5e-41"}, "a2agw:own:{billing:c:0b5e-41}"},
		{"a:t", Ref{RefTask, "b"}, "a2agw:own:{a%3At:t:b}"},
		{"a", Ref{RefTask, "t:b"}, "a2agw:own:{a:t:t%3Ab}"},
		{"a}", Ref{RefTask, "{b"}, "a2agw:own:{a%7D:t:%7Bb}"},
		{"a", Ref{RefTask, "50%"}, "a2agw:own:{a:t:50%25}"},
		{"ag", Ref{RefTask, "ü \x00"}, "a2agw:own:{ag:t:%C3%BC%20%00}"},
		{"mail@x/y", Ref{RefTask, "a+b=c~d_e.f"}, "a2agw:own:{mail@x/y:t:a+b=c~d_e.f}"},
	}
	for _, tt := range tests {
		if got := k.refTagged(ownershipFamily, tt.agent, tt.ref); got != tt.want {
			t.Errorf("refTagged(%q, %v) = %q, want %q", tt.agent, tt.ref, got, tt.want)
		}
	}
}

func TestUnescape(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{in: "plain-text", want: "plain-text"},
		{in: "a%7Cb", want: "a|b"},
		{in: "%25%3A", want: "%:"},
		{in: "", want: ""},
		{in: "a|b", wantErr: true}, // must have been escaped
		{in: "%41", wantErr: true}, // "A" needs no escape: two spellings would exist
		{in: "%7c", wantErr: true}, // lower-case hex is not what escape writes
		{in: "%7", wantErr: true},  // truncated
		{in: "ab%", wantErr: true}, // truncated
		{in: "%G0", wantErr: true}, // not hex
		{in: "a b", wantErr: true}, // raw space
	}
	for _, tt := range tests {
		got, err := unescape(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("unescape(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func FuzzEscapeRoundTrip(f *testing.F) {
	for _, s := range []string{"", "a", "a|b", "%", "{}:", "ü", "\x00\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := escape(s)
		if strings.ContainsAny(e, ":|{}") {
			t.Fatalf("escape(%q) = %q contains a separator", s, e)
		}
		got, err := unescape(e)
		if err != nil || got != s {
			t.Fatalf("unescape(escape(%q)) = %q, %v", s, got, err)
		}
	})
}

// TestLuaEscapeIsEscape runs the scripts' escape on a real redis-server
// over every byte value and a few names: it must write what escape does,
// or a dead letter the scripts file would not be found by Go.
func TestLuaEscapeIsEscape(t *testing.T) {
	ctx := testContext(t)
	client := redistest.Start(t).Client(t)
	var every strings.Builder
	for c := range 256 {
		every.WriteByte(byte(c))
	}
	for _, s := range []string{"", "plain-Name_1.2~@/+=", "a|b:{c}%", "ü\x00 space", every.String()} {
		got, err := client.Eval(ctx, luaEscape+"return escape(ARGV[1])", nil, s).Text()
		if err != nil {
			t.Fatal(err)
		}
		if want := escape(s); got != want {
			t.Errorf("the scripts escape %q as %q, Go as %q", s, got, want)
		}
	}
}

func TestDecodeOwner(t *testing.T) {
	tests := []struct {
		in      string
		want    Owner
		wantErr string
	}{
		{in: "1|acme|alice", want: Owner{"acme", "alice"}},
		{in: "1|acme|", want: Owner{Tenant: "acme"}},
		{in: "1|a%7Cb|c%7C", want: Owner{"a|b", "c|"}},
		{in: "2|acme|alice", wantErr: "unknown format version"},
		{in: "", wantErr: "unknown format version"},
		{in: "acme", wantErr: "unknown format version"},
		{in: "1|acme", wantErr: "no subject field"},
		{in: "1|a|b|c", wantErr: "subject"},
		{in: "1||alice", wantErr: "empty tenant"},
		{in: "1|%zz|alice", wantErr: "tenant"},
	}
	for _, tt := range tests {
		got, err := decodeOwner(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("decodeOwner(%q) error = %v, want it to contain %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("decodeOwner(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func FuzzOwnerRoundTrip(f *testing.F) {
	f.Add("acme", "alice")
	f.Add("a|b", "c")
	f.Add("1|x", "%7C")
	f.Fuzz(func(t *testing.T, tenant, subject string) {
		if tenant == "" {
			return
		}
		o := Owner{Tenant: tenant, Subject: subject}
		got, err := decodeOwner(encodeOwner(o))
		if err != nil || got != o {
			t.Fatalf("decodeOwner(encodeOwner(%+v)) = %+v, %v", o, got, err)
		}
	})
}
