package bench

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// maxRequestBytes bounds what the upstream reads from one request.
const maxRequestBytes = 64 << 10

// upstream is the agent every target is measured against. A send gets a
// Task padded to ResponseSize bytes: completed when the message names no
// context, a one-shot request; input-required in the task and context the
// message names, a conversation that expects another turn, so follow-ups
// to it stay valid. A streaming send gets one working-state event and then
// silence until the caller leaves, which is what an idle long-running task
// looks like on the wire.
type upstream struct {
	wire *wire
	seq  atomic.Uint64
	bufs sync.Pool // of *exchangeBufs
}

// exchangeBufs are reused across requests so the upstream's own garbage
// does not weigh on the measurement.
type exchangeBufs struct{ in, out []byte }

func newUpstream(w *wire) *upstream {
	u := &upstream{wire: w}
	u.bufs.New = func() any {
		return &exchangeBufs{in: make([]byte, 0, 1024), out: make([]byte, 0, 2*ResponseSize)}
	}
	return u
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST a JSON-RPC request", http.StatusMethodNotAllowed)
		return
	}
	bufs := u.bufs.Get().(*exchangeBufs)
	defer u.bufs.Put(bufs)
	body, err := readAllInto(bufs.in[:0], http.MaxBytesReader(w, r.Body, maxRequestBytes))
	bufs.in = body[:0]
	if err != nil {
		http.Error(w, "unreadable request body", http.StatusBadRequest)
		return
	}
	var req rpcRequest
	if err := json.Unmarshal(body, &req); err != nil || len(req.ID) == 0 {
		http.Error(w, "want a JSON-RPC request with an id", http.StatusBadRequest)
		return
	}
	refs := msgRefs{taskID: req.Params.Message.TaskID, contextID: req.Params.Message.ContextID}
	if !plainID(refs.taskID) || !plainID(refs.contextID) {
		http.Error(w, "task and context ids must be at most 128 letters, digits, '-', '_' or '.'", http.StatusBadRequest)
		return
	}
	seq := u.seq.Add(1)
	switch req.Method {
	case u.wire.send:
		state := u.wire.completed
		if refs.contextID != "" {
			state = u.wire.inputRequired
		}
		out := u.wire.appendTaskResult(bufs.out[:0], req.ID, seq, refs, state, true)
		bufs.out = out[:0]
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(out)))
		_, _ = w.Write(out)
	case u.wire.stream:
		u.serveStream(w, r, req.ID, seq)
	default:
		http.Error(w, "the benchmark agent answers only sends and streaming sends", http.StatusNotFound)
	}
}

func (u *upstream) serveStream(w http.ResponseWriter, r *http.Request, id json.RawMessage, seq uint64) {
	w.Header().Set("Content-Type", a2a.SSEContentType)
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	event := u.wire.appendTaskResult(nil, id, seq, msgRefs{}, u.wire.working, false)
	if err := a2a.WriteSSE(w, "", event); err != nil {
		return
	}
	if err := http.NewResponseController(w).Flush(); err != nil {
		return
	}
	<-r.Context().Done()
}

// readAllInto reads r to the end, appending to buf.
func readAllInto(buf []byte, r io.Reader) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}
