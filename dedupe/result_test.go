package dedupe

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestResultEncoding checks that a stored answer reads back as written,
// and that a damaged record, or one in any other encoding, is refused
// rather than replayed.
func TestResultEncoding(t *testing.T) {
	for _, res := range []result{
		{Status: 200, ContentType: "application/json", RPCID: json.RawMessage(`"req-1"`), Body: []byte(`{"jsonrpc":"2.0","id":"req-1","result":{}}`)},
		{Status: 201, Body: []byte{0, 1, 2, 255}},
		{Status: 204},
		{Status: 999, ContentType: string(bytes.Repeat([]byte("x"), 300)), RPCID: json.RawMessage(`12`)},
	} {
		got, err := decodeResult(encodeResult(res))
		if err != nil {
			t.Fatalf("%d: %v", res.Status, err)
		}
		if got.Status != res.Status || got.ContentType != res.ContentType || !bytes.Equal(got.RPCID, res.RPCID) || !bytes.Equal(got.Body, res.Body) {
			t.Errorf("read %+v, wrote %+v", got, res)
		}
	}
	good := encodeResult(result{Status: 200, ContentType: "text/plain", Body: []byte("hi")})
	for name, bad := range map[string][]byte{
		"empty":               nil,
		"unknown format":      append([]byte{9}, good[1:]...),
		"no status":           {resultFormat},
		"status out of range": {resultFormat, 5, 0, 0},
		"truncated type":      good[:4],
		"length past end":     {resultFormat, 200, 1, 100, 'x'},
		"json":                []byte(`{"s":200,"b":""}`),
	} {
		if _, err := decodeResult(bad); err == nil {
			t.Errorf("%s: a damaged record was read", name)
		}
	}
}
