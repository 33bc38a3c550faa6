package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/a2a-gateway/a2a-gateway/a2a"
)

// ResponseSize is the exact size of every non-streaming upstream answer.
const ResponseSize = 1024

// apiKeyHeader carries the benchmark's API key to the gateway.
const apiKeyHeader = "X-API-Key"

// wire holds the protocol spellings the harness sends and answers with,
// looked up once from package a2a.
type wire struct {
	send, stream        string // JSON-RPC method names of A2A 1.0
	version             string // A2A-Version header value
	completed, working  string // task states as 1.0 spells them
	sendPrefix, padding []byte
}

func newWire() (*wire, error) {
	w := &wire{
		send:      a2a.RPCMethodName(a2a.MethodSend, a2a.V10),
		stream:    a2a.RPCMethodName(a2a.MethodStream, a2a.V10),
		version:   a2a.V10.String(),
		completed: a2a.StateCompleted.Wire(a2a.V10),
		working:   a2a.StateWorking.Wire(a2a.V10),
		padding:   bytes.Repeat([]byte("x"), ResponseSize),
	}
	if w.send == "" || w.stream == "" {
		return nil, fmt.Errorf("package a2a names no 1.0 JSON-RPC method for send or stream")
	}
	return w, nil
}

// appendRequest appends a JSON-RPC request for method with the numeric id
// seq and the message id msgPrefix+seq, the shape a 1.0 client sends.
func (w *wire) appendRequest(dst []byte, method, msgPrefix string, seq uint64) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = strconv.AppendUint(dst, seq, 10)
	dst = append(dst, `,"method":"`...)
	dst = append(dst, method...)
	dst = append(dst, `","params":{"message":{"messageId":"`...)
	dst = append(dst, msgPrefix...)
	dst = strconv.AppendUint(dst, seq, 10)
	dst = append(dst, `","role":"ROLE_USER","parts":[{"text":"benchmark request"}]}}}`...)
	return dst
}

// rpcRequest is what the upstream reads from a request.
type rpcRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

// appendTaskResult appends a JSON-RPC response carrying a 1.0 Task for the
// request id. With pad, the text artifact is filled so that the whole body
// is exactly ResponseSize bytes (when the id leaves room for it).
func (w *wire) appendTaskResult(dst, id []byte, seq uint64, state string, pad bool) []byte {
	start := len(dst)
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	dst = append(dst, `,"result":{"task":{"id":"task-`...)
	dst = strconv.AppendUint(dst, seq, 10)
	dst = append(dst, `","contextId":"ctx-`...)
	dst = strconv.AppendUint(dst, seq, 10)
	dst = append(dst, `","status":{"state":"`...)
	dst = append(dst, state...)
	if !pad {
		return append(dst, `"}}}}`...)
	}
	dst = append(dst, `"},"artifacts":[{"artifactId":"answer","parts":[{"text":"`...)
	const tail = `"}]}]}}}`
	if n := ResponseSize - (len(dst) - start) - len(tail); n > 0 {
		dst = append(dst, w.padding[:n]...)
	}
	return append(dst, tail...)
}

// checkResult verifies a non-streaming answer: the exact size the upstream
// writes, and the request's id echoed back.
func checkResult(body []byte, seq uint64) error {
	if len(body) != ResponseSize {
		return fmt.Errorf("body of %d bytes, want %d", len(body), ResponseSize)
	}
	var idTag [32]byte
	tag := append(strconv.AppendUint(append(idTag[:0], `"id":`...), seq, 10), ',')
	if !bytes.Contains(body[:min(len(body), 64)], tag) {
		return fmt.Errorf("the answer does not echo the request id")
	}
	return nil
}
