package a2a

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestWriteSSEWithID(t *testing.T) {
	const data = `data: {"jsonrpc":"2.0","id":1,"result":{}}`
	cases := []struct {
		name, raw, want string
	}{
		{"no id", data + "\n\n", "id: ev-1\n" + data + "\n\n"},
		{"upstream id replaced", "id: 7\n" + data + "\n\n", "id: ev-1\n" + data + "\n\n"},
		{"id without a space or a value", "id:7\nid\n" + data + "\n\n", "id: ev-1\n" + data + "\n\n"},
		{"CRLF kept", "id: 7\r\nevent: message\r\n" + data + "\r\n\r\n", "id: ev-1\nevent: message\r\n" + data + "\r\n\r\n"},
		{"other fields and comments kept in place", "retry: 500\n: note\nid: 7\ndata: {\"a\":\ndata: 1}\n\n", "id: ev-1\nretry: 500\n: note\ndata: {\"a\":\ndata: 1}\n\n"},
		{"fields that only start like id kept", "idx: 1\nid2: 2\n" + data + "\n\n", "id: ev-1\nidx: 1\nid2: 2\n" + data + "\n\n"},
		{"id in the data is data", `data: {"id: 3"}` + "\n\n", "id: ev-1\n" + `data: {"id: 3"}` + "\n\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteSSEWithID(&b, []byte(tc.raw), "ev-1"); err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Fatalf("wrote %q, want %q", b.String(), tc.want)
			}
			ev, err := NewSSEReader(&b, 4<<10).Next()
			if err != nil || ev.ID != "ev-1" {
				t.Fatalf("read back id %q, %v", ev.ID, err)
			}
		})
	}
}

// TestSSEIDRefusesInjection: ids come from hashes today, but an id that
// could end its line would let its source forge fields, so both writers
// refuse it before writing anything.
func TestSSEIDRefusesInjection(t *testing.T) {
	for _, id := range []string{"1\ndata: {\"injected\":true}", "1\rdata: x", "1\r\n", "a\x00b"} {
		if ValidSSEID(id) {
			t.Errorf("ValidSSEID(%q) = true", id)
		}
		var b bytes.Buffer
		if err := WriteSSEWithID(&b, []byte("data: {}\n\n"), id); !errors.Is(err, ErrSSEID) || b.Len() != 0 {
			t.Errorf("WriteSSEWithID(%q): %v, wrote %q", id, err, b.String())
		}
		if err := WriteSSE(&b, id, []byte("{}")); err == nil || b.Len() != 0 {
			t.Errorf("WriteSSE(%q): %v, wrote %q", id, err, b.String())
		}
	}
	if !ValidSSEID("") || !ValidSSEID("7Yc-_x:1") {
		t.Error("plain ids refused")
	}
}

func TestWriteSSEWithIDReportsWriteErrors(t *testing.T) {
	boom := errors.New("broken pipe")
	for _, raw := range []string{"data: {}\n\n", "id: 1\ndata: {}\n\n"} {
		if err := WriteSSEWithID(failingWriter{boom}, []byte(raw), "x"); !errors.Is(err, boom) {
			t.Errorf("%q: error %v, want %v", raw, err, boom)
		}
	}
	// The id line went out, the event did not.
	w := &limitedWriter{left: len("id: x\n")}
	if err := WriteSSEWithID(w, []byte("id: 1\ndata: {}\n\n"), "x"); err == nil {
		t.Error("a failed event write was not reported")
	}
}

type limitedWriter struct{ left int }

func (l *limitedWriter) Write(p []byte) (int, error) {
	if len(p) > l.left {
		return 0, io.ErrShortWrite
	}
	l.left -= len(p)
	return len(p), nil
}

func TestWriteSSEWithIDStreamRoundTrip(t *testing.T) {
	in := "id: a\ndata: 1\n\n: ping\n\ndata: 2\n\nid: c\r\ndata: 3\r\n\r\n"
	rd := NewSSEReader(strings.NewReader(in), 4<<10)
	var out bytes.Buffer
	for i := 0; ; i++ {
		ev, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(ev.Data) == 0 {
			out.Write(ev.Raw)
			continue
		}
		if err := WriteSSEWithID(&out, ev.Raw, "n"+string(ev.Data)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := readAllEvents(t, NewSSEReader(&out, 4<<10))
	if err != io.EOF {
		t.Fatal(err)
	}
	checkEvents(t, got, []sseWant{
		{"id: n1\ndata: 1\n\n", "n1", "", "1"},
		{": ping\n\n", "", "", ""},
		{"id: n2\ndata: 2\n\n", "n2", "", "2"},
		{"id: n3\ndata: 3\r\n\r\n", "n3", "", "3"},
	})
}
