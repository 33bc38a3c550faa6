package bench

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// TestWireSpeaksEachVersion has the gateway's own strict readers read
// what the harness sends and answers in each version: a request the
// classifier reads as that version's send, and an upstream answer the
// answer reader accepts in that version, exactly ResponseSize bytes.
func TestWireSpeaksEachVersion(t *testing.T) {
	for _, v := range []a2a.Version{a2a.V10, a2a.V03} {
		t.Run(v.String(), func(t *testing.T) {
			w, err := newWire(v)
			if err != nil {
				t.Fatal(err)
			}
			conv := msgRefs{taskID: "task-1", contextID: "ctx-a"}
			other := a2a.Form{Version: a2a.V03, Binding: a2a.BindingJSONRPC}
			if v == a2a.V03 {
				other.Version = a2a.V10
			}
			for _, refs := range []msgRefs{{}, conv} {
				req := w.appendRequest(nil, w.send, "m-", 3, refs)
				op, aerr := a2a.ClassifyRPC(req, v, w.version != "")
				if aerr != nil {
					t.Fatalf("request refused: %v", aerr)
				}
				if op.Version != v || op.Method != a2a.MethodSend || op.TaskID != refs.taskID || op.ContextID != refs.contextID {
					t.Fatalf("request read as %v %v task %q context %q", op.Version, op.Method, op.TaskID, op.ContextID)
				}
				// The bridged rows measure blocking sends in both versions.
				up, aerr := a2a.TranslateRequest(op, nil, req, other, op.RPCID)
				if aerr != nil {
					t.Fatalf("request not translated to %v: %v", other, aerr)
				}
				if blocking := !bytes.Contains(up.Body, []byte(`"returnImmediately":true`)) && (other.Version == a2a.V10 || bytes.Contains(up.Body, []byte(`"blocking":true`))); !blocking {
					t.Fatalf("the send does not block in %v: %s", other, up.Body)
				}
				for _, pad := range []bool{true, false} {
					body := w.appendTaskResult(nil, op.RPCID, 9, refs, w.inputRequired, pad)
					if pad && len(body) != ResponseSize {
						t.Fatalf("answer of %d bytes, want %d", len(body), ResponseSize)
					}
					ev, _, err := a2a.ReadAnswer(op, body)
					if err != nil {
						t.Fatalf("answer (pad %v) refused: %v\n%s", pad, err, body)
					}
					if ev.Kind != a2a.EventTask || ev.State != a2a.StateInputRequired || refs.taskID != "" && ev.TaskID != refs.taskID {
						t.Fatalf("answer read as %+v", ev)
					}
				}
			}
		})
	}
	if _, err := newWire(a2a.VLegacy); err == nil {
		t.Fatal("a wire for the pre-0.2 dialect, which no row speaks")
	}
}

// TestCheckTranslated checks the content check of translated answers on
// answers of the right version (an upstream's, the shape a translation
// must arrive at) and on each way one can be wrong.
func TestCheckTranslated(t *testing.T) {
	w03, err := newWire(a2a.V03)
	if err != nil {
		t.Fatal(err)
	}
	w10, err := newWire(a2a.V10)
	if err != nil {
		t.Fatal(err)
	}
	conv := msgRefs{taskID: "task-9", contextID: "load-1-conversation"}
	good03 := w03.appendTaskResult(nil, []byte("7"), 7, msgRefs{}, w03.completed, true)
	good10 := w10.appendTaskResult(nil, []byte("7"), 7, msgRefs{}, w10.completed, true)
	named03 := w03.appendTaskResult(nil, []byte("7"), 7, conv, w03.inputRequired, true)
	longer := bytes.Replace(good03, []byte(`"artifactId":"answer"`), []byte(`"artifactId":"answer","name":"x"`), 1)
	tests := []struct {
		name string
		w    *wire
		body []byte
		refs msgRefs
		ok   bool
	}{
		{"0.3 task", w03, good03, msgRefs{}, true},
		{"1.0 task", w10, good10, msgRefs{}, true},
		{"any size, members added", w03, longer, msgRefs{}, true},
		{"named task and context", w03, named03, conv, true},
		{"1.0 answer to a 0.3 client", w03, good10, msgRefs{}, false},
		{"0.3 answer to a 1.0 client", w10, good03, msgRefs{}, false},
		{"1.0 task with a kind", w10, bytes.Replace(good10, []byte(`"task":{`), []byte(`"task":{"kind":"task",`), 1), msgRefs{}, false},
		{"0.3 message", w03, bytes.Replace(good03, []byte(`"kind":"task"`), []byte(`"kind":"message"`), 1), msgRefs{}, false},
		{"other id", w03, good03, msgRefs{}, false},
		{"string id", w03, bytes.Replace(good03, []byte(`"id":7`), []byte(`"id":"7"`), 1), msgRefs{}, false},
		{"not JSON-RPC 2.0", w03, bytes.Replace(good03, []byte(`"2.0"`), []byte(`"1.0"`), 1), msgRefs{}, false},
		{"error", w03, []byte(`{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"x"}}`), msgRefs{}, false},
		{"state spelled in the other version", w03, bytes.Replace(good03, []byte(`"completed"`), []byte(`"TASK_STATE_COMPLETED"`), 1), msgRefs{}, false},
		{"state not the upstream's", w03, good03, msgRefs{contextID: "c"}, false},
		{"other task", w03, named03, msgRefs{taskID: "task-8", contextID: conv.contextID}, false},
		{"other context", w03, named03, msgRefs{contextID: "load-1-conv"}, false},
		{"text part untagged", w03, bytes.Replace(good03, []byte(`{"kind":"text",`), []byte(`{`), 1), msgRefs{}, false},
		{"padding cut short", w03, bytes.Replace(good03, bytes.Repeat([]byte("x"), 600), nil, 1), msgRefs{}, false},
		{"padding altered", w03, bytes.Replace(good03, []byte("xxxx"), []byte("xx\\n"), 1), msgRefs{}, false},
		{"truncated", w03, good03[:len(good03)-1], msgRefs{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seq := uint64(7)
			if tt.name == "other id" {
				seq = 8
			}
			if err := tt.w.checkTranslated(tt.body, seq, tt.refs); (err == nil) != tt.ok {
				t.Fatalf("checkTranslated = %v, want ok=%v\n%s", err, tt.ok, tt.body)
			}
		})
	}
}

// TestLoadAcrossVersions loads a 0.3 upstream with 0.3 clients whose
// answers are checked as translated ones, and with 1.0 clients, whose
// every answer then fails the check: the loader counts a wrong version
// as an error, never as an answer.
func TestLoadAcrossVersions(t *testing.T) {
	w03, err := newWire(a2a.V03)
	if err != nil {
		t.Fatal(err)
	}
	w10, err := newWire(a2a.V10)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(newUpstream(w03))
	defer srv.Close()
	for _, tt := range []struct {
		name string
		w    *wire
		ok   bool
	}{{"0.3 clients", w03, true}, {"1.0 clients", w10, false}} {
		t.Run(tt.name, func(t *testing.T) {
			l, err := newLoader(tt.w, loadSpec{URL: srv.URL, Creds: []credential{apiKeyCredential("k")}, Shape: shapeNewContext, Concurrency: 2, Timeout: 10 * time.Second, Translated: true})
			if err != nil {
				t.Fatal(err)
			}
			defer l.close()
			if _, err := l.run(t.Context(), 0, 150*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			res := l.result()
			if tt.ok != (res.Errors == 0 && res.Requests > 0) {
				t.Fatalf("requests %d errors %d %v, want ok=%v", res.Requests, res.Errors, res.ErrorKinds, tt.ok)
			}
		})
	}
}

// TestUpstream03 checks the 0.3 upstream's refusals: it answers only 0.3
// method names, so a request the gateway forgot to translate fails.
func TestUpstream03(t *testing.T) {
	w03, err := newWire(a2a.V03)
	if err != nil {
		t.Fatal(err)
	}
	w10, err := newWire(a2a.V10)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(newUpstream(w03))
	defer srv.Close()
	for _, tt := range []struct {
		name   string
		body   []byte
		status int
	}{
		{"0.3 send", w03.appendRequest(nil, w03.send, "m-", 1, msgRefs{}), http.StatusOK},
		{"1.0 send", w10.appendRequest(nil, w10.send, "m-", 1, msgRefs{}), http.StatusNotFound},
	} {
		resp, err := http.Post(srv.URL, "application/json", bytes.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.status {
			t.Fatalf("%s: status %d, want %d", tt.name, resp.StatusCode, tt.status)
		}
	}
}

func TestEvaluateBridge(t *testing.T) {
	row := func(name string, rps, cpu float64, errors int64) TargetResult {
		return TargetResult{Name: name, Result: &LoadResult{Requests: int64(rps * 10), Errors: errors, Seconds: 10, RPS: rps, P99: Millis(10 * time.Millisecond)},
			Gateway: &GatewayUsage{Store: storeRedis, JWT: true, GatewayCPUMicros: cpu}}
	}
	jwt := row(TargetJWTRedis, 9000, 90, 0)
	tests := []struct {
		name    string
		targets []TargetResult
		// met is the bridge verdict, absent when nil.
		met   *bool
		ratio float64
		table []string
	}{
		{"within 20%", []TargetResult{jwt, row(TargetJWTRedisDedupe, 8000, 100, 0), row(TargetBridge, 7500, 118, 0), row(TargetBridgeTo03, 7400, 121, 0)},
			new(true), 1.18, []string{"1.18x (118 / 100 µs)", "1.21x (121 µs) with a 1.0 client and a 0.3 agent"}},
		{"over 20%", []TargetResult{jwt, row(TargetJWTRedisDedupe, 8000, 100, 0), row(TargetBridge, 7000, 125, 0)},
			new(false), 1.25, []string{"1.25x (125 / 100 µs)"}},
		{"cheap because wrong", []TargetResult{jwt, row(TargetJWTRedisDedupe, 8000, 100, 0), row(TargetBridge, 9000, 80, 3)},
			new(false), 0.8, []string{"0.80x"}},
		{"twin answered wrongly", []TargetResult{jwt, row(TargetJWTRedisDedupe, 8000, 100, 1), row(TargetBridge, 9000, 110, 0)},
			new(false), 1.1, nil},
		{"without gw-jwt-redis, as -bridge runs", []TargetResult{row(TargetJWTRedisDedupe, 8000, 100, 0), row(TargetBridge, 7500, 110, 0)},
			new(true), 1.1, []string{"1.10x (110 / 100 µs)"}},
		{"without the twin", []TargetResult{jwt, row(TargetBridge, 7000, 125, 0)}, nil, 0, nil},
		{"without the bridged row", []TargetResult{jwt, row(TargetJWTRedisDedupe, 8000, 100, 0), {Name: TargetBridge, Skipped: "not among -targets"}}, nil, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Report{Targets: tt.targets}
			r.evaluate()
			var got *Verdict
			for i := range r.Verdicts {
				if r.Verdicts[i].Name == bridgeVerdict {
					got = &r.Verdicts[i]
				}
			}
			if (got == nil) != (tt.met == nil) {
				t.Fatalf("bridge verdict %+v, want met %v", got, tt.met)
			}
			if got == nil {
				if r.Bridge != nil {
					t.Fatalf("bridge ratios without a verdict: %+v", r.Bridge)
				}
				return
			}
			if got.Met != *tt.met || got.Value < tt.ratio-1e-9 || got.Value > tt.ratio+1e-9 || got.Limit != "<= 1.20x" {
				t.Fatalf("bridge verdict %+v, want met %v at %.2f", got, *tt.met, tt.ratio)
			}
			var table strings.Builder
			if err := r.WriteTable(&table); err != nil {
				t.Fatal(err)
			}
			for _, want := range append(tt.table, bridgeVerdict) {
				if !strings.Contains(table.String(), want) {
					t.Fatalf("table lacks %q:\n%s", want, table.String())
				}
			}
		})
	}
}

// TestTranslatedSizeLearnt checks the cheap check of translated answers:
// the first is checked in full and sets the size every later one must
// have; the later ones must still echo their request's id.
func TestTranslatedSizeLearnt(t *testing.T) {
	w, err := newWire(a2a.V03)
	if err != nil {
		t.Fatal(err)
	}
	answer := func(seq uint64, extra string) []byte {
		b := w.appendTaskResult(nil, []byte(strconv.FormatUint(seq, 10)), seq, msgRefs{}, w.completed, true)
		return bytes.Replace(b, []byte(`"artifactId":"answer"`), []byte(`"artifactId":"answer"`+extra), 1)
	}
	wk := &loadWorker{}
	check := func(body []byte, seq uint64) error {
		wk.resp.Reset()
		wk.resp.Write(body)
		return wk.checkTranslated(w, seq, msgRefs{})
	}
	if err := check(bytes.Replace(answer(1, ""), []byte(`"kind":"task"`), []byte(`"kind":"tasq"`), 1), 1); err == nil || wk.translatedSize != 0 {
		t.Fatalf("a wrong first answer: %v, size %d", err, wk.translatedSize)
	}
	if err := check(answer(2, `,"name":"a"`), 2); err != nil || wk.translatedSize != ResponseSize+len(`,"name":"a"`) {
		t.Fatalf("first answer: %v, size %d", err, wk.translatedSize)
	}
	for _, tt := range []struct {
		name string
		body []byte
		seq  uint64
		ok   bool
	}{
		{"same size", answer(3, `,"name":"b"`), 3, true},
		{"other size", answer(4, `,"name":"bb"`), 4, false},
		{"other id", answer(5, `,"name":"b"`), 6, false},
		{"full check, other size", answer(fullCheckEvery, `,"name":"bb"`), fullCheckEvery, false},
		{"full check, wrong content", bytes.Replace(answer(2*fullCheckEvery, `,"name":"b"`), []byte(`"completed"`), []byte(`"submitted"`), 1), 2 * fullCheckEvery, false},
		{"full check", answer(3*fullCheckEvery, `,"name":"b"`), 3 * fullCheckEvery, true},
	} {
		if err := check(tt.body, tt.seq); (err == nil) != tt.ok {
			t.Fatalf("%s: %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}
