package grpcwire

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// rpcOf picks a method of the table for the fuzzers.
func rpcOf(i uint8) *rpc { return &rpcs[int(i)%len(rpcs)] }

func indexOf(t testing.TB, v a2a.Version, m a2a.Method) uint8 {
	for i, r := range rpcs {
		if r.version == v && r.method == m {
			return uint8(i)
		}
	}
	t.Fatalf("no rpc %s %s", v, m)
	return 0
}

func FuzzClassify(f *testing.F) {
	for _, c := range restCases(f) {
		f.Add(indexOf(f, c.v, c.m), mustMarshal(f, c.req))
	}
	for _, c := range strictCases {
		f.Add(indexOf(f, a2a.V10, c.m), c.msg)
	}
	f.Fuzz(func(t *testing.T, i uint8, msg []byte) {
		r := rpcOf(i)
		op, e := Classify(r.version, r.method, msg)
		if op == nil {
			t.Fatal("no operation")
		}
		if e != nil {
			return
		}
		if op.Binding != a2a.BindingGRPC || op.Method != r.method || op.Version != r.version {
			t.Fatalf("operation %+v", op)
		}
		// What was accepted decodes, and a stripped copy is read the same
		// but without a push config.
		if err := proto.Unmarshal(msg, newOf(r.request)); err != nil {
			t.Fatalf("accepted but not decodable: %v", err)
		}
		stripped, err := StripPushConfig(r.version, r.method, msg)
		if err != nil {
			t.Fatalf("strip: %v", err)
		}
		again, e := Classify(r.version, r.method, stripped)
		if e != nil {
			t.Fatalf("stripped request refused: %v", e)
		}
		if r.method == a2a.MethodSend || r.method == a2a.MethodStream {
			if again.PushConfig != nil {
				t.Fatalf("push config left: %s", again.PushConfig)
			}
			op.PushConfig = nil
		}
		if !reflect.DeepEqual(op, again) {
			t.Fatalf("stripping changed the operation:\n%+v\n%+v", op, again)
		}
	})
}

func FuzzReadAnswer(f *testing.F) {
	for _, c := range answerCases(f) {
		f.Add(indexOf(f, c.v, c.m), mustMarshal(f, c.answer))
	}
	f.Fuzz(func(t *testing.T, i uint8, msg []byte) {
		r := rpcOf(i)
		op := &a2a.Operation{Method: r.method, Version: r.version, Binding: a2a.BindingGRPC}
		ev, payload, err := ReadAnswer(op, msg)
		if err != nil {
			return
		}
		// An accepted answer re-encodes to an equal message that reads the same.
		enc, err := EncodeAnswer(op, payload)
		if err != nil {
			t.Fatalf("EncodeAnswer of %s: %v", payload, err)
		}
		orig, back := newOf(r.response), newOf(r.response)
		if proto.Unmarshal(msg, orig) != nil || proto.Unmarshal(enc, back) != nil || !proto.Equal(orig, back) {
			t.Fatalf("round trip changed the answer:\n%v\n%v", orig, back)
		}
		ev2, _, err := ReadAnswer(op, enc)
		if err != nil || !reflect.DeepEqual(ev, ev2) {
			t.Fatalf("re-encoded answer read differently: %+v %+v %v", ev, ev2, err)
		}
	})
}

func FuzzReadMessage(f *testing.F) {
	f.Add([]byte{}, int64(16))
	f.Add(AppendMessage(AppendMessage(nil, []byte("a")), []byte("bc")), int64(16))
	f.Add([]byte{1, 0, 0, 0, 1, 'x'}, int64(16))
	f.Add([]byte{0, 0, 0, 0, 9, 'x'}, int64(4))
	f.Fuzz(func(t *testing.T, body []byte, max int64) {
		r := bytes.NewReader(body)
		read := 0
		for {
			msg, err := ReadMessage(r, max)
			if errors.Is(err, io.EOF) {
				if read != len(body) {
					t.Fatalf("EOF after %d of %d bytes", read, len(body))
				}
				return
			}
			if err != nil {
				return
			}
			if int64(len(msg)) > max {
				t.Fatalf("a message of %d bytes over the limit %d", len(msg), max)
			}
			frame := AppendMessage(nil, msg)
			if !bytes.Equal(frame, body[read:read+len(frame)]) {
				t.Fatalf("re-framed message differs")
			}
			read += len(frame)
		}
	})
}
