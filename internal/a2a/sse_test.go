package a2a

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// sseWant is one expected event: raw is the exact bytes of the event in the
// stream, terminating blank line included.
type sseWant struct {
	raw, id, event, data string
}

type sseCase struct {
	name   string
	stream string
	want   []sseWant
	// end is the error after the last event: io.EOF for a clean end.
	end error
}

func sseCases() []sseCase {
	statusV10 := `{"jsonrpc":"2.0","id":"req-1","result":{"statusUpdate":{"taskId":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_WORKING"}}}}`
	taskV10 := `{"jsonrpc":"2.0","id":"req-1","result":{"task":{"id":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_SUBMITTED"}}}}`
	finalV03 := `{"jsonrpc":"2.0","id":1,"result":{"kind":"status-update","taskId":"task-1","contextId":"ctx-1","status":{"state":"completed"},"final":true}}`
	return []sseCase{
		{"LF, a2a-js style", "data: " + taskV10 + "\n\n" + "data: " + statusV10 + "\n\n", []sseWant{
			{"data: " + taskV10 + "\n\n", "", "", taskV10},
			{"data: " + statusV10 + "\n\n", "", "", statusV10},
		}, io.EOF},
		{"LF with id lines, a2a-go style", "id: 1\ndata: " + taskV10 + "\n\nid: 2\ndata: " + finalV03 + "\n\n", []sseWant{
			{"id: 1\ndata: " + taskV10 + "\n\n", "1", "", taskV10},
			{"id: 2\ndata: " + finalV03 + "\n\n", "2", "", finalV03},
		}, io.EOF},
		{"CRLF", "id: 7\r\ndata: " + statusV10 + "\r\n\r\ndata: {}\r\n\r\n", []sseWant{
			{"id: 7\r\ndata: " + statusV10 + "\r\n\r\n", "7", "", statusV10},
			{"data: {}\r\n\r\n", "", "", "{}"},
		}, io.EOF},
		{"mixed line endings", "data: a\r\ndata: b\n\r\n", []sseWant{
			{"data: a\r\ndata: b\n\r\n", "", "", "a\nb"},
		}, io.EOF},
		{"multi-line data", "data: {\"a\":\ndata: 1}\n\n", []sseWant{
			{"data: {\"a\":\ndata: 1}\n\n", "", "", "{\"a\":\n1}"},
		}, io.EOF},
		{"keep-alive comments", ": keep-alive\n\ndata: x\n\n: ping\n\n", []sseWant{
			{": keep-alive\n\n", "", "", ""},
			{"data: x\n\n", "", "", "x"},
			{": ping\n\n", "", "", ""},
		}, io.EOF},
		{"comment inside an event", "id: 3\n: not data\ndata: x\n\n", []sseWant{
			{"id: 3\n: not data\ndata: x\n\n", "3", "", "x"},
		}, io.EOF},
		{"event field, a2a-js error event", "event: error\ndata: {\"code\":-32603,\"message\":\"boom\"}\n\n", []sseWant{
			{"event: error\ndata: {\"code\":-32603,\"message\":\"boom\"}\n\n", "", "error", `{"code":-32603,"message":"boom"}`},
		}, io.EOF},
		{"retry and unknown fields are kept in Raw only", "retry: 1000\nfoo: bar\ndata: x\n\n", []sseWant{
			{"retry: 1000\nfoo: bar\ndata: x\n\n", "", "", "x"},
		}, io.EOF},
		{"no space after the colon", "id:9\ndata:x\n\n", []sseWant{
			{"id:9\ndata:x\n\n", "9", "", "x"},
		}, io.EOF},
		{"only one leading space is removed", "data:  x \n\n", []sseWant{
			{"data:  x \n\n", "", "", " x "},
		}, io.EOF},
		{"field without a colon", "data\ndata: x\n\n", []sseWant{
			{"data\ndata: x\n\n", "", "", "\nx"},
		}, io.EOF},
		{"empty data line", "data:\n\n", []sseWant{
			{"data:\n\n", "", "", ""},
		}, io.EOF},
		{"colons in the value", "data: {\"url\":\"https://x:8443/a\"}\n\n", []sseWant{
			{"data: {\"url\":\"https://x:8443/a\"}\n\n", "", "", `{"url":"https://x:8443/a"}`},
		}, io.EOF},
		{"stray blank lines are skipped", "\n\r\n\ndata: x\n\n\n\ndata: y\n\n\n", []sseWant{
			{"data: x\n\n", "", "", "x"},
			{"data: y\n\n", "", "", "y"},
		}, io.EOF},
		{"empty stream", "", nil, io.EOF},
		{"cut after a data line", "data: x\n\ndata: " + statusV10 + "\n", []sseWant{
			{"data: x\n\n", "", "", "x"},
		}, io.ErrUnexpectedEOF},
		{"cut mid-line", "data: x\n\ndata: {\"jsonrpc\":\"2.0\",\"res", []sseWant{
			{"data: x\n\n", "", "", "x"},
		}, io.ErrUnexpectedEOF},
		{"cut after a comment", ": ping\n", nil, io.ErrUnexpectedEOF},
		{"cut before the blank line, CRLF", "data: x\r\n", nil, io.ErrUnexpectedEOF},
	}
}

func readAllEvents(t *testing.T, r *SSEReader) ([]SSEEvent, error) {
	t.Helper()
	var evs []SSEEvent
	for range 10000 {
		ev, err := r.Next()
		if err != nil {
			return evs, err
		}
		// Copy: the slices are only valid until the next call.
		evs = append(evs, SSEEvent{Raw: bytes.Clone(ev.Raw), ID: ev.ID, Event: ev.Event, Data: bytes.Clone(ev.Data)})
	}
	t.Fatal("reader did not terminate")
	return nil, nil
}

func checkEvents(t *testing.T, got []SSEEvent, want []sseWant) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d events, want %d: %q", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if string(g.Raw) != w.raw {
			t.Errorf("event %d Raw = %q, want %q", i, g.Raw, w.raw)
		}
		if g.ID != w.id || g.Event != w.event || string(g.Data) != w.data {
			t.Errorf("event %d = {id %q, event %q, data %q}, want {id %q, event %q, data %q}",
				i, g.ID, g.Event, g.Data, w.id, w.event, w.data)
		}
	}
}

func TestSSEReader(t *testing.T) {
	for _, tc := range sseCases() {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readAllEvents(t, NewSSEReader(strings.NewReader(tc.stream), 64<<10))
			if !errors.Is(err, tc.end) {
				t.Errorf("end = %v, want %v", err, tc.end)
			}
			checkEvents(t, got, tc.want)
		})
	}
}

// A pass-through forwards Raw unchanged, so for a stream without stray blank
// lines the events concatenated must be the stream itself.
func TestSSEReaderRawIsTheInput(t *testing.T) {
	for _, tc := range sseCases() {
		if tc.end != io.EOF || strings.Contains(tc.name, "stray") {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			got, _ := readAllEvents(t, NewSSEReader(strings.NewReader(tc.stream), 64<<10))
			var joined []byte
			for _, ev := range got {
				joined = append(joined, ev.Raw...)
			}
			if string(joined) != tc.stream {
				t.Errorf("Raw concatenation %q, stream %q", joined, tc.stream)
			}
		})
	}
}

// io.Reader that hands out at most n bytes per Read, to cross every buffer
// boundary of the reader.
type trickleReader struct {
	r io.Reader
	n int
}

func (t *trickleReader) Read(p []byte) (int, error) {
	if len(p) > t.n {
		p = p[:t.n]
	}
	return t.r.Read(p)
}

func TestSSEReaderTrickle(t *testing.T) {
	for _, tc := range sseCases() {
		for _, n := range []int{1, 2, 3, 7} {
			t.Run(fmt.Sprintf("%s/%d bytes per read", tc.name, n), func(t *testing.T) {
				got, err := readAllEvents(t, NewSSEReader(&trickleReader{strings.NewReader(tc.stream), n}, 64<<10))
				if !errors.Is(err, tc.end) {
					t.Errorf("end = %v, want %v", err, tc.end)
				}
				checkEvents(t, got, tc.want)
			})
		}
	}
}

func TestSSEReaderSizeLimit(t *testing.T) {
	long := strings.Repeat("x", 10<<10) // longer than the reader's line buffer
	cases := []struct {
		name   string
		stream string
		max    int
		events int   // events read before the end
		end    error // error that ends the read
	}{
		{"event of exactly the limit", "data: 12345\n\n", len("data: 12345\n\n"), 1, io.EOF},
		{"event one byte over the limit", "data: 12345\n\n", len("data: 12345\n\n") - 1, 0, ErrSSEEventTooLarge},
		{"a single line over the limit", "data: " + long + "\n\n", 4 << 10, 0, ErrSSEEventTooLarge},
		{"many lines over the limit", strings.Repeat("data: 0123456789\n", 100) + "\n", 1 << 10, 0, ErrSSEEventTooLarge},
		{"line longer than the buffer, under the limit", "data: " + long + "\n\n", 64 << 10, 1, io.EOF},
		{"small events pass, the big one fails", "data: a\n\ndata: " + long + "\n\ndata: b\n\n", 1 << 10, 1, ErrSSEEventTooLarge},
		{"unterminated line over the limit", "data: " + long, 1 << 10, 0, ErrSSEEventTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readAllEvents(t, NewSSEReader(strings.NewReader(tc.stream), tc.max))
			if !errors.Is(err, tc.end) {
				t.Errorf("end = %v, want %v", err, tc.end)
			}
			if len(got) != tc.events {
				t.Errorf("read %d events, want %d", len(got), tc.events)
			}
			for _, ev := range got {
				if len(ev.Raw) > tc.max {
					t.Errorf("event of %d bytes passed a limit of %d", len(ev.Raw), tc.max)
				}
			}
		})
	}
}

func TestSSEReaderPropagatesReadErrors(t *testing.T) {
	boom := errors.New("connection reset by peer")
	pr, pw := io.Pipe()
	go func() {
		_, _ = io.WriteString(pw, "data: x\n\ndata: partial")
		pw.CloseWithError(boom)
	}()
	r := NewSSEReader(pr, 1<<10)
	if ev, err := r.Next(); err != nil || string(ev.Data) != "x" {
		t.Fatalf("first event %q, %v", ev.Data, err)
	}
	if _, err := r.Next(); !errors.Is(err, boom) {
		t.Fatalf("error %v, want %v", err, boom)
	}
}

// Events must be delivered as soon as they are complete, not when the
// buffer fills: the writer only sends the next event after the reader saw
// the previous one, so a reader that waited for more bytes would deadlock
// (caught by the hang guard).
func TestSSEReaderSlowWriter(t *testing.T) {
	pr, pw := io.Pipe()
	events := []string{
		`{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_SUBMITTED"}}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}}`,
	}
	seen := make(chan struct{}, len(events)) // buffered: a writer that gave up must not block the test
	writeErr := make(chan error, 1)
	go func() {
		defer pw.Close()
		for i, data := range events {
			frame := fmt.Sprintf("id: %d\ndata: %s\n\n", i, data)
			// Split each event across writes, the way a proxy may flush it.
			for _, part := range []string{frame[:5], frame[5 : len(frame)-1], frame[len(frame)-1:]} {
				if _, err := io.WriteString(pw, part); err != nil {
					writeErr <- err
					return
				}
			}
			select {
			case <-seen:
			case <-time.After(30 * time.Second):
				writeErr <- errors.New("reader never acknowledged the event")
				return
			}
		}
		writeErr <- nil
	}()

	r := NewSSEReader(pr, 1<<10)
	for i, data := range events {
		type result struct {
			ev  SSEEvent
			err error
		}
		got := make(chan result, 1)
		go func() {
			ev, err := r.Next()
			got <- result{ev, err}
		}()
		select {
		case res := <-got:
			if res.err != nil {
				t.Fatalf("event %d: %v", i, res.err)
			}
			if res.ev.ID != fmt.Sprint(i) || string(res.ev.Data) != data {
				t.Fatalf("event %d = id %q data %q", i, res.ev.ID, res.ev.Data)
			}
		case <-time.After(30 * time.Second):
			pr.CloseWithError(errors.New("test timed out"))
			t.Fatalf("event %d was not delivered before the next one was written", i)
		}
		seen <- struct{}{}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("after the last event: %v, want io.EOF", err)
	}
	if err := <-writeErr; err != nil {
		t.Error(err)
	}
}

func TestWriteSSERoundTrip(t *testing.T) {
	type ev struct{ id, data string }
	events := []ev{
		{"", `{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"t","contextId":"c","status":{"state":"submitted"}}}`},
		{"1", `{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}}`},
		{"task-1:42", `{"emoji":"✓","escaped":"\u2028 \n"}`},
		{"", ``},
		{"x", ` leading space`},
	}
	var stream bytes.Buffer
	for _, e := range events {
		if err := WriteSSE(&stream, e.id, []byte(e.data)); err != nil {
			t.Fatalf("WriteSSE(%q, %q): %v", e.id, e.data, err)
		}
	}
	written := stream.String()
	got, err := readAllEvents(t, NewSSEReader(&stream, 4<<10))
	if err != io.EOF {
		t.Fatalf("end = %v, want io.EOF", err)
	}
	if len(got) != len(events) {
		t.Fatalf("read %d events, wrote %d", len(got), len(events))
	}
	var joined strings.Builder
	for i, e := range events {
		if got[i].ID != e.id || string(got[i].Data) != e.data || got[i].Event != "" {
			t.Errorf("event %d = {id %q, data %q}, want {id %q, data %q}", i, got[i].ID, got[i].Data, e.id, e.data)
		}
		joined.Write(got[i].Raw)
	}
	if joined.String() != written {
		t.Errorf("Raw concatenation %q, written %q", joined.String(), written)
	}
}

func TestWriteSSERefusesLineBreaks(t *testing.T) {
	cases := []struct {
		name, id, data string
	}{
		{"LF in data", "", "{\n}"},
		{"CR in data", "", "{\r}"},
		{"CRLF in data", "1", "a\r\nb"},
		// An id is echoed from upstream events and Last-Event-ID headers; a
		// line break in it would let that source inject a data line.
		{"LF in id", "1\ndata: {\"injected\":true}", "{}"},
		{"CR in id", "1\rdata: {\"injected\":true}", "{}"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteSSE(&b, tc.id, []byte(tc.data)); err == nil {
				t.Fatalf("wrote %q", b.String())
			}
			if b.Len() != 0 {
				t.Errorf("wrote %q before refusing", b.String())
			}
		})
	}
}

type failingWriter struct{ err error }

func (f failingWriter) Write([]byte) (int, error) { return 0, f.err }

func TestWriteSSEReportsWriteErrors(t *testing.T) {
	boom := errors.New("broken pipe")
	if err := WriteSSE(failingWriter{boom}, "1", []byte("{}")); !errors.Is(err, boom) {
		t.Errorf("error %v, want %v", err, boom)
	}
}

func BenchmarkSSEReader(b *testing.B) {
	var stream bytes.Buffer
	const events = 100
	for i := range events {
		data := fmt.Sprintf(`{"jsonrpc":"2.0","id":"3f1c2a9e-1b7d-4c55-9a0e-2f6d8b7c1a01","result":{"statusUpdate":{"taskId":"0c9e8d7f-6a5b-4c3d-2e1f-0a9b8c7d6e5f","contextId":"5a0f3c1e-7d2b-4e9a-8c6f-1b2d3e4f5a6b","status":{"state":"TASK_STATE_WORKING","message":{"messageId":"m-%d","role":"ROLE_AGENT","parts":[{"text":"step %d of %d"}]},"timestamp":"2026-01-02T03:04:05Z"}}}}`, i, i, events)
		if err := WriteSSE(&stream, fmt.Sprint(i), []byte(data)); err != nil {
			b.Fatal(err)
		}
		if i%10 == 0 {
			stream.WriteString(": keep-alive\n\n")
		}
	}
	input := stream.Bytes()
	b.SetBytes(int64(len(input)))
	b.ReportAllocs()
	for b.Loop() {
		r := NewSSEReader(bytes.NewReader(input), 64<<10)
		n := 0
		for {
			ev, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if len(ev.Data) > 0 {
				n++
			}
		}
		if n != events {
			b.Fatalf("read %d events, want %d", n, events)
		}
	}
}

func TestSSEReaderRefusesLoneCR(t *testing.T) {
	r := NewSSEReader(strings.NewReader("data: {\"a\":1}\rdata: {\"b\":2}\n\n"), 1<<10)
	if _, err := r.Next(); !errors.Is(err, ErrSSEMalformed) {
		t.Fatalf("want ErrSSEMalformed, got %v", err)
	}
	r = NewSSEReader(strings.NewReader("data: ok\r\n\r\n"), 1<<10)
	if ev, err := r.Next(); err != nil || string(ev.Data) != "ok" {
		t.Fatalf("CRLF stream: %q, %v", ev.Data, err)
	}
}

// TestSSEKeepAlive: only an event carrying data is activity; comments and
// fields without data are keep-alives, however they are spelled.
func TestSSEKeepAlive(t *testing.T) {
	cases := []struct {
		stream    string
		keepAlive bool
	}{
		{": keep-alive\n\n", true},
		{":\n\n", true},
		{": a\r\n: b\r\n\r\n", true},
		{"id: 7\n\n", true},
		{"event: ping\n: x\n\n", true},
		{"retry: 1000\n\n", true},
		{"data: {}\n\n", false},
		{": first\ndata: {}\n\n", false},
		{"data:x\n\n", false},
	}
	for _, tc := range cases {
		ev, err := NewSSEReader(strings.NewReader(tc.stream), 1024).Next()
		if err != nil {
			t.Fatalf("%q: %v", tc.stream, err)
		}
		if ev.KeepAlive() != tc.keepAlive {
			t.Errorf("%q: KeepAlive() = %v, want %v", tc.stream, ev.KeepAlive(), tc.keepAlive)
		}
	}
}
