package jose

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Object is a JSON object as ParseJSON reads it: its members in input
// order, which Canonical sorts on output.
type Object struct {
	Members []Member
}

// Member is one member of an Object.
type Member struct {
	Key   string
	Value any
}

// Get is the value of the member named key.
func (o *Object) Get(key string) (any, bool) {
	for _, m := range o.Members {
		if m.Key == key {
			return m.Value, true
		}
	}
	return nil, false
}

// Without is o without the members named key.
func (o *Object) Without(key string) *Object {
	out := &Object{Members: make([]Member, 0, len(o.Members))}
	for _, m := range o.Members {
		if m.Key != key {
			out.Members = append(out.Members, m)
		}
	}
	return out
}

// ParseJSON decodes data into nil, bool, float64, string, []any and
// *Object values. encoding/json is not used because it silently keeps
// the last of duplicate members and replaces lone surrogates.
func ParseJSON(data []byte) (any, error) {
	p := &jsonParser{data: data}
	p.skipSpace()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return nil, p.fail("unexpected data after the top-level value")
	}
	return v, nil
}

type jsonParser struct {
	data []byte
	pos  int
}

func (p *jsonParser) fail(msg string) error {
	return fmt.Errorf("%w: %s at offset %d", ErrNotCanonicalizable, msg, p.pos)
}

func (p *jsonParser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, p.fail("nesting too deep")
	}
	if p.pos >= len(p.data) {
		return nil, p.fail("unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		return p.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		for _, lit := range []struct {
			text  string
			value any
		}{{"true", true}, {"false", false}, {"null", nil}} {
			if bytes.HasPrefix(p.data[p.pos:], []byte(lit.text)) {
				p.pos += len(lit.text)
				return lit.value, nil
			}
		}
		return nil, p.fail("invalid value")
	}
}

func (p *jsonParser) object(depth int) (any, error) {
	p.pos++ // '{'
	obj := &Object{}
	seen := map[string]struct{}{}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return obj, nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.fail("expected a member name")
		}
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		if _, dup := seen[key]; dup {
			return nil, p.fail("duplicate member name " + strconv.Quote(clip(key)))
		}
		seen[key] = struct{}{}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.fail("expected ':'")
		}
		p.pos++
		p.skipSpace()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		obj.Members = append(obj.Members, Member{key, v})
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.fail("unterminated object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return obj, nil
		default:
			return nil, p.fail("expected ',' or '}'")
		}
	}
}

func (p *jsonParser) array(depth int) (any, error) {
	p.pos++ // '['
	arr := []any{}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return arr, nil
	}
	for {
		p.skipSpace()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		arr = append(arr, v)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.fail("unterminated array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return arr, nil
		default:
			return nil, p.fail("expected ',' or ']'")
		}
	}
}

// number validates the RFC 8259 number grammar, then converts to the IEEE
// 754 double that RFC 8785 serialises.
func (p *jsonParser) number() (any, error) {
	start := p.pos
	if p.data[p.pos] == '-' {
		p.pos++
	}
	switch {
	case p.pos < len(p.data) && p.data[p.pos] == '0':
		p.pos++
	case p.pos < len(p.data) && p.data[p.pos] >= '1' && p.data[p.pos] <= '9':
		p.digits()
	default:
		return nil, p.fail("invalid number")
	}
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		p.pos++
		if p.digits() == 0 {
			return nil, p.fail("invalid number fraction")
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if p.digits() == 0 {
			return nil, p.fail("invalid number exponent")
		}
	}
	f, err := strconv.ParseFloat(string(p.data[start:p.pos]), 64)
	if err != nil && !math.IsInf(f, 0) {
		return nil, p.fail("invalid number")
	}
	if math.IsInf(f, 0) {
		return nil, p.fail("number outside the IEEE 754 double range")
	}
	return f, nil
}

func (p *jsonParser) digits() int {
	n := 0
	for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
		p.pos++
		n++
	}
	return n
}

func (p *jsonParser) str() (string, error) {
	p.pos++ // opening quote
	// Text between escapes is taken in runs, as it is: valid UTF-8 reads
	// back as the same bytes.
	var sb strings.Builder
	escaped := false
	run := p.pos
	for {
		if p.pos >= len(p.data) {
			return "", p.fail("unterminated string")
		}
		c := p.data[p.pos]
		switch {
		case c == '"':
			text := p.data[run:p.pos]
			p.pos++
			if !escaped {
				return string(text), nil
			}
			sb.Write(text)
			return sb.String(), nil
		case c == '\\':
			sb.Write(p.data[run:p.pos])
			escaped = true
			if err := p.escape(&sb); err != nil {
				return "", err
			}
			run = p.pos
		case c < 0x20:
			return "", p.fail("control character in string")
		case c < utf8.RuneSelf:
			p.pos++
		default:
			r, size := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && size <= 1 {
				return "", p.fail("invalid UTF-8")
			}
			p.pos += size
		}
	}
}

// simpleEscape decodes the one-character escapes of RFC 8259 section 7.
func simpleEscape(c byte) (byte, bool) {
	switch c {
	case '"', '\\', '/':
		return c, true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}

func (p *jsonParser) escape(sb *strings.Builder) error {
	p.pos++ // backslash
	if p.pos >= len(p.data) {
		return p.fail("unterminated escape")
	}
	if b, ok := simpleEscape(p.data[p.pos]); ok {
		sb.WriteByte(b)
		p.pos++
		return nil
	}
	if p.data[p.pos] != 'u' {
		return p.fail("invalid escape")
	}
	r, err := p.hex4()
	if err != nil {
		return err
	}
	switch {
	case utf16.IsSurrogate(r) && r < 0xDC00:
		if !bytes.HasPrefix(p.data[p.pos:], []byte(`\u`)) {
			return p.fail("unpaired surrogate")
		}
		p.pos++
		lo, err := p.hex4()
		if err != nil {
			return err
		}
		combined := utf16.DecodeRune(r, lo)
		if combined == utf8.RuneError {
			return p.fail("unpaired surrogate")
		}
		sb.WriteRune(combined)
	case utf16.IsSurrogate(r):
		return p.fail("unpaired surrogate")
	default:
		sb.WriteRune(r)
	}
	return nil
}

// hex4 reads "uXXXX" with p.pos on the 'u'.
func (p *jsonParser) hex4() (rune, error) {
	if p.pos+5 > len(p.data) {
		return 0, p.fail("truncated unicode escape")
	}
	n, err := strconv.ParseUint(string(p.data[p.pos+1:p.pos+5]), 16, 16)
	if err != nil {
		return 0, p.fail("invalid unicode escape")
	}
	p.pos += 5
	return rune(n), nil
}
