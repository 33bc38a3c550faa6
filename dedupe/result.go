package dedupe

import (
	"encoding/binary"
	"encoding/json"
	"errors"
)

// result is what a completed record replays: the status, content type and
// JSON-RPC id of the answer, and its body.
type result struct {
	Status      int
	ContentType string
	RPCID       json.RawMessage
	Body        []byte
}

// resultFormat starts every stored result. Results are written once per
// first-seen send, so their encoding is binary, not JSON with the body in
// base64: uvarint status, then content type and RPC id each as uvarint
// length and bytes, then the body to the end.
const resultFormat = 1

var errResult = errors.New("dedupe: stored result is malformed")

func encodeResult(res result) []byte {
	b := make([]byte, 0, 1+3*binary.MaxVarintLen32+len(res.ContentType)+len(res.RPCID)+len(res.Body))
	b = append(b, resultFormat)
	b = binary.AppendUvarint(b, uint64(res.Status))
	b = binary.AppendUvarint(b, uint64(len(res.ContentType)))
	b = append(b, res.ContentType...)
	b = binary.AppendUvarint(b, uint64(len(res.RPCID)))
	b = append(b, res.RPCID...)
	return append(b, res.Body...)
}

func decodeResult(b []byte) (result, error) {
	var res result
	if len(b) == 0 || b[0] != resultFormat {
		return res, errResult
	}
	b = b[1:]
	status, n := binary.Uvarint(b)
	if n <= 0 || status < 100 || status > 999 {
		return res, errResult
	}
	res.Status = int(status)
	b = b[n:]
	ct, b, ok := lengthPrefixed(b)
	if !ok {
		return res, errResult
	}
	id, b, ok := lengthPrefixed(b)
	if !ok {
		return res, errResult
	}
	res.ContentType = string(ct)
	if len(id) > 0 {
		res.RPCID = id
	}
	res.Body = b
	return res, nil
}

// lengthPrefixed splits a uvarint length and that many bytes off b.
func lengthPrefixed(b []byte) (field, rest []byte, ok bool) {
	l, n := binary.Uvarint(b)
	if n <= 0 || l > uint64(len(b)-n) {
		return nil, nil, false
	}
	b = b[n:]
	return b[:l], b[l:], true
}
