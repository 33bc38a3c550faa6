package grpcwire

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a03"
	"github.com/a2a-gateway/a2a-gateway/internal/pb/a2a10"
)

// The splices change one field of a classified request and keep every
// other field's bytes, in their order, as the caller sent them: the agent
// receives the caller's message, as on the JSON bindings. A message field
// on the way to the change is re-encoded only in its length prefix.

// span is one field of an encoded message: its bytes, tag included, from
// start to end, and where its value starts (a length-delimited value after
// its length).
type span struct {
	num               protowire.Number
	start, value, end int
}

// spansOf splits an encoded message into its fields.
func spansOf(b []byte) ([]span, error) {
	var out []span
	for i := 0; i < len(b); {
		num, typ, n := protowire.ConsumeTag(b[i:])
		if n < 0 {
			return nil, errMalformed
		}
		value := i + n
		if typ == protowire.BytesType {
			_, m := protowire.ConsumeVarint(b[value:])
			if m < 0 {
				return nil, errMalformed
			}
			value += m
		}
		m := protowire.ConsumeFieldValue(num, typ, b[i+n:])
		if m < 0 {
			return nil, errMalformed
		}
		out = append(out, span{num, i, value, i + n + m})
		i += n + m
	}
	return out, nil
}

var errMalformed = errors.New("grpcwire: malformed message")

// numberOf is the number of the field name of md; the names are the
// generated schemas', so a missing one is a programming error.
func numberOf(md protoreflect.MessageDescriptor, name protoreflect.Name) protowire.Number {
	fd := md.Fields().ByName(name)
	if fd == nil {
		panic(fmt.Sprintf("grpcwire: %s has no field %s", md.FullName(), name))
	}
	return fd.Number()
}

// bytesField encodes a length-delimited field.
func bytesField(num protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), v)
}

// replaceField replaces every occurrence of field num with with (nil:
// removes it): the first keeps its place, the others go. Without one,
// with is added first if front, else last.
func replaceField(msg []byte, num protowire.Number, with []byte, front bool) ([]byte, error) {
	spans, err := spansOf(msg)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(msg)+len(with))
	done := false
	for _, s := range spans {
		if s.num != num {
			out = append(out, msg[s.start:s.end]...)
			continue
		}
		if !done {
			out = append(out, with...)
			done = true
		}
	}
	switch {
	case done:
	case front:
		out = append(with, out...)
	default:
		out = append(out, with...)
	}
	return out, nil
}

// editMessage applies edit to the message field at path (field numbers,
// outermost first) below msg. When a field on the way is missing, msg is
// returned unchanged, unless create is set: then the last field of path
// is created (empty before edit) and a missing one before it is an error,
// as a2a.SetMetadata needs the object that holds the metadata. A message
// field given twice has been refused by the classifier; here it is an
// error too.
func editMessage(msg []byte, path []protowire.Number, create bool, edit func([]byte) ([]byte, error)) ([]byte, error) {
	if len(path) == 0 {
		return edit(msg)
	}
	spans, err := spansOf(msg)
	if err != nil {
		return nil, err
	}
	at := -1
	for i, s := range spans {
		if s.num == path[0] {
			if at >= 0 {
				return nil, fmt.Errorf("grpcwire: field %d given twice", path[0])
			}
			at = i
		}
	}
	if at < 0 {
		switch {
		case !create:
			return msg, nil
		case len(path) > 1:
			return nil, fmt.Errorf("grpcwire: no field %d to splice into", path[0])
		}
		inner, err := edit(nil)
		if err != nil {
			return nil, err
		}
		return append(msg[:len(msg):len(msg)], bytesField(path[0], inner)...), nil
	}
	s := spans[at]
	inner, err := editMessage(msg[s.value:s.end], path[1:], create, edit)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(msg)+8)
	out = append(out, msg[:s.start]...)
	out = append(out, bytesField(path[0], inner)...)
	return append(out, msg[s.end:]...), nil
}

// SetTenant sets the 1.0 routing tenant of a request to tenant, replacing
// the caller's ("" removes it: the empty string is the field's absence).
// 0.3 requests carry no tenant.
func SetTenant(v a2a.Version, m a2a.Method, msg []byte, tenant string) ([]byte, error) {
	r, ok := lookup(v, m)
	if !ok || v != a2a.V10 {
		return nil, fmt.Errorf("grpcwire: %s in A2A %s has no tenant field", m, v)
	}
	num := numberOf(descriptorOf(r.request), "tenant")
	var with []byte
	if tenant != "" {
		with = bytesField(num, []byte(tenant))
	}
	return replaceField(msg, num, with, true)
}

// Field paths of a send request, by version.
var (
	send10 = (&a2a10.SendMessageRequest{}).ProtoReflect().Descriptor()
	send03 = (&a2a03.SendMessageRequest{}).ProtoReflect().Descriptor()
	conf10 = (&a2a10.SendMessageConfiguration{}).ProtoReflect().Descriptor()
	conf03 = (&a2a03.SendMessageConfiguration{}).ProtoReflect().Descriptor()
	msg10  = (&a2a10.Message{}).ProtoReflect().Descriptor()
	msg03  = (&a2a03.Message{}).ProtoReflect().Descriptor()
	list10 = (&a2a10.ListTasksRequest{}).ProtoReflect().Descriptor()
)

// StripPushConfig removes the push config given inline with a send
// (configuration.task_push_notification_config in 1.0,
// configuration.push_notification in 0.3), like a2a.StripPushConfig. Other
// requests, and sends without one, are returned as they are.
func StripPushConfig(v a2a.Version, m a2a.Method, msg []byte) ([]byte, error) {
	if m != a2a.MethodSend && m != a2a.MethodStream {
		return msg, nil
	}
	path, push := []protowire.Number{numberOf(send10, "configuration")}, numberOf(conf10, "task_push_notification_config")
	if v != a2a.V10 {
		path, push = []protowire.Number{numberOf(send03, "configuration")}, numberOf(conf03, "push_notification")
	}
	return editMessage(msg, path, false, func(conf []byte) ([]byte, error) {
		return replaceField(conf, push, nil, false)
	})
}

// metadataPath is the path of SendMessageRequest.message.metadata.
func metadataPath(v a2a.Version) []protowire.Number {
	if v == a2a.V10 {
		return []protowire.Number{numberOf(send10, "message"), numberOf(msg10, "metadata")}
	}
	return []protowire.Number{numberOf(send03, "request"), numberOf(msg03, "metadata")}
}

// The fields of google.protobuf.Struct and of its map entries.
const (
	structFields protowire.Number = 1
	entryKey     protowire.Number = 1
	entryValue   protowire.Number = 2
)

// SetMessageMetadata sets key in the metadata of a send's message to
// value, a JSON value, replacing the key's entry if there is one and
// adding it last otherwise. The metadata is created when absent; the
// message must be there.
func SetMessageMetadata(v a2a.Version, msg []byte, key string, value []byte) ([]byte, error) {
	val := &structpb.Value{}
	if err := protojson.Unmarshal(value, val); err != nil {
		return nil, fmt.Errorf("grpcwire: metadata value: %w", err)
	}
	enc, err := marshal(val)
	if err != nil {
		return nil, err
	}
	entry := append(bytesField(entryKey, []byte(key)), bytesField(entryValue, enc)...)
	return editMessage(msg, metadataPath(v), true, func(st []byte) ([]byte, error) {
		st, err := deleteEntry(st, key)
		if err != nil {
			return nil, err
		}
		return append(st, bytesField(structFields, entry)...), nil
	})
}

// DeleteMessageMetadata removes key from the metadata of a send's message.
func DeleteMessageMetadata(v a2a.Version, msg []byte, key string) ([]byte, error) {
	return editMessage(msg, metadataPath(v), false, func(st []byte) ([]byte, error) {
		return deleteEntry(st, key)
	})
}

// deleteEntry removes the entries of key from an encoded Struct.
func deleteEntry(st []byte, key string) ([]byte, error) {
	spans, err := spansOf(st)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(st))
	for _, s := range spans {
		if s.num == structFields {
			k, err := entryKeyOf(st[s.value:s.end])
			if err != nil {
				return nil, err
			}
			if k == key {
				continue
			}
		}
		out = append(out, st[s.start:s.end]...)
	}
	return out, nil
}

// entryKeyOf reads the key of an encoded map entry with string keys.
func entryKeyOf(entry []byte) (string, error) {
	spans, err := spansOf(entry)
	if err != nil {
		return "", err
	}
	key := ""
	for _, s := range spans {
		if s.num == entryKey {
			key = string(entry[s.value:s.end])
		}
	}
	return key, nil
}

// SetListPage sets a 1.0 ListTasksRequest's page_size to size and its
// page_token to token ("" removes it), for the list stage's own pages.
func SetListPage(msg []byte, size int, token string) ([]byte, error) {
	sizeNum, tokenNum := numberOf(list10, "page_size"), numberOf(list10, "page_token")
	sizeField := protowire.AppendVarint(protowire.AppendTag(nil, sizeNum, protowire.VarintType), uint64(int64(int32(size))))
	if int(int32(size)) != size {
		return nil, fmt.Errorf("grpcwire: page size %d out of range", size)
	}
	msg, err := replaceField(msg, sizeNum, sizeField, false)
	if err != nil {
		return nil, err
	}
	var tokenField []byte
	if token != "" {
		tokenField = bytesField(tokenNum, []byte(token))
	}
	return replaceField(msg, tokenNum, tokenField, false)
}
