package gateway_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/authz/flow"
	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// documentedErrors are the errors of the error table in docs/errors.md:
// the gateway's own and the protocol's whose causes the gateway adds.
var documentedErrors = []*a2a.Error{
	a2a.ErrUnauthenticated, a2a.ErrPermissionDenied, a2a.ErrRateLimited, a2a.ErrUnavailable,
	a2a.ErrUpstreamTimeout, a2a.ErrUpstreamFailed, a2a.ErrPayloadTooLarge, a2a.ErrInProgress,
	a2a.ErrIdempotencyConflict, a2a.ErrInvalidAgentResponse, flow.ErrChallengeExpired,
	a2a.ErrRequestTimeout, a2a.ErrHeadersTooLarge,
}

// errorTableFile documents the gateway's errors.
const errorTableFile = "../../docs/errors.md"

// errorRow is one row of the error table.
type errorRow struct {
	code, rpcStatus, restStatus int
	reason                      string
	rpcRetry, restRetry         bool
}

// readErrorTable reads the table of errorTableFile whose header is
// "| code | reason | JSON-RPC | REST | when |".
func readErrorTable(t *testing.T) map[int]errorRow {
	t.Helper()
	doc, err := os.ReadFile(errorTableFile)
	if err != nil {
		t.Fatal(err)
	}
	status := func(cell string) (int, bool) {
		cell = strings.TrimSpace(cell)
		num, rest, _ := strings.Cut(cell, " ")
		n, err := strconv.Atoi(num)
		if err != nil {
			t.Fatalf("%s: status cell %q", errorTableFile, cell)
		}
		return n, strings.TrimSpace(rest) == "+ `Retry-After`"
	}
	rows := map[int]errorRow{}
	in := false
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "| code | reason | JSON-RPC | REST | when |" {
			in = true
			continue
		}
		if !in || strings.HasPrefix(line, "|---") {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 5 {
			t.Fatalf("%s: row %q has %d cells", errorTableFile, line, len(cells))
		}
		var r errorRow
		if r.code, err = strconv.Atoi(strings.TrimSpace(cells[0])); err != nil {
			t.Fatalf("%s: code in %q", errorTableFile, line)
		}
		r.reason = strings.Trim(strings.TrimSpace(cells[1]), "`")
		r.rpcStatus, r.rpcRetry = status(cells[2])
		r.restStatus, r.restRetry = status(cells[3])
		if _, dup := rows[r.code]; dup {
			t.Fatalf("%s: code %d twice", errorTableFile, r.code)
		}
		rows[r.code] = r
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no error table with the JSON-RPC and REST status columns", errorTableFile)
	}
	return rows
}

// TestErrorTable: every error of the documented table gets the
// documented HTTP status on each binding, refused streaming methods
// included, and the table lists every such error: the documentation and
// the writers cannot drift apart.
func TestErrorTable(t *testing.T) {
	rows := readErrorTable(t)
	if len(rows) != len(documentedErrors) {
		t.Errorf("%s has %d rows, the gateway %d documented errors", errorTableFile, len(rows), len(documentedErrors))
	}
	id := json.RawMessage(`1`)
	for _, e := range documentedErrors {
		t.Run(e.Reason, func(t *testing.T) {
			row, ok := rows[e.Code]
			if !ok {
				t.Fatalf("%s lacks %d %s", errorTableFile, e.Code, e.Reason)
			}
			if row.reason != e.Reason {
				t.Fatalf("%s names %d %s, the code %s", errorTableFile, e.Code, row.reason, e.Reason)
			}
			if row.rpcRetry != row.restRetry {
				t.Fatalf("Retry-After documented on one binding only")
			}
			if row.rpcRetry {
				e = e.WithRetryAfter(time.Second)
			}
			for _, w := range []struct {
				binding string
				status  int
				write   func(http.ResponseWriter)
			}{
				{"JSON-RPC", row.rpcStatus, func(w http.ResponseWriter) { a2a.WriteRPCError(w, a2a.V10, id, e) }},
				{"JSON-RPC stream 1.0", row.rpcStatus, func(w http.ResponseWriter) { a2a.WriteRPCStreamError(w, a2a.V10, id, e) }},
				{"JSON-RPC stream 0.3", row.rpcStatus, func(w http.ResponseWriter) { a2a.WriteRPCStreamError(w, a2a.V03, id, e) }},
				{"REST 1.0", row.restStatus, func(w http.ResponseWriter) { a2a.WriteRESTError(w, a2a.V10, e) }},
				{"REST 0.3", row.restStatus, func(w http.ResponseWriter) { a2a.WriteRESTError(w, a2a.V03, e) }},
			} {
				rec := httptest.NewRecorder()
				w.write(rec)
				if rec.Code != w.status {
					t.Errorf("%s: HTTP %d, %s says %d", w.binding, rec.Code, errorTableFile, w.status)
				}
				if got := rec.Header().Get("Retry-After") != ""; got != row.rpcRetry {
					t.Errorf("%s: Retry-After %q, %s says %v", w.binding, rec.Header().Get("Retry-After"), errorTableFile, row.rpcRetry)
				}
			}
		})
	}
}

// rpcAnswer is the JSON-RPC response an answer carries: the body, or, for
// a refused streaming method, the data of the stream's one event.
func rpcAnswer(t *testing.T, resp *http.Response, body []byte) []byte {
	t.Helper()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), a2a.SSEContentType) {
		return body
	}
	rd := a2a.NewSSEReader(bytes.NewReader(body), len(body)+1)
	ev, err := rd.Next()
	if err != nil {
		t.Fatalf("refused stream without an event: %v: %q", err, body)
	}
	data := bytes.Clone(ev.Data)
	if _, err := rd.Next(); err != io.EOF {
		t.Fatalf("refused stream with more than its error event: %q", body)
	}
	return data
}
