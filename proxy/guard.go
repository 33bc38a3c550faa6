package proxy

import (
	"io"
	"net/http"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// Guard applies the public listener's request limits before next, for the
// gateway's own endpoints on that listener (ServeHTTP applies them itself):
// a header over limits.max_header_bytes is refused, and a request body
// must arrive within limits.body_timeout.
func (g *Gateway) Guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { g.guard(w, r, next.ServeHTTP) })
}

func (g *Gateway) guard(w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
	if _, ok := r.Body.(*timedBody); ok {
		next(w, r) // guarded already
		return
	}
	g.timeBody(w, r)
	// An agent's requests are refused by classify, in their binding's shape.
	if a, _ := g.mount(r); a == nil {
		if e := g.checkHeader(r); e != nil {
			g.log.Info("request refused", "code", e.Code, "reason", e.Reason, "detail", e.Message)
			closeUnread(w, r)
			a2a.WriteRESTError(w, a2a.RESTVersion(r), e)
			return
		}
	}
	next(w, r)
}

// timeBody bounds the reading of the request's body by
// limits.body_timeout.
func (g *Gateway) timeBody(w http.ResponseWriter, r *http.Request) {
	b := &timedBody{ReadCloser: r.Body}
	if r.ContentLength != 0 {
		// The deadline also bounds what net/http reads of a body the
		// handler left unread, before it answers.
		rc := http.NewResponseController(w)
		if rc.SetReadDeadline(time.Now().Add(g.limits.BodyTimeout.D())) == nil {
			b.rc = rc
		}
	}
	r.Body = b
}

// timedBody lifts the body's read deadline once the body has been read to
// its end: a stream answering it may last as long as its task does. It then
// lets go of net/http's body, which holds the whole connection (buffers
// included) and would keep it alive for as long as a handed-off stream
// keeps the request (handoff.go); net/http closes that body itself.
type timedBody struct {
	io.ReadCloser
	rc  *http.ResponseController // nil: no deadline was set
	eof bool
}

func (b *timedBody) Read(p []byte) (int, error) {
	if b.eof {
		return 0, io.EOF
	}
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.eof = true
		b.ReadCloser = http.NoBody
		if b.rc != nil {
			_ = b.rc.SetReadDeadline(time.Time{})
			b.rc = nil
		}
	}
	return n, err
}

// closeUnread makes an answer close the connection when the request's
// body was not read to its end: net/http would otherwise read the rest,
// before answering and after, holding the connection for a body nobody
// will use.
func closeUnread(w http.ResponseWriter, r *http.Request) {
	if b, ok := r.Body.(*timedBody); ok && b.rc != nil && !b.eof {
		w.Header().Set("Connection", "close")
		// Nothing reads the body after this answer but net/http's final
		// drain, which this makes fail at once.
		_ = b.rc.SetReadDeadline(time.Now())
	}
}

// checkHeader refuses a request header over limits.max_header_bytes: with
// 401 when it carries a credential too large to be accepted (see
// Options.OversizedCredential), else with HEADERS_TOO_LARGE.
func (g *Gateway) checkHeader(r *http.Request) *a2a.Error {
	if headerBytes(r) <= g.limits.MaxHeaderBytes {
		return nil
	}
	if g.oversizedCredential != nil {
		if e := g.oversizedCredential(r.Header); e != nil {
			return e
		}
	}
	return a2a.ErrHeadersTooLarge
}

// headerBytes is the size of a request's header as sent, counted as
// net/http counts it against MaxHeaderBytes: the request line and every
// field with its separators.
func headerBytes(r *http.Request) int {
	size := len(r.Method) + len(r.RequestURI) + len(r.Proto) + len("  \r\n")
	if r.Host != "" {
		size += len("Host: \r\n") + len(r.Host)
	}
	for k, vs := range r.Header {
		for _, v := range vs {
			size += len(k) + len(v) + len(": \r\n")
		}
	}
	return size
}
