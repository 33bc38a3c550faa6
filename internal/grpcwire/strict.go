package grpcwire

import (
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// MaxDepth bounds the nesting of messages in a request or answer.
// google.protobuf.Struct and Value nest each other without end, and every
// level costs a frame of the checker and of the decoders after it; one
// JSON level of metadata is two message levels.
const MaxDepth = 64

// checkWire walks b as an encoding of md and refuses what two decoders
// could read differently, or what the gateway would not see but an agent
// would act on:
//
//   - a field number md does not define (an allowlist: an unknown field
//     could be another version's push config or id);
//   - a singular field, or two members of one oneof, given more than once
//     (decoders keep the last, or merge messages: like a duplicate JSON
//     member), and a map key given twice;
//   - a wire type other than the field's; a repeated number field
//     unpacked where the schema packs it, or packed where it does not;
//   - strings that are not UTF-8, varints out of their field's range
//     (a bool other than 0 and 1, an int32 beyond 32 bits) and enum
//     numbers the schema does not name;
//   - a truncated field, and nesting deeper than MaxDepth.
//
// Errors name the field by its path of protobuf names and never quote a
// value.
func checkWire(b []byte, md protoreflect.MessageDescriptor) error {
	return checkMessage(b, md, string(md.Name()), 1)
}

// wireError names where a message is refused: the path of protobuf names
// to the message, and the field in it (none for a problem of the message
// itself). The string is built only for an error, not for every field read.
type wireError struct {
	path    string
	field   protoreflect.Name
	problem string
}

func (e *wireError) Error() string {
	if e.field == "" {
		return e.path + ": " + e.problem
	}
	return e.path + "." + string(e.field) + ": " + e.problem
}

func checkMessage(b []byte, md protoreflect.MessageDescriptor, path string, depth int) error {
	if depth > MaxDepth {
		return &wireError{path, "", fmt.Sprintf("nested deeper than %d messages", MaxDepth)}
	}
	fields := md.Fields()
	// The A2A messages are small: their bookkeeping fits on the stack.
	var seenBuf [32]bool
	var oneofBuf [4]protoreflect.FieldDescriptor
	seen, oneofs := seenBuf[:0], oneofBuf[:0]
	seen = append(seen, make([]bool, fields.Len())...)
	oneofs = append(oneofs, make([]protoreflect.FieldDescriptor, md.Oneofs().Len())...)
	var keys map[protoreflect.FieldNumber]map[string]bool
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return &wireError{path, "", "malformed field tag"}
		}
		b = b[n:]
		fd := fields.ByNumber(num)
		if fd == nil {
			return &wireError{path, "", fmt.Sprintf("unknown field number %d", num)}
		}
		if !fd.IsList() && !fd.IsMap() {
			if seen[fd.Index()] {
				return &wireError{path, fd.Name(), "given more than once"}
			}
			seen[fd.Index()] = true
			if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
				if prev := oneofs[od.Index()]; prev != nil {
					return &wireError{path, "", fmt.Sprintf("both %s and %s of oneof %s are given", prev.Name(), fd.Name(), od.Name())}
				}
				oneofs[od.Index()] = fd
			}
		}
		packed := fd.IsList() && fd.IsPacked()
		want := wireTypeOf(fd.Kind())
		if packed {
			want = protowire.BytesType
		}
		if typ != want {
			if fd.IsList() && (typ == protowire.BytesType || want == protowire.BytesType) && isScalar(fd.Kind()) {
				return &wireError{path, fd.Name(), "packed and unpacked encodings confused"}
			}
			return &wireError{path, fd.Name(), fmt.Sprintf("wire type %d, the field has %d", typ, want)}
		}
		var err error
		switch typ {
		case protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return &wireError{path, fd.Name(), "truncated varint"}
			}
			b = b[n:]
			err = checkVarint(fd, v, path)
		case protowire.Fixed32Type:
			_, n := protowire.ConsumeFixed32(b)
			if n < 0 {
				return &wireError{path, fd.Name(), "truncated fixed32"}
			}
			b = b[n:]
		case protowire.Fixed64Type:
			_, n := protowire.ConsumeFixed64(b)
			if n < 0 {
				return &wireError{path, fd.Name(), "truncated fixed64"}
			}
			b = b[n:]
		case protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return &wireError{path, fd.Name(), "truncated length-delimited field"}
			}
			b = b[n:]
			switch {
			case packed:
				err = checkPacked(fd, v, path)
			case fd.IsMap():
				var key string
				if key, err = checkMapEntry(fd, v, path, depth); err == nil {
					if keys == nil {
						keys = map[protoreflect.FieldNumber]map[string]bool{}
					}
					if keys[num] == nil {
						keys[num] = map[string]bool{}
					}
					if keys[num][key] {
						return &wireError{path, fd.Name(), "a map key given more than once"}
					}
					keys[num][key] = true
				}
			case fd.Kind() == protoreflect.StringKind:
				if !utf8.Valid(v) {
					err = &wireError{path, fd.Name(), "not valid UTF-8"}
				}
			case fd.Kind() == protoreflect.MessageKind:
				err = checkMessage(v, fd.Message(), path+"."+string(fd.Name()), depth+1)
			}
		default:
			// Groups: wireTypeOf names none, so typ != want above.
			return &wireError{path, fd.Name(), "groups are not supported"}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkMapEntry checks one map entry and returns its key, decoded (two
// encodings of one key are the same key). A missing key is the zero key.
func checkMapEntry(fd protoreflect.FieldDescriptor, b []byte, path string, depth int) (string, error) {
	if err := checkMessage(b, fd.Message(), path+"."+string(fd.Name()), depth+1); err != nil {
		return "", err
	}
	key := ""
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		b = b[n:]
		n = protowire.ConsumeFieldValue(num, typ, b)
		if num == 1 {
			switch typ {
			case protowire.BytesType:
				v, _ := protowire.ConsumeBytes(b)
				key = string(v)
			case protowire.VarintType:
				v, _ := protowire.ConsumeVarint(b)
				key = strconv.FormatUint(v, 10)
			default:
				key = string(b[:n])
			}
		}
		b = b[n:]
	}
	return key, nil
}

// checkPacked checks the elements of a packed repeated number field.
func checkPacked(fd protoreflect.FieldDescriptor, b []byte, path string) error {
	typ := wireTypeOf(fd.Kind())
	for len(b) > 0 {
		var n int
		switch typ {
		case protowire.VarintType:
			var v uint64
			v, n = protowire.ConsumeVarint(b)
			if n >= 0 {
				if err := checkVarint(fd, v, path); err != nil {
					return err
				}
			}
		case protowire.Fixed32Type:
			_, n = protowire.ConsumeFixed32(b)
		case protowire.Fixed64Type:
			_, n = protowire.ConsumeFixed64(b)
		}
		if n < 0 {
			return &wireError{path, fd.Name(), "truncated packed element"}
		}
		b = b[n:]
	}
	return nil
}

// checkVarint refuses a varint its field's type cannot hold: decoders
// truncate (an int32 of 2^32+1 reads as 1) where the gateway would need to
// agree with them.
func checkVarint(fd protoreflect.FieldDescriptor, v uint64, path string) error {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		if v > 1 {
			return &wireError{path, fd.Name(), "a bool other than 0 and 1"}
		}
	case protoreflect.Int32Kind, protoreflect.EnumKind:
		if int64(v) < math.MinInt32 || int64(v) > math.MaxInt32 {
			return &wireError{path, fd.Name(), "out of the range of int32"}
		}
		if fd.Kind() == protoreflect.EnumKind && fd.Enum().Values().ByNumber(protoreflect.EnumNumber(int32(v))) == nil {
			return &wireError{path, fd.Name(), fmt.Sprintf("enum number %d is not defined", int32(v))}
		}
	case protoreflect.Uint32Kind:
		if v > math.MaxUint32 {
			return &wireError{path, fd.Name(), "out of the range of uint32"}
		}
	case protoreflect.Sint32Kind:
		if s := protowire.DecodeZigZag(v); s < math.MinInt32 || s > math.MaxInt32 {
			return &wireError{path, fd.Name(), "out of the range of sint32"}
		}
	}
	return nil
}

// wireTypeOf is the wire type of one value of kind k; -1 for groups,
// which the A2A schemas do not use.
func wireTypeOf(k protoreflect.Kind) protowire.Type {
	switch k {
	case protoreflect.BoolKind, protoreflect.EnumKind, protoreflect.Int32Kind, protoreflect.Sint32Kind,
		protoreflect.Uint32Kind, protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Uint64Kind:
		return protowire.VarintType
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		return protowire.Fixed32Type
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		return protowire.Fixed64Type
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind:
		return protowire.BytesType
	}
	return -1
}

// isScalar reports whether k is a number kind, the ones that pack.
func isScalar(k protoreflect.Kind) bool {
	t := wireTypeOf(k)
	return t == protowire.VarintType || t == protowire.Fixed32Type || t == protowire.Fixed64Type
}
