package a2a

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// SSEContentType is the media type of every A2A stream.
const SSEContentType = "text/event-stream"

// ErrSSEEventTooLarge means an upstream event exceeded the configured bound.
var ErrSSEEventTooLarge = errors.New("server-sent event exceeds the size limit")

// ErrSSEMalformed means a line held a lone CR. Browsers end a line there,
// this reader does not; rather than read an event differently from the
// caller, the stream is refused.
var ErrSSEMalformed = errors.New("server-sent event line holds a lone carriage return")

// SSEEvent is one event of a server-sent event stream.
type SSEEvent struct {
	// Raw is the event exactly as received, terminating blank line included,
	// so a pass-through can forward it unchanged.
	Raw   []byte
	ID    string
	Event string
	// Data is the joined data lines; empty for comment-only keep-alives.
	Data []byte
}

// KeepAlive reports whether the event carries no data: comments, or id and
// event fields alone, which SSE never dispatches. Such an event shows that
// the connection is alive, not that the stream is making progress, so it
// does not count as activity for an idle limit.
func (e SSEEvent) KeepAlive() bool { return len(e.Data) == 0 }

// SSEReader splits a stream into events. Lines may end in LF or CRLF; a
// lone CR is refused (ErrSSEMalformed).
type SSEReader struct {
	r   *bufio.Reader
	max int
	buf bytes.Buffer
}

// NewSSEReader reads events of at most maxEvent bytes each from r. The
// bufio buffer stays small (longer lines are read in pieces): idle streams
// are held by the thousand.
func NewSSEReader(r io.Reader, maxEvent int) *SSEReader {
	return &SSEReader{r: bufio.NewReaderSize(r, 512), max: maxEvent}
}

// Next returns the next event. At the end of the stream it returns io.EOF;
// a partial event cut off by the end is discarded with io.ErrUnexpectedEOF.
// The returned slices are valid until the next call.
func (s *SSEReader) Next() (SSEEvent, error) {
	s.buf.Reset()
	var ev SSEEvent
	var data [][]byte
	for {
		line, err := s.readLine()
		if err != nil {
			if err == io.EOF && s.buf.Len() > 0 {
				return SSEEvent{}, io.ErrUnexpectedEOF
			}
			return SSEEvent{}, err
		}
		content := bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if bytes.IndexByte(content, '\r') >= 0 {
			return SSEEvent{}, ErrSSEMalformed
		}
		if len(content) == 0 {
			if s.buf.Len() == len(line) {
				// A stray blank line between events: forward nothing.
				s.buf.Reset()
				continue
			}
			ev.Raw = s.buf.Bytes()
			ev.Data = bytes.Join(data, []byte("\n"))
			return ev, nil
		}
		field, value := content, []byte(nil)
		if i := bytes.IndexByte(content, ':'); i >= 0 {
			field, value = content[:i], content[i+1:]
			value = bytes.TrimPrefix(value, []byte(" "))
		}
		switch string(field) {
		case "data":
			data = append(data, value)
		case "id":
			ev.ID = string(value)
		case "event":
			ev.Event = string(value)
		}
	}
}

// readLine appends one line to the event buffer and returns it.
func (s *SSEReader) readLine() ([]byte, error) {
	start := s.buf.Len()
	for {
		chunk, err := s.r.ReadSlice('\n')
		if s.buf.Len()+len(chunk) > s.max {
			return nil, ErrSSEEventTooLarge
		}
		s.buf.Write(chunk)
		if err == nil {
			return s.buf.Bytes()[start:], nil
		}
		if err != bufio.ErrBufferFull {
			if err == io.EOF && s.buf.Len() > start {
				// The stream ended mid-line: the event is incomplete.
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
}

// WriteSSE writes one event with an optional id. data must not contain
// newlines (JSON encoders produce none); each line would need its own prefix.
func WriteSSE(w io.Writer, id string, data []byte) error {
	if bytes.ContainsAny(data, "\r\n") || !ValidSSEID(id) {
		return fmt.Errorf("sse id and data must be single lines, the id without NUL")
	}
	var b bytes.Buffer
	b.Grow(len(data) + len(id) + 16)
	if id != "" {
		b.WriteString("id: ")
		b.WriteString(id)
		b.WriteByte('\n')
	}
	b.WriteString("data: ")
	b.Write(data)
	b.WriteString("\n\n")
	_, err := w.Write(b.Bytes())
	return err
}
