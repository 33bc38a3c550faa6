package proxy

import (
	"bytes"
	"net/http"
)

// Recorder captures a non-streaming answer, for stages that read the
// agent's answer before deciding what the caller sees (a filtered list, a
// rewritten card).
type Recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{header: http.Header{}} }

// Header is the answer's header.
func (r *Recorder) Header() http.Header { return r.header }

// Write records body bytes; the status is 200 unless one was written.
func (r *Recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}

// WriteHeader records the first status written.
func (r *Recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

// Status is the status recorded, 0 when nothing was written.
func (r *Recorder) Status() int { return r.status }

// CopyTo writes the recorded answer to w as it was recorded.
func (r *Recorder) CopyTo(w http.ResponseWriter) {
	for k, v := range r.header {
		w.Header()[k] = v
	}
	w.WriteHeader(r.status)
	_, _ = w.Write(r.body.Bytes())
}
