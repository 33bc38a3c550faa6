package jose

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
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
	s := getScratch()
	defer s.release()
	s.p.data, s.p.build = data, &s.t
	if err := s.p.parse(); err != nil {
		return nil, err
	}
	return s.t.root, nil
}

// jsonBuilder is told what a jsonParser reads, in input order, once the
// parser has checked it. The slices it is given are valid only for the call.
type jsonBuilder interface {
	null()
	boolean(b bool)
	number(f float64) error
	text(s []byte)
	beginArray()
	endArray()
	beginObject()
	member(name []byte) // before the member's value
	// endObject gives the object's members, as numbered in input order,
	// in their RFC 8785 order.
	endObject(order []int)
}

// jsonParser holds every rule of what JSON text is accepted, for both the
// tree of ParseJSON and the single pass of Canonicalize.
type jsonParser struct {
	data  []byte
	pos   int
	build jsonBuilder
	// decoded holds the decoded text of escaped member names of the open
	// objects, then that of the string being read.
	decoded []byte
	names   [][]byte // member names of the open objects, innermost last
	order   []int    // scratch for endObject
}

// parse reads all of p.data as one JSON value.
func (p *jsonParser) parse() error {
	p.skipSpace()
	if err := p.value(0); err != nil {
		return err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return p.fail("unexpected data after the top-level value")
	}
	return nil
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

func (p *jsonParser) value(depth int) error {
	if depth > maxJSONDepth {
		return p.fail("nesting too deep")
	}
	if p.pos >= len(p.data) {
		return p.fail("unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		mark := len(p.decoded)
		s, err := p.str()
		if err != nil {
			return err
		}
		p.build.text(s)
		p.decoded = p.decoded[:mark]
		return nil
	case c == '-' || (c >= '0' && c <= '9'):
		f, err := p.number()
		if err != nil {
			return err
		}
		return p.build.number(f)
	default:
		return p.literal()
	}
}

func (p *jsonParser) literal() error {
	rest := p.data[p.pos:]
	switch {
	case bytes.HasPrefix(rest, []byte("true")):
		p.pos += len("true")
		p.build.boolean(true)
	case bytes.HasPrefix(rest, []byte("false")):
		p.pos += len("false")
		p.build.boolean(false)
	case bytes.HasPrefix(rest, []byte("null")):
		p.pos += len("null")
		p.build.null()
	default:
		return p.fail("invalid value")
	}
	return nil
}

func (p *jsonParser) object(depth int) error {
	p.pos++ // '{'
	p.build.beginObject()
	names, decoded := len(p.names), len(p.decoded)
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return p.endObject(names, decoded)
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return p.fail("expected a member name")
		}
		name, err := p.str()
		if err != nil {
			return err
		}
		p.names = append(p.names, name)
		p.build.member(name)
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return p.fail("expected ':'")
		}
		p.pos++
		p.skipSpace()
		if err := p.value(depth + 1); err != nil {
			return err
		}
		p.skipSpace()
		if p.pos >= len(p.data) {
			return p.fail("unterminated object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return p.endObject(names, decoded)
		default:
			return p.fail("expected ',' or '}'")
		}
	}
}

// endObject closes the object whose member names start at p.names[first]
// and whose decoded text starts at p.decoded[decoded]. Sorting the names
// both finds duplicates, which are compared decoded ("a" and "\u0061" are
// the same name), and gives the builder the RFC 8785 order.
func (p *jsonParser) endObject(first, decoded int) error {
	names := p.names[first:]
	order := p.order[:0]
	for i := range names {
		order = append(order, i)
	}
	slices.SortFunc(order, func(i, j int) int { return compareUTF16(names[i], names[j]) })
	// Names are valid UTF-8, so equal ones sort next to each other.
	for k := 1; k < len(order); k++ {
		if name := names[order[k]]; bytes.Equal(names[order[k-1]], name) {
			return p.fail("duplicate member name " + strconv.Quote(clip(string(name))))
		}
	}
	p.build.endObject(order)
	p.order = order
	p.names = p.names[:first]
	p.decoded = p.decoded[:decoded]
	return nil
}

func (p *jsonParser) array(depth int) error {
	p.pos++ // '['
	p.build.beginArray()
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		p.build.endArray()
		return nil
	}
	for {
		p.skipSpace()
		if err := p.value(depth + 1); err != nil {
			return err
		}
		p.skipSpace()
		if p.pos >= len(p.data) {
			return p.fail("unterminated array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			p.build.endArray()
			return nil
		default:
			return p.fail("expected ',' or ']'")
		}
	}
}

// number validates the RFC 8259 number grammar, then converts to the IEEE
// 754 double that RFC 8785 serialises.
func (p *jsonParser) number() (float64, error) {
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
		return 0, p.fail("invalid number")
	}
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		p.pos++
		if p.digits() == 0 {
			return 0, p.fail("invalid number fraction")
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if p.digits() == 0 {
			return 0, p.fail("invalid number exponent")
		}
	}
	f, err := strconv.ParseFloat(string(p.data[start:p.pos]), 64)
	if err != nil && !math.IsInf(f, 0) {
		return 0, p.fail("invalid number")
	}
	if math.IsInf(f, 0) {
		return 0, p.fail("number outside the IEEE 754 double range")
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

// str reads a string, p.pos on its opening quote. Its text is a slice of
// p.data if it has no escapes, else decoded onto the end of p.decoded.
func (p *jsonParser) str() ([]byte, error) {
	p.pos++ // opening quote
	// Text between escapes is taken in runs, as it is: valid UTF-8 reads
	// back as the same bytes.
	mark := len(p.decoded)
	escaped := false
	run := p.pos
	for {
		p.pos += plainASCII(p.data[p.pos:])
		if p.pos >= len(p.data) {
			return nil, p.fail("unterminated string")
		}
		c := p.data[p.pos]
		switch {
		case c == '"':
			text := p.data[run:p.pos]
			p.pos++
			if !escaped {
				return text, nil
			}
			p.decoded = append(p.decoded, text...)
			return p.decoded[mark:], nil
		case c == '\\':
			p.decoded = append(p.decoded, p.data[run:p.pos]...)
			escaped = true
			if err := p.escape(); err != nil {
				return nil, err
			}
			run = p.pos
		case c < 0x20:
			return nil, p.fail("control character in string")
		default:
			r, size := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && size <= 1 {
				return nil, p.fail("invalid UTF-8")
			}
			p.pos += size
		}
	}
}

// plainASCII is the length of the run of ASCII at the start of s that
// stands for itself in a string: most of the text of most strings.
func plainASCII(s []byte) int {
	for i, c := range s {
		if c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			return i
		}
	}
	return len(s)
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

// escape decodes one escape onto p.decoded, p.pos on its backslash.
func (p *jsonParser) escape() error {
	p.pos++ // backslash
	if p.pos >= len(p.data) {
		return p.fail("unterminated escape")
	}
	if b, ok := simpleEscape(p.data[p.pos]); ok {
		p.decoded = append(p.decoded, b)
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
		p.decoded = utf8.AppendRune(p.decoded, combined)
	case utf16.IsSurrogate(r):
		return p.fail("unpaired surrogate")
	default:
		p.decoded = utf8.AppendRune(p.decoded, r)
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

// treeBuilder builds the values ParseJSON returns.
type treeBuilder struct {
	root any
	open []treeNode // the open arrays and objects, innermost last
}

// treeNode is an open array or object.
type treeNode struct {
	obj *Object // nil for an array
	arr []any
}

// add puts v in the innermost open value: as the value of its last member
// or as its last element; outside them all, v is the root.
func (t *treeBuilder) add(v any) {
	if len(t.open) == 0 {
		t.root = v
		return
	}
	n := &t.open[len(t.open)-1]
	if n.obj != nil {
		n.obj.Members[len(n.obj.Members)-1].Value = v
	} else {
		n.arr = append(n.arr, v)
	}
}

// close adds the innermost open value to the one around it.
func (t *treeBuilder) close() {
	n := t.open[len(t.open)-1]
	t.open = t.open[:len(t.open)-1]
	if n.obj != nil {
		t.add(n.obj)
	} else {
		t.add(n.arr)
	}
}

func (t *treeBuilder) null()                  { t.add(nil) }
func (t *treeBuilder) boolean(b bool)         { t.add(b) }
func (t *treeBuilder) number(f float64) error { t.add(f); return nil }
func (t *treeBuilder) text(s []byte)          { t.add(string(s)) }
func (t *treeBuilder) beginArray()            { t.open = append(t.open, treeNode{arr: []any{}}) }
func (t *treeBuilder) endArray()              { t.close() }
func (t *treeBuilder) beginObject()           { t.open = append(t.open, treeNode{obj: &Object{}}) }
func (t *treeBuilder) endObject([]int)        { t.close() }

func (t *treeBuilder) member(name []byte) {
	obj := t.open[len(t.open)-1].obj
	obj.Members = append(obj.Members, Member{Key: string(name)})
}
