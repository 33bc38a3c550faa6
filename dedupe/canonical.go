package dedupe

import (
	"bytes"
	"encoding/json"
	"errors"
	"hash"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// The fingerprint of a send is computed on every first-seen request, so
// its canonical form is written in one pass over the body instead of
// decoding it into maps and encoding them again. The bytes are exactly
// those json.Marshal gives the value a json.Decoder with UseNumber reads
// (canonicalSlow, the form earlier versions hashed), so records written
// before keep matching their retries: members sorted by name, the last of
// duplicate names kept, no white space, strings escaped as encoding/json
// escapes them, numbers as written. Bodies nested deeper than
// maxCanonicalDepth take canonicalSlow, which bounds the copying the one
// pass does per level.

const maxCanonicalDepth = 32

var (
	errSyntax   = errors.New("dedupe: malformed JSON")
	errTooDeep  = errors.New("dedupe: JSON nested too deep for the one-pass canonical form")
	hexDigits   = "0123456789abcdef"
	replacement = []byte("\uFFFD")
)

// canonicalParams returns the canonical form of a JSON-RPC request's
// params, "null" without params, the way json.Unmarshal into a struct with
// a params member reads it: the whole body must be valid, names match in
// any letter case, the last match wins. The bytes may be c's own, good
// until c is used again.
func (c *canonicalizer) canonicalParams(body []byte) ([]byte, error) {
	c.reset(body)
	out, err := c.params()
	if errors.Is(err, errTooDeep) {
		var env struct {
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(body, &env); err != nil {
			return nil, err
		}
		return canonicalSlow(env.Params)
	}
	return out, err
}

// canonicalValue returns the canonical form of the first JSON value in b,
// "null" for a blank b. The bytes may be c's own, good until c is used
// again.
func (c *canonicalizer) canonicalValue(b []byte) ([]byte, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return []byte("null"), nil
	}
	c.reset(b)
	out, err := c.top()
	if errors.Is(err, errTooDeep) {
		return canonicalSlow(b)
	}
	return out, err
}

// canonicalSlow decodes b and encodes it again.
func canonicalSlow(b []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if len(bytes.TrimSpace(b)) > 0 {
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
	}
	return json.Marshal(v)
}

type canonicalizer struct {
	src []byte
	pos int
	out []byte
	// names holds the decoded member names of the objects being read.
	names   []byte
	members []member
	scratch []byte
	str     []byte
	depth   int
	// sum is the fingerprint's hash, kept with the buffers for reuse.
	sum hash.Hash
}

// reset readies c for src, keeping the buffers of its earlier uses. They
// start at the size of src, which the canonical form of a typical body
// does not outgrow.
func (c *canonicalizer) reset(src []byte) {
	if cap(c.out) < len(src) {
		c.out = make([]byte, 0, len(src))
	}
	if c.names == nil {
		c.names, c.members = make([]byte, 0, 256), make([]member, 0, 16)
	}
	*c = canonicalizer{src: src, out: c.out[:0], names: c.names[:0], members: c.members[:0], scratch: c.scratch, str: c.str, sum: c.sum}
}

// member is one written member of an object: its decoded name in names and
// its `"name":value` in out.
type member struct {
	name0, name1 int
	start, end   int
}

func (c *canonicalizer) top() ([]byte, error) {
	// A decoder reads the first value and leaves what follows it unread.
	if err := c.value(); err != nil {
		return nil, err
	}
	return c.out, nil
}

func (c *canonicalizer) params() ([]byte, error) {
	c.space()
	if c.literalIs("null") {
		c.pos += len("null")
		return c.end([]byte("null"))
	}
	if c.pos == len(c.src) || c.src[c.pos] != '{' {
		return nil, errSyntax
	}
	c.pos++
	var found []byte
	if c.space(); c.pos < len(c.src) && c.src[c.pos] == '}' {
		c.pos++
		return c.end([]byte("null"))
	}
	for {
		c.space()
		var err error
		if c.str, err = c.unquote(c.str[:0]); err != nil {
			return nil, err
		}
		isParams := strings.EqualFold(string(c.str), "params")
		if err := c.colon(); err != nil {
			return nil, err
		}
		start := len(c.out)
		if err := c.value(); err != nil {
			return nil, err
		}
		if isParams {
			found = c.out[start:]
		}
		next, err := c.next('}')
		if err != nil {
			return nil, err
		}
		if !next {
			break
		}
	}
	if found == nil {
		found = []byte("null")
	}
	return c.end(found)
}

// end requires nothing but white space after the value just read.
func (c *canonicalizer) end(out []byte) ([]byte, error) {
	if c.space(); c.pos != len(c.src) {
		return nil, errSyntax
	}
	return out, nil
}

func (c *canonicalizer) value() error {
	c.space()
	if c.pos == len(c.src) {
		return errSyntax
	}
	switch b := c.src[c.pos]; {
	case b == '{':
		return c.object()
	case b == '[':
		return c.array()
	case b == '"':
		return c.stringValue()
	case b == '-' || '0' <= b && b <= '9':
		return c.number()
	}
	for _, lit := range []string{"true", "false", "null"} {
		if c.literalIs(lit) {
			c.pos += len(lit)
			c.out = append(c.out, lit...)
			return nil
		}
	}
	return errSyntax
}

func (c *canonicalizer) literalIs(lit string) bool {
	return len(c.src)-c.pos >= len(lit) && string(c.src[c.pos:c.pos+len(lit)]) == lit
}

func (c *canonicalizer) enter() error {
	if c.depth++; c.depth > maxCanonicalDepth {
		return errTooDeep
	}
	return nil
}

func (c *canonicalizer) object() error {
	if err := c.enter(); err != nil {
		return err
	}
	c.pos++
	start := len(c.out)
	c.out = append(c.out, '{')
	if c.space(); c.pos < len(c.src) && c.src[c.pos] == '}' {
		c.pos++
		c.out = append(c.out, '}')
		c.depth--
		return nil
	}
	base, names := len(c.members), len(c.names)
	for {
		c.space()
		name0 := len(c.names)
		var err error
		if c.names, err = c.unquote(c.names); err != nil {
			return err
		}
		m := member{name0: name0, name1: len(c.names), start: len(c.out)}
		if err := c.colon(); err != nil {
			return err
		}
		c.out = appendString(c.out, c.names[m.name0:m.name1])
		c.out = append(c.out, ':')
		if err := c.value(); err != nil {
			return err
		}
		m.end = len(c.out)
		c.members = append(c.members, m)
		next, err := c.next('}')
		if err != nil {
			return err
		}
		if !next {
			break
		}
		c.out = append(c.out, ',')
	}
	c.sortMembers(start, c.members[base:])
	c.out = append(c.out, '}')
	c.members, c.names = c.members[:base], c.names[:names]
	c.depth--
	return nil
}

// sortMembers rewrites the members written since start in name order,
// keeping the last of equal names, unless they are in that order already.
func (c *canonicalizer) sortMembers(start int, ms []member) {
	name := func(m member) []byte { return c.names[m.name0:m.name1] }
	sorted := true
	for i := 1; i < len(ms) && sorted; i++ {
		sorted = bytes.Compare(name(ms[i-1]), name(ms[i])) < 0
	}
	if sorted {
		return
	}
	c.scratch = append(c.scratch[:0], c.out[start:]...)
	slices.SortStableFunc(ms, func(a, b member) int { return bytes.Compare(name(a), name(b)) })
	c.out = append(c.out[:start], '{')
	first := true
	for i, m := range ms {
		if i+1 < len(ms) && bytes.Equal(name(ms[i+1]), name(m)) {
			continue
		}
		if !first {
			c.out = append(c.out, ',')
		}
		first = false
		c.out = append(c.out, c.scratch[m.start-start:m.end-start]...)
	}
}

func (c *canonicalizer) array() error {
	if err := c.enter(); err != nil {
		return err
	}
	c.pos++
	c.out = append(c.out, '[')
	if c.space(); c.pos < len(c.src) && c.src[c.pos] == ']' {
		c.pos++
		c.out = append(c.out, ']')
		c.depth--
		return nil
	}
	for {
		if err := c.value(); err != nil {
			return err
		}
		next, err := c.next(']')
		if err != nil {
			return err
		}
		if !next {
			break
		}
		c.out = append(c.out, ',')
	}
	c.out = append(c.out, ']')
	c.depth--
	return nil
}

// next reads a comma (true) or the closing byte (false).
func (c *canonicalizer) next(closing byte) (bool, error) {
	c.space()
	if c.pos < len(c.src) {
		switch c.src[c.pos] {
		case ',':
			c.pos++
			return true, nil
		case closing:
			c.pos++
			return false, nil
		}
	}
	return false, errSyntax
}

func (c *canonicalizer) colon() error {
	if c.space(); c.pos == len(c.src) || c.src[c.pos] != ':' {
		return errSyntax
	}
	c.pos++
	return nil
}

func (c *canonicalizer) space() {
	for c.pos < len(c.src) && isSpace(c.src[c.pos]) {
		c.pos++
	}
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

func (c *canonicalizer) number() error {
	s, i := c.src, c.pos
	if s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && '1' <= s[i] && s[i] <= '9':
		i = digits(s, i)
	default:
		return errSyntax
	}
	if i < len(s) && s[i] == '.' {
		if i = digits(s, i+1); s[i-1] == '.' {
			return errSyntax
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := digits(s, i)
		if j == i {
			return errSyntax
		}
		i = j
	}
	c.out = append(c.out, s[c.pos:i]...)
	c.pos = i
	return nil
}

func digits(s []byte, i int) int {
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	return i
}

// stringValue copies a string that encoding/json would write back as it
// is, and decodes and escapes any other.
func (c *canonicalizer) stringValue() error {
	s := c.src
	for i := c.pos + 1; i < len(s); {
		b := s[i]
		if b == '"' {
			c.out = append(c.out, s[c.pos:i+1]...)
			c.pos = i + 1
			return nil
		}
		if b < utf8.RuneSelf {
			if !htmlSafe(b) {
				break
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			break
		}
		i += size
	}
	var err error
	if c.str, err = c.unquote(c.str[:0]); err != nil {
		return err
	}
	c.out = appendString(c.out, c.str)
	return nil
}

// unquote appends the value of the string at c.pos to dst, as
// encoding/json decodes it: invalid UTF-8 and lone surrogates become
// U+FFFD.
func (c *canonicalizer) unquote(dst []byte) ([]byte, error) {
	s := c.src
	if c.pos == len(s) || s[c.pos] != '"' {
		return nil, errSyntax
	}
	i := c.pos + 1
	for i < len(s) {
		switch b := s[i]; {
		case b == '"':
			c.pos = i + 1
			return dst, nil
		case b == '\\':
			if i+1 == len(s) {
				return nil, errSyntax
			}
			switch e := s[i+1]; e {
			case '"', '\\', '/':
				dst = append(dst, e)
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := hex4(s[i+2:])
				if r < 0 {
					return nil, errSyntax
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if r2 := escapedRune(s[i:]); r2 >= 0 {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							dst = utf8.AppendRune(dst, dec)
							i += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default:
				return nil, errSyntax
			}
			i += 2
		case b < ' ':
			return nil, errSyntax
		case b < utf8.RuneSelf:
			dst = append(dst, b)
			i++
		default:
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, replacement...)
			} else {
				dst = append(dst, s[i:i+size]...)
			}
			i += size
		}
	}
	return nil, errSyntax
}

// escapedRune reads a \uXXXX escape at the start of s, or returns -1.
func escapedRune(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	return hex4(s[2:])
}

func hex4(s []byte) rune {
	if len(s) < 4 {
		return -1
	}
	var r rune
	for _, b := range s[:4] {
		switch {
		case '0' <= b && b <= '9':
			b -= '0'
		case 'a' <= b && b <= 'f':
			b = b - 'a' + 10
		case 'A' <= b && b <= 'F':
			b = b - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(b)
	}
	return r
}

// htmlSafe reports whether encoding/json writes the ASCII byte b in a
// string as it is.
func htmlSafe(b byte) bool {
	return b >= ' ' && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
}

// appendString writes s as encoding/json writes strings, HTML escaping
// included.
func appendString(dst, s []byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if htmlSafe(b) {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
