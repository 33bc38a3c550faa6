package jose

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrNotCanonicalizable reports JSON text that has no RFC 8785 canonical
// form: invalid syntax, duplicate member names, lone surrogates, numbers
// outside the IEEE 754 double range, or nesting beyond maxJSONDepth.
var ErrNotCanonicalizable = errors.New("json text has no RFC 8785 canonical form")

// maxJSONDepth bounds recursion. Cards come from third parties, and extension
// params nest arbitrarily; no legitimate card comes near this.
const maxJSONDepth = 512

// Canonicalize returns the RFC 8785 (JCS) serialisation of the JSON text in
// data: members sorted by their UTF-16 code units, numbers in ECMAScript
// Number.prototype.toString form, minimal string escaping, no whitespace.
//
// Input must be I-JSON (RFC 7493): duplicate member names and unpaired
// surrogates are refused rather than resolved, because two parties that
// resolve them differently would sign and verify different documents.
//
// It gives what Canonical gives for the tree of ParseJSON, but writes as it
// reads, without building the tree: it runs for every streamed event.
func Canonicalize(data []byte) ([]byte, error) {
	s := getScratch()
	defer s.release()
	s.p.data, s.p.build = data, &s.w
	s.w.budget = maxRewriteFactor * len(data)
	if err := s.p.parse(); err != nil {
		return nil, err
	}
	if s.w.budget < 0 {
		// Text whose objects nest out of order, level under level, would
		// have its inner members copied once per level: the tree does it
		// in one pass over the text it has already checked.
		v, err := ParseJSON(data)
		if err != nil {
			return nil, err
		}
		return Canonical(v)
	}
	return bytes.Clone(s.w.out), nil
}

// maxRewriteFactor bounds what the rewrites of out-of-order objects copy,
// as a multiple of the text's length; past it Canonicalize goes by the
// tree, so no text costs more than a few passes over it.
const maxRewriteFactor = 4

// scratch is the memory a parse works in, pooled so that a Canonicalize
// call allocates only its result.
type scratch struct {
	p jsonParser
	w canonicalWriter
	t treeBuilder
}

var scratches = sync.Pool{New: func() any { return new(scratch) }}

func getScratch() *scratch { return scratches.Get().(*scratch) }

// maxPooledText is the most text a pooled scratch keeps for the next
// call, so that one large document does not stay in memory.
const maxPooledText = 64 << 10

func (s *scratch) release() {
	if cap(s.w.out) > maxPooledText || cap(s.p.decoded) > maxPooledText {
		return
	}
	// The pool must keep neither the caller's data, which the names point
	// into, nor any of a tree it returned.
	clear(s.p.names[:cap(s.p.names)])
	clear(s.t.open[:cap(s.t.open)])
	s.p = jsonParser{decoded: s.p.decoded[:0], names: s.p.names[:0], order: s.p.order[:0]}
	s.w = canonicalWriter{out: s.w.out[:0], starts: s.w.starts[:0], held: s.w.held[:0]}
	s.t = treeBuilder{open: s.t.open[:0]}
	scratches.Put(s)
}

// canonicalWriter writes the RFC 8785 form of what a jsonParser reads.
// Members are written as they come; an object whose members came out of
// order is rewritten in order when it ends.
type canonicalWriter struct {
	out    []byte
	starts []int  // where in out each member of the open objects starts, innermost last
	held   []byte // an object's members while it is rewritten
	// budget is what rewrites may still copy; below zero, out is no
	// longer written in order, and Canonicalize goes by the tree.
	budget int
}

// comma separates a value or member from the one before it: none follows
// the start of an array or object, or a member name.
func (w *canonicalWriter) comma() {
	if n := len(w.out); n > 0 {
		switch w.out[n-1] {
		case '[', '{', ':':
		default:
			w.out = append(w.out, ',')
		}
	}
}

func (w *canonicalWriter) null() {
	w.comma()
	w.out = append(w.out, "null"...)
}

func (w *canonicalWriter) boolean(b bool) {
	w.comma()
	w.out = strconv.AppendBool(w.out, b)
}

func (w *canonicalWriter) number(f float64) (err error) {
	w.comma()
	w.out, err = appendNumber(w.out, f)
	return err
}

func (w *canonicalWriter) text(s []byte) {
	w.comma()
	w.out = appendString(w.out, s)
}

func (w *canonicalWriter) beginArray() {
	w.comma()
	w.out = append(w.out, '[')
}

func (w *canonicalWriter) endArray() {
	w.out = append(w.out, ']')
}

func (w *canonicalWriter) beginObject() {
	w.comma()
	w.out = append(w.out, '{')
}

func (w *canonicalWriter) member(name []byte) {
	w.comma()
	w.starts = append(w.starts, len(w.out))
	w.out = appendString(w.out, name)
	w.out = append(w.out, ':')
}

func (w *canonicalWriter) endObject(order []int) {
	first := len(w.starts) - len(order)
	starts := w.starts[first:]
	w.starts = w.starts[:first]
	if w.budget >= 0 && !slices.IsSorted(order) {
		// The members are set aside and written back in order. Objects
		// already in order, as small ones often are, cost nothing more.
		// Member i is held[at(i):at(i+1)-1], the comma after it left out.
		w.budget -= len(w.out) - starts[0]
		if w.budget >= 0 {
			at := func(i int) int {
				if i == len(starts) {
					return len(w.held) + 1
				}
				return starts[i] - starts[0]
			}
			w.held = append(w.held[:0], w.out[starts[0]:]...)
			w.out = w.out[:starts[0]]
			for k, i := range order {
				if k > 0 {
					w.out = append(w.out, ',')
				}
				w.out = append(w.out, w.held[at(i):at(i+1)-1]...)
			}
		}
	}
	w.out = append(w.out, '}')
}

// Canonical is the RFC 8785 serialisation of v, a value as ParseJSON
// returns it (possibly edited: members removed, values replaced).
func Canonical(v any) ([]byte, error) {
	return appendCanonical(nil, v)
}

func appendCanonical(dst []byte, v any) ([]byte, error) {
	var err error
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		return strconv.AppendBool(dst, v), nil
	case float64:
		return appendNumber(dst, v)
	case string:
		return appendString(dst, v), nil
	case []any:
		dst = append(dst, '[')
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = appendCanonical(dst, e); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	case *Object:
		members := slices.Clone(v.Members)
		slices.SortFunc(members, func(a, b Member) int { return compareUTF16(a.Key, b.Key) })
		dst = append(dst, '{')
		for i, m := range members {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, m.Key)
			dst = append(dst, ':')
			if dst, err = appendCanonical(dst, m.Value); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	default:
		return nil, fmt.Errorf("%w: unsupported value of type %T", ErrNotCanonicalizable, v)
	}
}

// compareUTF16 orders strings by UTF-16 code units (RFC 8785 section 3.2.3),
// which differs from byte order for characters above U+FFFF. It compares
// rune by rune, without converting either string: keys mostly differ early.
func compareUTF16[S string | []byte](a, b S) int {
	for len(a) > 0 && len(b) > 0 {
		ra, na := firstRune(a)
		rb, nb := firstRune(b)
		if ra != rb {
			return cmp.Compare(utf16Units(ra), utf16Units(rb))
		}
		a, b = a[na:], b[nb:]
	}
	return cmp.Compare(len(a), len(b))
}

// firstRune decodes the first rune of s, as utf8.DecodeRune does.
func firstRune[S string | []byte](s S) (rune, int) {
	if s[0] < utf8.RuneSelf {
		return rune(s[0]), 1
	}
	var b [utf8.UTFMax]byte
	return utf8.DecodeRune(b[:copy(b[:], s)])
}

// utf16Units orders one rune as its UTF-16 code units do: the first unit
// in the high half, the second (zero for a rune of one unit) in the low.
func utf16Units(r rune) int {
	if r >= 0x10000 {
		hi, lo := utf16.EncodeRune(r)
		return int(hi)<<16 | int(lo)
	}
	return int(r) << 16
}

// appendString escapes only what RFC 8785 section 3.2.2.2 requires: the
// quote, the backslash and C0 controls (with the short forms where JSON has
// them). The text between them is written in runs.
func appendString[S string | []byte](dst []byte, s S) []byte {
	dst = append(dst, '"')
	run := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[run:i]...)
		run = i + 1
		switch c {
		case '"':
			dst = append(dst, `\"`...)
		case '\\':
			dst = append(dst, `\\`...)
		case '\b':
			dst = append(dst, `\b`...)
		case '\f':
			dst = append(dst, `\f`...)
		case '\n':
			dst = append(dst, `\n`...)
		case '\r':
			dst = append(dst, `\r`...)
		case '\t':
			dst = append(dst, `\t`...)
		default:
			const hex = "0123456789abcdef"
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
	}
	dst = append(dst, s[run:]...)
	return append(dst, '"')
}

// appendNumber renders f as ECMAScript's Number.prototype.toString does
// (ECMA-262 Number::toString, as RFC 8785 section 3.2.2.3 requires). Go's
// shortest round-trip digits are the digits ECMAScript chooses; only the
// placement of the decimal point and exponent differs.
func appendNumber(dst []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("%w: %v is not a JSON number", ErrNotCanonicalizable, f)
	}
	if f == 0 { // also -0, which ECMAScript prints as "0"
		return append(dst, '0'), nil
	}
	if f < 0 {
		dst, f = append(dst, '-'), -f
	}
	// "d.ddddde±XX": the significant digits and the decimal exponent.
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	i := bytes.IndexByte(e, 'e')
	x := 0
	for _, c := range e[i+2:] {
		x = x*10 + int(c-'0')
	}
	if e[i+1] == '-' {
		x = -x
	}
	digits := e[:i]
	if len(digits) > 1 { // drop the point after the first digit
		digits = append(digits[:1], digits[2:]...)
	}
	k, n := len(digits), x+1 // ECMA-262 names: k digits, value = digits × 10^(n−k)
	switch {
	case k <= n && n <= 21:
		dst = append(dst, digits...)
		for range n - k {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, digits[:n]...)
		dst = append(dst, '.')
		dst = append(dst, digits[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, "0."...)
		for range -n {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	default:
		dst = append(dst, digits[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst, nil
}

// clip shortens third-party text for error messages.
func clip(s string) string {
	const max = 64
	if len(s) > max {
		return strings.ToValidUTF8(s[:max], "") + "..."
	}
	return s
}
