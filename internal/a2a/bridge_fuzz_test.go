package a2a

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

var bridgeForms = []Form{form10, form10REST, form10GRPC, form03, form03REST, form03GRPC}

// FuzzTranslateResult: any answer translates or is refused with
// ErrNotA2A, never panics; a translation is JSON, translates back, and the
// way back and forth again gives the same translation (a round trip keeps
// every member both forms have).
func FuzzTranslateResult(f *testing.F) {
	forms := func(a, b Form) (uint8, uint8) {
		var i, j uint8
		for k, fm := range bridgeForms {
			if fm == a {
				i = uint8(k)
			}
			if fm == b {
				j = uint8(k)
			}
		}
		return i, j
	}
	for _, c := range resultCases() {
		for _, p := range []struct {
			in     string
			fa, fb Form
		}{{c.a10, form10, form03}, {c.a03, form03, form10}, {c.p10, form10GRPC, form03REST}, {c.p03, form03GRPC, form10REST}} {
			i, j := forms(p.fa, p.fb)
			f.Add(uint8(c.m), i, j, []byte(p.in))
		}
	}
	f.Add(uint8(MethodPushConfigDelete), uint8(0), uint8(3), []byte("{}"))
	f.Add(uint8(MethodListTasks), uint8(0), uint8(3), []byte(`{"tasks":[]}`))
	f.Fuzz(func(t *testing.T, m, i, j uint8, in []byte) {
		method := Method(m % uint8(len(methodNames)))
		from, to := bridgeForms[int(i)%len(bridgeForms)], bridgeForms[int(j)%len(bridgeForms)]
		out, err := TranslateResult(method, in, from, to)
		if err != nil {
			if !errors.Is(err, ErrNotA2A) {
				t.Fatalf("error %v does not wrap ErrNotA2A", err)
			}
			return
		}
		if from == to || dialectOf(from) == dialectOf(to) && method != MethodPushConfigDelete {
			return // passed on as it is
		}
		if !json.Valid(out) {
			t.Fatalf("translation is not JSON: %s", out)
		}
		back, err := TranslateResult(method, out, to, from)
		if err != nil {
			t.Fatalf("%s -> %s gave %s, which does not translate back: %v\nin: %s", from, to, out, err, in)
		}
		again, err := TranslateResult(method, back, from, to)
		if err != nil {
			t.Fatalf("back %s does not translate again: %v", back, err)
		}
		if !sameValue(t, again, out) {
			t.Fatalf("%s -> %s not stable:\n in: %s\nout: %s\nback: %s\nagain: %s", from, to, in, out, back, again)
		}
	})
}

// sameValue compares two translations as protobuf does: a member holding
// its zero value (which 0.3 JSON-RPC writes where protobuf JSON leaves it
// out) is the same as none.
func sameValue(t *testing.T, a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		t.Fatalf("not JSON: %s, %s", a, b)
	}
	return reflect.DeepEqual(withoutZeros(va), withoutZeros(vb))
}

func withoutZeros(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			e = withoutZeros(e)
			switch e {
			case nil, "", false, stateName(StateUnknown, dialect03), stateName(StateUnknown, dialect10):
				delete(v, k)
				continue
			}
			if l, ok := e.([]any); ok && len(l) == 0 {
				delete(v, k)
				continue
			}
			v[k] = e
		}
	case []any:
		for i, e := range v {
			v[i] = withoutZeros(e)
		}
	}
	return v
}

// BenchmarkTranslateResult translates a task of about 1 KiB between 1.0
// and 0.3 JSON-RPC, and a stream event to 0.3 protobuf JSON.
func BenchmarkTranslateResult(b *testing.B) {
	for _, c := range []struct {
		name     string
		m        Method
		in       string
		from, to Form
	}{
		{"task 1.0 to 0.3", MethodGetTask, brTask10, form10, form03},
		{"task 0.3 to 1.0", MethodGetTask, brTask03, form03, form10},
		{"status event 1.0 to 0.3 gRPC", MethodStream, wrap("statusUpdate", brStatusUpdate10), form10, form03GRPC},
	} {
		in := []byte(c.in)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := TranslateResult(c.m, in, c.from, c.to); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
