package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// ResponseSize is the exact size of every non-streaming upstream answer.
const ResponseSize = 1024

// apiKeyHeader carries the benchmark's API key to the gateway.
const apiKeyHeader = "X-API-Key"

// wire holds the protocol spellings the harness sends and answers with,
// looked up once from package a2a.
type wire struct {
	send, stream                      string // JSON-RPC method names of A2A 1.0
	version                           string // A2A-Version header value
	completed, working, inputRequired string // task states as 1.0 spells them
	padding                           []byte
}

func newWire() (*wire, error) {
	w := &wire{
		send:          a2a.RPCMethodName(a2a.MethodSend, a2a.V10),
		stream:        a2a.RPCMethodName(a2a.MethodStream, a2a.V10),
		version:       a2a.V10.String(),
		completed:     a2a.StateCompleted.Wire(a2a.V10),
		working:       a2a.StateWorking.Wire(a2a.V10),
		inputRequired: a2a.StateInputRequired.Wire(a2a.V10),
		padding:       bytes.Repeat([]byte("x"), ResponseSize),
	}
	if w.send == "" || w.stream == "" {
		return nil, fmt.Errorf("package a2a names no 1.0 JSON-RPC method for send or stream")
	}
	return w, nil
}

// msgRefs are the task and context a message names; empty ids are left
// out. The harness only ever builds them from plainID characters.
type msgRefs struct {
	taskID, contextID string
}

// appendRequest appends a JSON-RPC request for method with the numeric id
// seq and the message id msgPrefix+seq, the shape a 1.0 client sends,
// naming the task and context in refs.
func (w *wire) appendRequest(dst []byte, method, msgPrefix string, seq uint64, refs msgRefs) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = strconv.AppendUint(dst, seq, 10)
	dst = append(dst, `,"method":"`...)
	dst = append(dst, method...)
	dst = append(dst, `","params":{"message":{"messageId":"`...)
	dst = append(dst, msgPrefix...)
	dst = strconv.AppendUint(dst, seq, 10)
	if refs.contextID != "" {
		dst = append(dst, `","contextId":"`...)
		dst = append(dst, refs.contextID...)
	}
	if refs.taskID != "" {
		dst = append(dst, `","taskId":"`...)
		dst = append(dst, refs.taskID...)
	}
	dst = append(dst, `","role":"ROLE_USER","parts":[{"text":"benchmark request"}]}}}`...)
	return dst
}

// rpcRequest is what the upstream reads from a request.
type rpcRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Message struct {
			TaskID    string `json:"taskId"`
			ContextID string `json:"contextId"`
		} `json:"message"`
	} `json:"params"`
}

// maxIDBytes bounds the task and context ids the upstream echoes.
const maxIDBytes = 128

// plainID reports whether id may be written into JSON as it is: the ids
// the harness makes use only these characters, so the upstream refuses
// anything else rather than escaping it.
func plainID(id string) bool {
	if len(id) > maxIDBytes {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// appendTaskResult appends a JSON-RPC response carrying a 1.0 Task for the
// request id. The task and context are the ones refs names, as an agent
// continues a conversation, or else new ones numbered seq. With pad, the
// text artifact is filled so that the whole body is exactly ResponseSize
// bytes (when the ids leave room for it).
func (w *wire) appendTaskResult(dst, id []byte, seq uint64, refs msgRefs, state string, pad bool) []byte {
	start := len(dst)
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	dst = append(dst, `,"result":{"task":{"id":"`...)
	dst = appendIDOr(dst, refs.taskID, "task-", seq)
	dst = append(dst, `","contextId":"`...)
	dst = appendIDOr(dst, refs.contextID, "ctx-", seq)
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

// appendIDOr appends id, or prefix and seq when id is empty.
func appendIDOr(dst []byte, id, prefix string, seq uint64) []byte {
	if id != "" {
		return append(dst, id...)
	}
	dst = append(dst, prefix...)
	return strconv.AppendUint(dst, seq, 10)
}

// checkResult verifies a non-streaming answer: the exact size the upstream
// writes, the request's id echoed back, and the task and context the
// request named, if any.
func checkResult(body []byte, seq uint64, refs msgRefs) error {
	if len(body) != ResponseSize {
		return fmt.Errorf("body of %d bytes, want %d", len(body), ResponseSize)
	}
	var idTag [32]byte
	tag := append(strconv.AppendUint(append(idTag[:0], `"id":`...), seq, 10), ',')
	if !bytes.Contains(body[:min(len(body), 64)], tag) {
		return fmt.Errorf("the answer does not echo the request id")
	}
	// The ids sit just after the request id, well inside the first 256 bytes.
	head := body[:min(len(body), 256)]
	for _, ref := range [...]struct{ member, id string }{{`"id":"`, refs.taskID}, {`"contextId":"`, refs.contextID}} {
		if ref.id != "" && !containsQuoted(head, ref.member, ref.id) {
			return fmt.Errorf("the answer is not about the task and context the request named")
		}
	}
	return nil
}

// containsQuoted reports whether b holds member immediately followed by id
// and a closing quote.
func containsQuoted(b []byte, member, id string) bool {
	for {
		i := bytes.Index(b, []byte(member))
		if i < 0 {
			return false
		}
		b = b[i+len(member):]
		if rest, ok := bytes.CutPrefix(b, []byte(id)); ok && len(rest) > 0 && rest[0] == '"' {
			return true
		}
	}
}

// taskIDOf reads the task id out of a SendMessage answer.
func taskIDOf(body []byte) (string, error) {
	var v struct {
		Result struct {
			Task struct {
				ID string `json:"id"`
			} `json:"task"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return "", fmt.Errorf("answer is not JSON: %w", err)
	}
	if v.Result.Task.ID == "" {
		return "", fmt.Errorf("answer carries no task id")
	}
	return v.Result.Task.ID, nil
}
