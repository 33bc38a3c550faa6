package a2a

import (
	"bytes"
	"errors"
	"io"
	"strings"
)

// ErrSSEID means an event id cannot be sent as an SSE id field.
var ErrSSEID = errors.New("sse id must be one line without NUL")

// ValidSSEID reports whether id can be written as an SSE id field: a line
// break would end the field and start another one the sender never meant
// (a forged data line), and browsers ignore an id holding NUL.
func ValidSSEID(id string) bool {
	return !strings.ContainsAny(id, "\r\n\x00")
}

// WriteSSEWithID writes raw, one complete event as SSEReader returned it,
// with id as its only id field: the event's own id lines are left out so
// that the caller's Last-Event-ID is the one given. Every other line
// (event, data, retry, comments) is written as received.
func WriteSSEWithID(w io.Writer, raw []byte, id string) error {
	if !ValidSSEID(id) {
		return ErrSSEID
	}
	if _, err := io.WriteString(w, "id: "+id+"\n"); err != nil {
		return err
	}
	// Runs of lines that are not id fields are written in one piece.
	start := 0
	for pos := 0; pos < len(raw); {
		end := len(raw)
		if i := bytes.IndexByte(raw[pos:], '\n'); i >= 0 {
			end = pos + i + 1
		}
		if isIDField(raw[pos:end]) {
			if _, err := w.Write(raw[start:pos]); err != nil {
				return err
			}
			start = end
		}
		pos = end
	}
	_, err := w.Write(raw[start:])
	return err
}

// isIDField reports whether line (with its line ending) is an id field,
// with or without a value.
func isIDField(line []byte) bool {
	field := bytes.TrimRight(line, "\r\n")
	if i := bytes.IndexByte(field, ':'); i >= 0 {
		field = field[:i]
	}
	return string(field) == "id"
}

// LastEventIDHeader carries the id of the last event a reconnecting
// client of a stream received.
const LastEventIDHeader = "Last-Event-ID"
