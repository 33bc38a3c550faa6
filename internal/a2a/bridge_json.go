package a2a

import (
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// The bridge translates objects as the generic values encoding/json
// decodes JSON into (map[string]any, []any, string, json.Number, bool,
// nil) and writes them back. encoding/json does both by reflection and
// reads every value twice (once to find its end, once to decode it),
// which costs a bridged request more than the translation itself. The
// fast paths below read and write exactly the same values in one pass;
// whatever they are not sure of (invalid UTF-8, a lone surrogate, an
// unexpected type, anything malformed) they leave to encoding/json, so
// the result, or the error, is always encoding/json's.

// maxFastDepth bounds the fast decoder's recursion; deeper documents are
// left to encoding/json, which has its own limit.
const maxFastDepth = 64

// fastDecode decodes b, one JSON value and nothing but white space after
// it, as encoding/json with UseNumber would. ok is false when it leaves b
// to encoding/json.
func fastDecode(b []byte) (v any, ok bool) {
	d := fastDecoder{b: b}
	v, ok = d.value(0)
	if !ok {
		return nil, false
	}
	d.space()
	return v, d.i == len(b)
}

type fastDecoder struct {
	b []byte
	i int
}

func (d *fastDecoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *fastDecoder) value(depth int) (any, bool) {
	d.space()
	if d.i >= len(d.b) || depth > maxFastDepth {
		return nil, false
	}
	switch c := d.b[d.i]; {
	case c == '{':
		return d.object(depth)
	case c == '[':
		return d.array(depth)
	case c == '"':
		s, ok := d.string()
		return s, ok
	case c == '-' || '0' <= c && c <= '9':
		return d.number()
	}
	for _, lit := range [...]struct {
		text string
		v    any
	}{{"true", true}, {"false", false}, {"null", nil}} {
		if len(d.b)-d.i >= len(lit.text) && string(d.b[d.i:d.i+len(lit.text)]) == lit.text {
			d.i += len(lit.text)
			return lit.v, true
		}
	}
	return nil, false
}

func (d *fastDecoder) object(depth int) (any, bool) {
	d.i++ // {
	o := map[string]any{}
	d.space()
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
		return o, true
	}
	for {
		d.space()
		if d.i >= len(d.b) || d.b[d.i] != '"' {
			return nil, false
		}
		k, ok := d.string()
		if !ok {
			return nil, false
		}
		d.space()
		if d.i >= len(d.b) || d.b[d.i] != ':' {
			return nil, false
		}
		d.i++
		v, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		// A member given twice: the last wins, as with encoding/json.
		o[k] = v
		d.space()
		if d.i >= len(d.b) {
			return nil, false
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			return o, true
		default:
			return nil, false
		}
	}
}

func (d *fastDecoder) array(depth int) (any, bool) {
	d.i++ // [
	a := []any{}
	d.space()
	if d.i < len(d.b) && d.b[d.i] == ']' {
		d.i++
		return a, true
	}
	for {
		v, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		d.space()
		if d.i >= len(d.b) {
			return nil, false
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case ']':
			d.i++
			return a, true
		default:
			return nil, false
		}
	}
}

// string reads a string at d.i (its opening quote). Invalid UTF-8 and
// lone surrogates, which encoding/json replaces, are left to it.
func (d *fastDecoder) string() (string, bool) {
	start := d.i + 1
	i := start
	for i < len(d.b) {
		c := d.b[i]
		switch {
		case c == '"':
			s := d.b[start:i]
			if !utf8.Valid(s) {
				return "", false
			}
			d.i = i + 1
			return string(s), true
		case c == '\\':
			return d.escaped(start)
		case c < 0x20:
			return "", false
		}
		i++
	}
	return "", false
}

// escaped reads a string with escapes, from start (after the quote).
func (d *fastDecoder) escaped(start int) (string, bool) {
	out := make([]byte, 0, 2*(len(d.b)-start))
	i := start
	for i < len(d.b) {
		c := d.b[i]
		switch {
		case c == '"':
			if !utf8.Valid(out) {
				return "", false
			}
			d.i = i + 1
			return string(out), true
		case c < 0x20:
			return "", false
		case c != '\\':
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(d.b) {
			return "", false
		}
		switch e := d.b[i+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(d.b[i+2:])
			if !ok {
				return "", false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				// Only a high surrogate followed by a low one is a rune.
				if len(d.b)-i < 6 || d.b[i] != '\\' || d.b[i+1] != 'u' {
					return "", false
				}
				r2, ok := hex4(d.b[i+2:])
				if r = utf16.DecodeRune(r, r2); !ok || r == utf8.RuneError {
					return "", false
				}
				i += 6
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			return "", false
		}
		i += 2
	}
	return "", false
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// number reads a number as its literal: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *fastDecoder) number() (any, bool) {
	b, start := d.b, d.i
	i := start
	digits := func() bool {
		n := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		return i > n
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		return nil, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return nil, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return nil, false
		}
	}
	d.i = i
	return json.Number(b[start:i]), true
}

// appendFastJSON appends v as encoding/json writes it (map keys sorted;
// HTML characters escaped when html is set, as json.Marshal does, or not,
// as an Encoder with SetEscapeHTML(false) does). ok is false when v holds
// a value it leaves to encoding/json.
func appendFastJSON(dst []byte, v any, html bool) (out []byte, ok bool) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case bool:
		return strconv.AppendBool(dst, x), true
	case string:
		return appendFastString(dst, x, html)
	case json.Number:
		// Only what the decoder reads as a number; encoding/json checks
		// the rest and writes "" as 0.
		d := fastDecoder{b: []byte(x)}
		if _, ok := d.number(); !ok || d.i != len(x) {
			return dst, false
		}
		return append(dst, x...), true
	case map[string]any:
		if x == nil {
			return append(dst, "null"...), true
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, ok = appendFastString(dst, k, html); !ok {
				return dst, false
			}
			dst = append(dst, ':')
			if dst, ok = appendFastJSON(dst, x[k], html); !ok {
				return dst, false
			}
		}
		return append(dst, '}'), true
	case []any:
		if x == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, ok = appendFastJSON(dst, e, html); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	}
	return dst, false
}

// appendFastString quotes s as encoding/json does; invalid UTF-8, which
// it replaces, is left to it.
func appendFastString(dst []byte, s string, html bool) ([]byte, bool) {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!html || c != '<' && c != '>' && c != '&') {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
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
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return dst, false
		}
		if r == '\u2028' || r == '\u2029' {
			// encoding/json escapes the JavaScript line separators.
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
			start = i + size
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"'), true
}
