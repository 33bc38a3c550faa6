package store

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/redistest"
)

// FuzzDedupeRecord checks the record layout both ways: whatever is encoded
// decodes to the same fields, and no stored value, however mangled, makes
// the decoder panic.
func FuzzDedupeRecord(f *testing.F) {
	f.Add(true, "h1", "fp", "task-1", uint32(30000), uint32(86400000), []byte(nil))
	f.Add(false, "holder", strings.Repeat("f", 64), "", uint32(0), uint32(0), []byte("{\"jsonrpc\":\"2.0\"}\x00\xff"))
	f.Fuzz(func(t *testing.T, inFlight bool, holder, fp, task string, lease, started uint32, result []byte) {
		for _, s := range []string{holder, fp, task} {
			if len(s) > MaxNameBytes {
				t.Skip()
			}
		}
		var v string
		if inFlight {
			v = encodeDedupeRecord(dedupeInFlight, dedupeByNew, holder, fp, task, millis(time.Duration(lease)*time.Millisecond), millis(time.Duration(started)*time.Millisecond), nil)
		} else {
			v = encodeDedupeRecord(dedupeDone, dedupeNoOutcome, holder, fp, task, "", "", result)
		}
		// Arbitrary bytes must never panic the decoder.
		_, _, _ = decodeDedupeRecord(string(result), int64(lease)-1)
		_, _, _ = decodeDedupeRecord(v[:len(v)/2], -1)

		rec, _, err := decodeDedupeRecord(v, int64(started))
		if holder == "" || fp == "" {
			if err == nil {
				t.Fatalf("a record without holder or fingerprint decoded: %+v", rec)
			}
			return
		}
		if err != nil {
			t.Fatalf("decode(encode) = %v", err)
		}
		if rec.Holder != holder || rec.Fingerprint != fp || rec.TaskID != task {
			t.Fatalf("decoded %+v, want holder %q fp %q task %q", rec, holder, fp, task)
		}
		if inFlight {
			if rec.State != DedupeInFlight || rec.LeaseExpired != (lease == 0) {
				t.Fatalf("in flight: decoded %+v (lease %d, started and pttl %d)", rec, lease, started)
			}
		} else if rec.State != DedupeDone || !bytes.Equal(rec.Result, result) {
			t.Fatalf("done: decoded %+v, want result %q", rec, result)
		}
	})
}

// TestDedupeRecordParsersAgree checks that the scripts and the gateway read
// records alike: every value one of them refuses as malformed, the other
// refuses too, so no script writes over a record the gateway cannot read
// and the gateway never reports a record the scripts would choke on.
func TestDedupeRecordParsersAgree(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := redistest.Start(t).Client(t)
	d := newRedisDedupe(&redisConn{client: client, gate: &gate{}})
	valid := []string{
		encodeDedupeRecord(dedupeInFlight, dedupeByNew, "h1", "fp", "", "30000", "86400000", nil),
		encodeDedupeRecord(dedupeInFlight, dedupeByTakeover, "h1", "fp", "task-1", "5", "7", nil),
		encodeDedupeRecord(dedupeDone, dedupeNoOutcome, "h1", "fp", "task-1", "", "", []byte("answer")),
	}
	var values []string
	for _, v := range valid {
		values = append(values, v)
		for i := range len(v) {
			values = append(values, v[:i])
			for _, c := range []byte{'0', '9', 'x', '+', '-', ' ', 0} {
				values = append(values, v[:i]+string(c)+v[i+1:])
			}
		}
		values = append(values, v+"x", v+"000")
	}
	const key = "parsers"
	for _, v := range values {
		if err := client.Set(ctx, key, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
		_, _, goErr := decodeDedupeRecord(v, 1)
		// Release reads the record and, as another holder's, never writes.
		_, luaErr := d.release.Run(ctx, client, []string{key}, "not-the-holder").Result()
		if luaErr != nil && !strings.Contains(luaErr.Error(), "malformed dedupe record") {
			t.Fatalf("%q: script failed otherwise: %v", v, luaErr)
		}
		if (goErr == nil) != (luaErr == nil) {
			t.Errorf("%q: the gateway says %v, the script says %v", v, goErr, luaErr)
		}
		// Complete reads its own holder's records with a parser of its own.
		if !strings.HasPrefix(v[min(2, len(v)):], dedupeField("h1")) {
			continue
		}
		_, luaErr = d.complete.Run(ctx, client, []string{key}, dedupeField("h1"), "answer", "60000").Result()
		if luaErr != nil && !strings.Contains(luaErr.Error(), "malformed dedupe record") {
			t.Fatalf("%q: Complete failed otherwise: %v", v, luaErr)
		}
		if (goErr == nil) != (luaErr == nil) {
			t.Errorf("%q: the gateway says %v, Complete says %v", v, goErr, luaErr)
		}
	}
	t.Logf("%d values compared", len(values))
}

// TestSharedPipelineCallersThatGiveUp runs dedupe calls whose callers give
// up while their batch may be running, beside callers that wait: under the
// race detector, no caller touches a reply the batch is still writing, and
// every caller that waited gets its own answer.
func TestSharedPipelineCallersThatGiveUp(t *testing.T) {
	client := redistest.Start(t).Client(t)
	d := newRedisDedupe(&redisConn{client: client, keys: keyspace{prefix: "gu"}, gate: &gate{}, pipes: newPipelines(client, pipelinesInFlight), relay: newPipelines(client, relayPipelinesInFlight)})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const calls = 200
	errs := make(chan error, calls)
	for i := range calls {
		go func() {
			key := strings.Repeat("k", i%7+1) + string(rune('a'+i%26))
			callCtx := ctx
			if i%2 == 1 {
				var stop context.CancelFunc
				callCtx, stop = context.WithTimeout(ctx, time.Duration(i%5)*100*time.Microsecond)
				defer stop()
			}
			_, _, err := d.Claim(callCtx, "acme", key+"-"+string(rune('0'+i%10)), "fp", "h", time.Minute, time.Hour)
			if err == nil {
				_, err = d.Complete(callCtx, "acme", key+"-"+string(rune('0'+i%10)), "h", []byte("r"), time.Hour)
			}
			if i%2 == 1 {
				err = nil // gave up, or finished in time: both are fine
			}
			errs <- err
		}()
	}
	for range calls {
		if err := <-errs; err != nil {
			t.Fatalf("a caller that waited: %v", err)
		}
	}
}
