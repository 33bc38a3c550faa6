package grpcwire

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a03"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a10"
)

// oddLength is a length-delimited field whose length is a two-byte
// varint where one would do: a splice must keep such bytes as they are.
func oddLength(num protowire.Number, v string) []byte {
	b := protowire.AppendTag(nil, num, protowire.BytesType)
	b = append(b, byte(len(v))|0x80, 0)
	return append(b, v...)
}

func TestSetTenant(t *testing.T) {
	id := oddLength(2, "task-1")
	history := tagVarint(3, 2)
	for _, c := range []struct {
		name   string
		msg    []byte
		tenant string
		want   []byte
	}{
		{"replaced in place", cat(id, tagBytes(1, []byte("caller")), history), "gw", cat(id, tagBytes(1, []byte("gw")), history)},
		{"added first", cat(id, history), "gw", cat(tagBytes(1, []byte("gw")), id, history)},
		{"removed", cat(id, tagBytes(1, []byte("caller")), history), "", cat(id, history)},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := SetTenant(a2a.V10, a2a.MethodGetTask, c.msg, c.tenant)
			if err != nil || !bytesEqual(got, c.want) {
				t.Fatalf("got %x %v, want %x", got, err, c.want)
			}
		})
	}
	// ListTaskPushNotificationConfigsRequest has its tenant at 4.
	got, err := SetTenant(a2a.V10, a2a.MethodPushConfigList, tagBytes(1, []byte("task-1")), "gw")
	if err != nil || !bytesEqual(got, cat(tagBytes(4, []byte("gw")), tagBytes(1, []byte("task-1")))) {
		t.Errorf("push list: %x %v", got, err)
	}
	for _, r := range rpcs {
		if r.version != a2a.V10 {
			continue
		}
		msg := mustMarshal(t, r.request)
		out, err := SetTenant(r.version, r.method, msg, "gw")
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		// An empty request lacks its ids, but the tenant is read first.
		if op, _ := Classify(r.version, r.method, out); op.Tenant != "gw" {
			t.Errorf("%s: tenant %q after SetTenant", r.name, op.Tenant)
		}
	}
	if _, err := SetTenant(a2a.V03, a2a.MethodGetTask, nil, "gw"); err == nil {
		t.Error("0.3 has no tenant")
	}
}

func TestStripPushConfig(t *testing.T) {
	msg := tagBytes(2, oddLength(1, "m-1"))
	meta := tagBytes(4, nil)
	modes := tagBytes(1, []byte("text/plain"))
	history := tagVarint(3, 1)
	push10 := tagBytes(2, tagBytes(4, []byte("https://hooks.example.com")))
	in := cat(msg, tagBytes(3, cat(modes, push10, history)), meta)
	want := cat(msg, tagBytes(3, cat(modes, history)), meta)
	got, err := StripPushConfig(a2a.V10, a2a.MethodSend, in)
	if err != nil || !bytesEqual(got, want) {
		t.Fatalf("1.0: %x %v, want %x", got, err, want)
	}
	if op, e := Classify(a2a.V10, a2a.MethodSend, got); e != nil || op.PushConfig != nil {
		t.Errorf("1.0 after strip: %+v %v", op, e)
	}
	// 0.3: configuration 2, push_notification 2.
	push03 := tagBytes(2, tagBytes(2, []byte("https://hooks.example.com")))
	in03 := cat(tagBytes(1, tagBytes(1, []byte("m-1"))), tagBytes(2, cat(push03, tagVarint(4, 1))))
	got, err = StripPushConfig(a2a.V03, a2a.MethodStream, in03)
	if want := cat(tagBytes(1, tagBytes(1, []byte("m-1"))), tagBytes(2, tagVarint(4, 1))); err != nil || !bytesEqual(got, want) {
		t.Fatalf("0.3: %x %v, want %x", got, err, want)
	}
	for _, unchanged := range [][]byte{msg, cat(msg, tagBytes(3, modes))} {
		if got, err := StripPushConfig(a2a.V10, a2a.MethodSend, unchanged); err != nil || !bytesEqual(got, unchanged) {
			t.Errorf("without a push config: %x %v", got, err)
		}
	}
	get := tagBytes(2, []byte("t"))
	if got, _ := StripPushConfig(a2a.V10, a2a.MethodGetTask, get); !bytesEqual(got, get) {
		t.Error("a get changed")
	}
}

func TestMessageMetadata(t *testing.T) {
	for _, v := range []a2a.Version{a2a.V10, a2a.V03} {
		var req proto.Message
		if v == a2a.V10 {
			req = &a2a10.SendMessageRequest{Tenant: "acme", Message: message10(t)}
		} else {
			req = &a2a03.SendMessageRequest{Request: message03(t)}
		}
		in := mustMarshal(t, req)
		out, err := SetMessageMetadata(v, in, "x-gateway", []byte(`{"sub":"alice","n":[1,true]}`))
		if err != nil {
			t.Fatal(err)
		}
		md := messageMetadata(t, v, out)
		if md["trace"] != "abc" || md["x-gateway"] == nil {
			t.Fatalf("%s: metadata %v", v, md)
		}
		// Replacing keeps one entry.
		out, err = SetMessageMetadata(v, out, "x-gateway", []byte(`"again"`))
		if err != nil {
			t.Fatal(err)
		}
		if md := messageMetadata(t, v, out); md["x-gateway"] != "again" || len(md) != 3 {
			t.Errorf("%s: after replacing: %v", v, md)
		}
		if _, e := Classify(v, a2a.MethodSend, out); e != nil {
			t.Errorf("%s: spliced request refused: %v", v, e)
		}
		out, err = DeleteMessageMetadata(v, out, "x-gateway")
		if err != nil {
			t.Fatal(err)
		}
		if md := messageMetadata(t, v, out); md["x-gateway"] != nil || md["trace"] != "abc" {
			t.Errorf("%s: after delete: %v", v, md)
		}
		// Deleting a key that is not there changes nothing.
		again, _ := DeleteMessageMetadata(v, out, "x-gateway")
		if !bytesEqual(again, out) {
			t.Errorf("%s: delete of an absent key changed the message", v)
		}
	}
	// A message without metadata gets one, after the message's own fields.
	in := cat(tagBytes(2, cat(tagBytes(1, []byte("m")), oddLength(2, "ctx"))))
	out, err := SetMessageMetadata(a2a.V10, in, "k", []byte(`1`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out[2:]), string(cat(tagBytes(1, []byte("m")), oddLength(2, "ctx")))) {
		t.Errorf("the message's fields moved: %x", out)
	}
	if md := messageMetadata(t, a2a.V10, out); md["k"] != 1.0 {
		t.Errorf("metadata %v", md)
	}
	if _, err := SetMessageMetadata(a2a.V10, in, "k", []byte(`{`)); err == nil {
		t.Error("invalid JSON value accepted")
	}
	if _, err := SetMessageMetadata(a2a.V10, tagBytes(1, []byte("tenant")), "k", []byte(`1`)); err == nil {
		t.Error("metadata set on a send without a message")
	}
	if out, err := DeleteMessageMetadata(a2a.V10, in, "k"); err != nil || !bytesEqual(out, in) {
		t.Errorf("delete without metadata: %x %v", out, err)
	}
}

func messageMetadata(t *testing.T, v a2a.Version, msg []byte) map[string]any {
	t.Helper()
	var md *structpb.Struct
	if v == a2a.V10 {
		req := &a2a10.SendMessageRequest{}
		if err := proto.Unmarshal(msg, req); err != nil {
			t.Fatal(err)
		}
		md = req.GetMessage().GetMetadata()
	} else {
		req := &a2a03.SendMessageRequest{}
		if err := proto.Unmarshal(msg, req); err != nil {
			t.Fatal(err)
		}
		md = req.GetRequest().GetMetadata()
	}
	if err := checkWire(msg, descriptorOf(newOf(map[a2a.Version]proto.Message{a2a.V10: &a2a10.SendMessageRequest{}, a2a.V03: &a2a03.SendMessageRequest{}}[v]))); err != nil {
		t.Fatalf("spliced message is not strict: %v", err)
	}
	return md.AsMap()
}

func TestSetListPage(t *testing.T) {
	ctx := oddLength(2, "ctx-1")
	in := cat(tagBytes(1, []byte("acme")), ctx, tagVarint(4, 7), tagBytes(5, []byte("caller")), tagVarint(8, 1))
	got, err := SetListPage(in, 50, "upstream")
	want := cat(tagBytes(1, []byte("acme")), ctx, tagVarint(4, 50), tagBytes(5, []byte("upstream")), tagVarint(8, 1))
	if err != nil || !bytesEqual(got, want) {
		t.Fatalf("got %x %v, want %x", got, err, want)
	}
	got, err = SetListPage(in, 10, "")
	want = cat(tagBytes(1, []byte("acme")), ctx, tagVarint(4, 10), tagVarint(8, 1))
	if err != nil || !bytesEqual(got, want) {
		t.Fatalf("token removed: %x %v, want %x", got, err, want)
	}
	got, err = SetListPage(tagBytes(1, []byte("acme")), 5, "p")
	if op, e := Classify(a2a.V10, a2a.MethodListTasks, got); err != nil || e != nil || op.PageSize != "5" || op.PageToken != "p" {
		t.Errorf("added: %+v %v %v", op, err, e)
	}
	if _, err := SetListPage(nil, 1<<40, ""); err == nil {
		t.Error("an out of range page size was accepted")
	}
}

func TestSplicesRefuseMalformed(t *testing.T) {
	bad := []byte{0x12, 0x05, 'a'}
	if _, err := SetTenant(a2a.V10, a2a.MethodGetTask, bad, "x"); err == nil {
		t.Error("SetTenant")
	}
	if _, err := StripPushConfig(a2a.V10, a2a.MethodSend, bad); err == nil {
		t.Error("StripPushConfig")
	}
	if _, err := SetMessageMetadata(a2a.V10, bad, "k", []byte("1")); err == nil {
		t.Error("SetMessageMetadata")
	}
	if _, err := SetListPage(bad, 1, ""); err == nil {
		t.Error("SetListPage")
	}
	twice := cat(tagBytes(3, nil), tagBytes(3, nil))
	if _, err := StripPushConfig(a2a.V10, a2a.MethodSend, twice); err == nil {
		t.Error("configuration twice")
	}
}
