package dedupe

import (
	"bytes"
	"net/http"
	"strings"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/proxy"
)

// teeWriter passes the answer to the caller and keeps a bounded copy.
type teeWriter struct {
	http.ResponseWriter
	max      int
	code     int
	buf      bytes.Buffer
	overflow bool
	// dropped: the answer no longer needs keeping (see stopKeeping).
	dropped bool
}

func (t *teeWriter) WriteHeader(code int) {
	if t.code == 0 {
		t.code = code
	}
	t.ResponseWriter.WriteHeader(code)
}

func (t *teeWriter) Write(b []byte) (int, error) {
	if t.code == 0 {
		t.code = http.StatusOK
	}
	if !t.overflow && !t.dropped {
		if t.buf.Len()+len(b) > t.max {
			t.overflow = true
			t.buf.Reset()
		} else {
			t.buf.Write(b)
		}
	}
	return t.ResponseWriter.Write(b)
}

// stopKeeping drops the copy kept so far and keeps no more.
func (t *teeWriter) stopKeeping() {
	t.dropped = true
	t.buf = bytes.Buffer{}
}

// Unwrap lets http.ResponseController reach Flush.
func (t *teeWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

func (t *teeWriter) status() int {
	if t.code == 0 {
		return http.StatusOK
	}
	return t.code
}

// streamProbe passes an event stream through to the caller and holds back
// anything else, so the caller of a subscribe can fall back on an error.
type streamProbe struct {
	w        http.ResponseWriter
	header   http.Header
	streamed bool
	decided  bool
	// refused is set when the answer's first event is an error: a stream
	// that only carries the refusal is held back too.
	refused bool
}

func (p *streamProbe) Header() http.Header {
	if p.streamed {
		return p.w.Header()
	}
	if p.header == nil {
		p.header = http.Header{}
	}
	return p.header
}

func (p *streamProbe) WriteHeader(code int) {
	if p.decided {
		return
	}
	p.decided = true
	if code == http.StatusOK && !p.refused && (strings.HasPrefix(p.header.Get("Content-Type"), a2a.SSEContentType) || proxy.GRPCStreamStarted(p.header)) {
		p.streamed = true
		for k, v := range p.header {
			p.w.Header()[k] = v
		}
		p.w.Header().Set(ReplayHeader, "true")
		p.w.WriteHeader(code)
	}
}

func (p *streamProbe) Write(b []byte) (int, error) {
	if !p.decided {
		p.WriteHeader(http.StatusOK)
	}
	if p.streamed {
		return p.w.Write(b)
	}
	return len(b), nil
}

// Unwrap lets http.ResponseController reach Flush once streaming.
func (p *streamProbe) Unwrap() http.ResponseWriter {
	if p.streamed {
		return p.w
	}
	return nil
}

// bufferWriter captures a whole answer.
type bufferWriter struct {
	header http.Header
	status int
	buf    bytes.Buffer
}

func (b *bufferWriter) Header() http.Header { return b.header }
func (b *bufferWriter) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}
func (b *bufferWriter) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.buf.Write(p)
}

func (b *bufferWriter) copyTo(w http.ResponseWriter) {
	for k, v := range b.header {
		w.Header()[k] = v
	}
	w.WriteHeader(b.status)
	_, _ = w.Write(b.buf.Bytes())
}
