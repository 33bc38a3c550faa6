package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// ResponseSize is the exact size of every non-streaming upstream answer.
const ResponseSize = 1024

// apiKeyHeader carries the benchmark's API key to the gateway.
const apiKeyHeader = "X-API-Key"

// wire holds the protocol spellings the harness sends and answers with
// over JSON-RPC in one version, looked up once from package a2a. Every row
// speaks 1.0 except the bridged ones, whose client or agent speaks 0.3.
type wire struct {
	v                                 a2a.Version
	send, stream                      string // JSON-RPC method names
	version                           string // A2A-Version header value; empty for 0.3, which has none
	completed, working, inputRequired string // task states as v spells them
	padding                           []byte
}

func newWire(v a2a.Version) (*wire, error) {
	w := &wire{
		v:             v,
		send:          a2a.RPCMethodName(a2a.MethodSend, v),
		stream:        a2a.RPCMethodName(a2a.MethodStream, v),
		completed:     a2a.StateCompleted.Wire(v),
		working:       a2a.StateWorking.Wire(v),
		inputRequired: a2a.StateInputRequired.Wire(v),
		padding:       bytes.Repeat([]byte("x"), ResponseSize),
	}
	switch v {
	case a2a.V10:
		w.version = v.String()
	case a2a.V03:
		// A 0.3 client names no version: the header is 1.0's.
	default:
		return nil, fmt.Errorf("the harness speaks A2A 1.0 and 0.3, not %v", v)
	}
	if w.send == "" || w.stream == "" {
		return nil, fmt.Errorf("package a2a names no %v JSON-RPC method for send or stream", v)
	}
	return w, nil
}

// msgRefs are the task and context a message names; empty ids are left
// out. The harness only ever builds them from plainID characters.
type msgRefs struct {
	taskID, contextID string
}

// appendRequest appends a JSON-RPC request for method with the numeric id
// seq and the message id msgPrefix+seq, the shape a client of w's version
// sends for a blocking send, naming the task and context in refs.
func (w *wire) appendRequest(dst []byte, method, msgPrefix string, seq uint64, refs msgRefs) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = strconv.AppendUint(dst, seq, 10)
	dst = append(dst, `,"method":"`...)
	dst = append(dst, method...)
	dst = append(dst, `","params":{"message":{`...)
	if w.v == a2a.V03 {
		dst = append(dst, `"kind":"message",`...)
	}
	dst = append(dst, `"messageId":"`...)
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
	if w.v == a2a.V03 {
		// 0.3 SDKs name the blocking send explicitly (0.3 leaves its
		// default to the agent); a 1.0 send blocks unless told not to.
		return append(dst, `","role":"user","parts":[{"kind":"text","text":"benchmark request"}]},"configuration":{"blocking":true}}}`...)
	}
	return append(dst, `","role":"ROLE_USER","parts":[{"text":"benchmark request"}]}}}`...)
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

// appendTaskResult appends a JSON-RPC response carrying a Task of w's
// version for the request id: 1.0 wraps it in a SendMessageResponse, 0.3
// tags it with its kind. The task and context are the ones refs names, as
// an agent continues a conversation, or else new ones numbered seq. With
// pad, the text artifact is filled so that the whole body is exactly
// ResponseSize bytes (when the ids leave room for it).
func (w *wire) appendTaskResult(dst, id []byte, seq uint64, refs msgRefs, state string, pad bool) []byte {
	start := len(dst)
	v03 := w.v == a2a.V03
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	if v03 {
		dst = append(dst, `,"result":{"kind":"task","id":"`...)
	} else {
		dst = append(dst, `,"result":{"task":{"id":"`...)
	}
	dst = appendIDOr(dst, refs.taskID, "task-", seq)
	dst = append(dst, `","contextId":"`...)
	dst = appendIDOr(dst, refs.contextID, "ctx-", seq)
	dst = append(dst, `","status":{"state":"`...)
	dst = append(dst, state...)
	// 1.0 closes one object more: the SendMessageResponse around the task.
	closing, tail := `"}}}}`, `"}]}]}}}`
	if v03 {
		closing, tail = `"}}}`, `"}]}]}}`
	}
	if !pad {
		return append(dst, closing...)
	}
	if v03 {
		dst = append(dst, `"},"artifacts":[{"artifactId":"answer","parts":[{"kind":"text","text":"`...)
	} else {
		dst = append(dst, `"},"artifacts":[{"artifactId":"answer","parts":[{"text":"`...)
	}
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

// checkResult verifies a non-streaming answer: the exact size it must
// have (ResponseSize, what the upstream writes, when not translated), the
// request's id echoed back, and the task and context the request named, if
// any. The upstream writes those ids just after the request id, well
// inside the first 256 bytes; a translation may move them, so for a
// translated answer (size not ResponseSize) they are looked for anywhere.
func checkResult(body []byte, size int, seq uint64, refs msgRefs) error {
	if len(body) != size {
		return fmt.Errorf("body of %d bytes, want %d", len(body), size)
	}
	var idTag [32]byte
	tag := append(strconv.AppendUint(append(idTag[:0], `"id":`...), seq, 10), ',')
	if !bytes.Contains(body[:min(len(body), 64)], tag) {
		return fmt.Errorf("the answer does not echo the request id")
	}
	head := body
	if size == ResponseSize {
		head = body[:min(len(body), 256)]
	}
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

// translatedTask is what checkTranslated reads of a Task, in either
// version: 0.3 tags it with its kind and the text part too, 1.0 has no
// kinds.
type translatedTask struct {
	Kind      string `json:"kind"`
	ID        string `json:"id"`
	ContextID string `json:"contextId"`
	Status    struct {
		State string `json:"state"`
	} `json:"status"`
	Artifacts []struct {
		ArtifactID string `json:"artifactId"`
		Parts      []struct {
			Kind string `json:"kind"`
			Text string `json:"text"`
		} `json:"parts"`
	} `json:"artifacts"`
}

// checkTranslated verifies an answer the gateway translated from the
// agent's version into w's, where the size cannot be known in advance: a
// JSON-RPC result for the request's id, a Task spelled in w's version in
// the state the upstream answers with (input-required when the request
// named a context), about the task and context the request named, with
// the upstream's padded artifact intact.
func (w *wire) checkTranslated(body []byte, seq uint64, refs msgRefs) error {
	var env struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   json.RawMessage `json:"error"`
		Result  json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("answer is not JSON: %w", err)
	}
	if env.JSONRPC != "2.0" || string(env.ID) != strconv.FormatUint(seq, 10) {
		return fmt.Errorf("the answer does not echo the request id")
	}
	if env.Error != nil || env.Result == nil {
		return fmt.Errorf("the answer is an error or has no result")
	}
	var t translatedTask
	if w.v == a2a.V03 {
		if err := json.Unmarshal(env.Result, &t); err != nil {
			return fmt.Errorf("the result is not a task: %w", err)
		}
		if t.Kind != "task" {
			return fmt.Errorf("the result is not a 0.3 task (kind %q)", t.Kind)
		}
	} else {
		var resp struct {
			Task *translatedTask `json:"task"`
		}
		if err := json.Unmarshal(env.Result, &resp); err != nil || resp.Task == nil {
			return fmt.Errorf("the result is not a 1.0 task")
		}
		if t = *resp.Task; t.Kind != "" {
			return fmt.Errorf("the 1.0 task carries a 0.3 kind")
		}
	}
	want := w.completed
	if refs.contextID != "" {
		want = w.inputRequired
	}
	if t.Status.State != want {
		return fmt.Errorf("state %q, want %q", t.Status.State, want)
	}
	if t.ID == "" || refs.taskID != "" && t.ID != refs.taskID || t.ContextID == "" || refs.contextID != "" && t.ContextID != refs.contextID {
		return fmt.Errorf("the answer is not about the task and context the request named")
	}
	return w.checkPadding(t)
}

// checkPadding checks the upstream's one artifact: one text part (tagged
// as such in 0.3) holding only padding, most of the upstream's answer.
func (w *wire) checkPadding(t translatedTask) error {
	if len(t.Artifacts) != 1 || len(t.Artifacts[0].Parts) != 1 {
		return fmt.Errorf("want one artifact with one part, got %d artifacts", len(t.Artifacts))
	}
	p := t.Artifacts[0].Parts[0]
	wantKind := ""
	if w.v == a2a.V03 {
		wantKind = "text"
	}
	if p.Kind != wantKind || len(p.Text) < ResponseSize/2 || strings.Trim(p.Text, "x") != "" {
		return fmt.Errorf("the artifact's text part did not survive translation (kind %q, %d bytes)", p.Kind, len(p.Text))
	}
	return nil
}
