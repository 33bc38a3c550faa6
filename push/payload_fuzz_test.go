package push

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzDecodePayload feeds DecodePayload arbitrary payloads. It must never
// panic; what it accepts encoding/json reads the same, and encodes back to
// a payload that decodes to the same request.
func FuzzDecodePayload(f *testing.F) {
	for _, r := range []Request{
		{URL: "https://hooks.example.com/a?b=1", ContentType: "application/a2a+json", Body: []byte(`{"a":1}`)},
		{URL: "http://h/<&>\u2028", ContentType: "application/json; charset=utf-8", Token: "t\"\\", AuthScheme: "Basic",
			AuthCredentials: "c3Ry", WebhookSecret: []byte("0123456789abcdef0123456789"), TraceParent: "00-x", TraceState: "k=v"},
	} {
		p, err := EncodePayload(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(p)
	}
	f.Add([]byte(payloadMagic + `{"url":"https://a/","url":"https://b/"}` + "\n"))
	f.Add([]byte(payloadMagic + `{"url":"https://a/\ud800"}` + "\nbody"))
	f.Fuzz(func(t *testing.T, p []byte) {
		got, err := DecodePayload(p)
		if err != nil {
			return
		}
		line, _, _ := bytes.Cut(bytes.TrimPrefix(p, []byte(payloadMagic)), []byte{'\n'})
		var want payloadHeader
		if err := json.Unmarshal(line, &want); err != nil {
			t.Fatalf("accepted a header encoding/json refuses (%v): %q", err, line)
		}
		if h := (payloadHeader{URL: got.URL, ContentType: got.ContentType, Token: got.Token, AuthScheme: got.AuthScheme,
			AuthCredentials: got.AuthCredentials, WebhookSecret: got.WebhookSecret, TraceParent: got.TraceParent, TraceState: got.TraceState}); !sameHeader(h, want) {
			t.Fatalf("header %q read as %+v, encoding/json reads %+v", line, h, want)
		}
		again, err := EncodePayload(got)
		if err != nil {
			return // a content type EncodePayload refuses
		}
		back, err := DecodePayload(again)
		for _, r := range []*Request{&got, &back} {
			// Empty and none are the same body, the same secret.
			if len(r.Body) == 0 {
				r.Body = nil
			}
			if len(r.WebhookSecret) == 0 {
				r.WebhookSecret = nil
			}
		}
		if err != nil || !reflect.DeepEqual(back, got) {
			t.Fatalf("re-encoded payload decodes to %+v, %v; want %+v", back, err, got)
		}
	})
}

// sameHeader compares a and b, an empty webhook secret the same as none.
func sameHeader(a, b payloadHeader) bool {
	if bytes.Equal(a.WebhookSecret, b.WebhookSecret) {
		a.WebhookSecret, b.WebhookSecret = nil, nil
	}
	return reflect.DeepEqual(a, b)
}
