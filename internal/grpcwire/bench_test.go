package grpcwire

import (
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a10"
)

// BenchmarkClassify measures the classification of a typical 1.0 send
// (message with a text part, metadata, configuration).
func BenchmarkClassify(b *testing.B) {
	msg := mustMarshal(b, restCases(b)[0].req)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		if _, e := Classify(a2a.V10, a2a.MethodSend, msg); e != nil {
			b.Fatal(e)
		}
	}
}

// BenchmarkReadAnswer measures reading a typical 1.0 send answer: a task
// with a status message, an artifact and a history of one message.
func BenchmarkReadAnswer(b *testing.B) {
	msg := mustMarshal(b, &a2a10.SendMessageResponse{Payload: &a2a10.SendMessageResponse_Task{Task: task10(b)}})
	op := &a2a.Operation{Method: a2a.MethodSend, Version: a2a.V10, Binding: a2a.BindingGRPC}
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ReadAnswer(op, msg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSetTenant measures the tenant splice of the same send.
func BenchmarkSetTenant(b *testing.B) {
	msg := mustMarshal(b, restCases(b)[0].req)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := SetTenant(a2a.V10, a2a.MethodSend, msg, "tenant-a"); err != nil {
			b.Fatal(err)
		}
	}
}
