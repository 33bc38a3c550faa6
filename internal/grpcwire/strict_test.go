package grpcwire

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a10"
)

// Wire builders for messages the generated encoder would not produce.
func tagBytes(num protowire.Number, v []byte) []byte { return bytesField(num, v) }

func tagVarint(num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
}

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// nestedStruct is a google.protobuf.Struct nested levels deep through
// Value.struct_value (field 5).
func nestedStruct(levels int) []byte {
	st := []byte{}
	for i := 0; i < levels; i++ {
		value := tagBytes(5, st)
		st = tagBytes(1, cat(tagBytes(1, []byte("k")), tagBytes(2, value)))
	}
	return st
}

// strictCases are encodings of a 1.0 message (GetTaskRequest: tenant 1,
// id 2, history_length 3; SendMessageRequest: message 2, configuration 3,
// metadata 4) that the checker refuses, with what the error names.
var strictCases = []struct {
	name string
	m    a2a.Method
	msg  []byte
	want string
}{
	{"unknown field", a2a.MethodGetTask, cat(tagBytes(2, []byte("t")), tagVarint(99, 1)), "unknown field number 99"},
	{"singular twice", a2a.MethodGetTask, cat(tagBytes(2, []byte("t")), tagBytes(2, []byte("u"))), "GetTaskRequest.id: given more than once"},
	{"wrong wire type", a2a.MethodGetTask, tagVarint(2, 1), "GetTaskRequest.id: wire type 0"},
	{"invalid UTF-8", a2a.MethodGetTask, tagBytes(2, []byte("a\xffb")), "not valid UTF-8"},
	{"truncated", a2a.MethodGetTask, tagBytes(2, []byte("task"))[:4], "truncated"},
	{"malformed tag", a2a.MethodGetTask, []byte{0x80}, "malformed field tag"},
	{"int32 out of range", a2a.MethodGetTask, cat(tagBytes(2, []byte("t")), tagVarint(3, 1<<33)), "out of the range of int32"},
	{"oneof twice", a2a.MethodSend, tagBytes(2, cat(tagBytes(1, []byte("m")), tagBytes(5, cat(tagBytes(1, []byte("x")), tagBytes(3, []byte("https://x")))))), "both text and url of oneof content"},
	{"undefined enum", a2a.MethodSend, tagBytes(2, cat(tagBytes(1, []byte("m")), tagVarint(4, 9))), "enum number 9 is not defined"},
	{"bool other than 0 and 1", a2a.MethodSend, cat(tagBytes(2, tagBytes(1, []byte("m"))), tagBytes(3, tagVarint(4, 2))), "a bool other than 0 and 1"},
	{"map key twice", a2a.MethodSend, cat(tagBytes(2, tagBytes(1, []byte("m"))), tagBytes(4, cat(
		tagBytes(1, cat(tagBytes(1, []byte("a")), tagBytes(2, tagVarint(4, 1)))),
		tagBytes(1, cat(tagBytes(1, []byte("a")), tagBytes(2, tagVarint(4, 0))))))), "a map key given more than once"},
	{"too deep", a2a.MethodSend, cat(tagBytes(2, tagBytes(1, []byte("m"))), tagBytes(4, nestedStruct(MaxDepth))), "nested deeper than"},
	{"group", a2a.MethodGetTask, protowire.AppendTag(nil, 2, protowire.StartGroupType), "wire type 3"},
}

func TestStrictRequests(t *testing.T) {
	for _, c := range strictCases {
		t.Run(c.name, func(t *testing.T) {
			_, e := Classify(a2a.V10, c.m, c.msg)
			if e == nil || e.Code != a2a.ErrInvalidParams.Code || !strings.Contains(e.Message, c.want) {
				t.Fatalf("got %v, want InvalidParams naming %q", e, c.want)
			}
		})
	}
}

func TestStrictAllowsDepthWithinLimit(t *testing.T) {
	// SendMessageRequest (1) > metadata Struct (2) > entry (3) > Value (4) ...
	msg := cat(tagBytes(2, tagBytes(1, []byte("m"))), tagBytes(4, nestedStruct((MaxDepth-2)/3)))
	if _, e := Classify(a2a.V10, a2a.MethodSend, msg); e != nil {
		t.Fatal(e)
	}
}

func TestStrictPacking(t *testing.T) {
	// SourceCodeInfo.Location.path is [packed = true]; FileDescriptorProto.
	// public_dependency (proto2) is unpacked.
	loc := (&descriptorpb.SourceCodeInfo_Location{}).ProtoReflect().Descriptor()
	file := (&descriptorpb.FileDescriptorProto{}).ProtoReflect().Descriptor()
	packed := tagBytes(1, protowire.AppendVarint(protowire.AppendVarint(nil, 1), 2))
	if err := checkWire(packed, loc); err != nil {
		t.Errorf("packed where packed: %v", err)
	}
	if err := checkWire(tagVarint(1, 1), loc); err == nil || !strings.Contains(err.Error(), "packed and unpacked") {
		t.Errorf("unpacked where packed: %v", err)
	}
	if err := checkWire(cat(tagVarint(10, 1), tagVarint(10, 2)), file); err != nil {
		t.Errorf("unpacked where unpacked: %v", err)
	}
	if err := checkWire(tagBytes(10, protowire.AppendVarint(nil, 1)), file); err == nil || !strings.Contains(err.Error(), "packed and unpacked") {
		t.Errorf("packed where unpacked: %v", err)
	}
	if err := checkWire(tagBytes(1, []byte{0x80}), loc); err == nil || !strings.Contains(err.Error(), "truncated packed") {
		t.Errorf("truncated packed: %v", err)
	}
}

func TestStrictAnswers(t *testing.T) {
	op := &a2a.Operation{Method: a2a.MethodGetTask, Version: a2a.V10, Binding: a2a.BindingGRPC}
	status := tagBytes(3, tagVarint(1, 3)) // TaskStatus{state: COMPLETED}
	ok := cat(tagBytes(1, []byte("t")), tagBytes(2, []byte("c")), status)
	if ev, _, err := ReadAnswer(op, ok); err != nil || ev.Kind != a2a.EventTask || ev.TaskID != "t" {
		t.Fatalf("valid task: %+v %v", ev, err)
	}
	for _, c := range []struct {
		name string
		msg  []byte
		want string
	}{
		{"unknown field", cat(ok, tagVarint(40, 1)), "unknown field number 40"},
		{"id twice", cat(ok, tagBytes(1, []byte("u"))), "Task.id: given more than once"},
		{"status twice", cat(ok, status), "Task.status: given more than once"},
		{"wrong wire type", cat(tagVarint(1, 7), status), "wire type 0"},
		{"invalid UTF-8", cat(tagBytes(1, []byte{0xc3}), status), "not valid UTF-8"},
		{"truncated", ok[:len(ok)-1], "truncated"},
		{"undefined state", cat(tagBytes(1, []byte("t")), tagBytes(3, tagVarint(1, 99))), "enum number 99"},
		{"too deep", cat(ok, tagBytes(6, nestedStruct(MaxDepth))), "nested deeper"},
		{"map key twice", cat(ok, tagBytes(6, cat(
			tagBytes(1, cat(tagBytes(1, []byte("a")), tagBytes(2, tagVarint(4, 1)))),
			tagBytes(1, cat(tagBytes(1, []byte("a")), tagBytes(2, tagVarint(4, 0))))))), "a map key given more than once"},
		{"int32 out of range", cat(tagBytes(1, []byte("t")), status, tagBytes(5, cat(tagBytes(1, []byte("m")), tagVarint(4, 1<<40)))), "out of the range of int32"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := ReadAnswer(op, c.msg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error naming %q", err, c.want)
			}
		})
	}
	stream := &a2a.Operation{Method: a2a.MethodStream, Version: a2a.V10, Binding: a2a.BindingGRPC}
	// StreamResponse: task 1 and message 2 are one oneof.
	both := cat(tagBytes(1, ok), tagBytes(2, tagBytes(1, []byte("m"))))
	if _, _, err := ReadAnswer(stream, both); err == nil || !strings.Contains(err.Error(), "oneof payload") {
		t.Errorf("two payloads: %v", err)
	}
	// TaskArtifactUpdateEvent.append (4) is a bool.
	artifact := cat(tagBytes(1, []byte("t")), tagBytes(2, []byte("c")), tagBytes(3, tagBytes(1, []byte("a"))), tagVarint(4, 2))
	if _, _, err := ReadAnswer(stream, tagBytes(4, artifact)); err == nil || !strings.Contains(err.Error(), "a bool other than 0 and 1") {
		t.Errorf("bool 2: %v", err)
	}
	if _, _, err := ReadAnswer(stream, nil); err == nil {
		t.Error("an empty stream message was accepted")
	}
}

func TestStrictAcceptsGeneratedEncodings(t *testing.T) {
	for _, c := range restCases(t) {
		if err := checkWire(mustMarshal(t, c.req), c.req.ProtoReflect().Descriptor()); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	task := &a2a10.Task{Id: "t", Metadata: testMetadata(t), History: []*a2a10.Message{message10(t)}}
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(task)
	if err := checkWire(b, task.ProtoReflect().Descriptor()); err != nil {
		t.Error(err)
	}
}
