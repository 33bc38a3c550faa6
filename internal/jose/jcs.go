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
func Canonicalize(data []byte) ([]byte, error) {
	v, err := ParseJSON(data)
	if err != nil {
		return nil, err
	}
	return Canonical(v)
}

// Canonical is the RFC 8785 serialisation of v, a value as ParseJSON
// returns it (possibly edited: members removed, values replaced).
func Canonical(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeCanonical(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeCanonical(buf *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		buf.WriteString(strconv.FormatBool(v))
	case float64:
		s, err := formatNumber(v)
		if err != nil {
			return err
		}
		buf.WriteString(s)
	case string:
		writeString(buf, v)
	case []any:
		buf.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeCanonical(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case *Object:
		members := slices.Clone(v.Members)
		slices.SortFunc(members, func(a, b Member) int { return compareUTF16(a.Key, b.Key) })
		buf.WriteByte('{')
		for i, m := range members {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, m.Key)
			buf.WriteByte(':')
			if err := writeCanonical(buf, m.Value); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	default:
		return fmt.Errorf("%w: unsupported value of type %T", ErrNotCanonicalizable, v)
	}
	return nil
}

// compareUTF16 orders strings by UTF-16 code units (RFC 8785 section 3.2.3),
// which differs from byte order for characters above U+FFFF. It compares
// rune by rune, without converting either string: keys mostly differ early.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			return cmp.Compare(utf16Units(ra), utf16Units(rb))
		}
		a, b = a[na:], b[nb:]
	}
	return cmp.Compare(len(a), len(b))
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

// writeString escapes only what RFC 8785 section 3.2.2.2 requires: the quote,
// the backslash and C0 controls (with the short forms where JSON has them).
// The text between them is written in runs.
func writeString(buf *bytes.Buffer, s string) {
	buf.WriteByte('"')
	run := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		buf.WriteString(s[run:i])
		run = i + 1
		switch c {
		case '"':
			buf.WriteString(`\"`)
		case '\\':
			buf.WriteString(`\\`)
		case '\b':
			buf.WriteString(`\b`)
		case '\f':
			buf.WriteString(`\f`)
		case '\n':
			buf.WriteString(`\n`)
		case '\r':
			buf.WriteString(`\r`)
		case '\t':
			buf.WriteString(`\t`)
		default:
			fmt.Fprintf(buf, `\u%04x`, c)
		}
	}
	buf.WriteString(s[run:])
	buf.WriteByte('"')
}

// formatNumber renders f as ECMAScript's Number.prototype.toString does
// (ECMA-262 Number::toString, as RFC 8785 section 3.2.2.3 requires). Go's
// shortest round-trip digits are the digits ECMAScript chooses; only the
// placement of the decimal point and exponent differs.
func formatNumber(f float64) (string, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", fmt.Errorf("%w: %v is not a JSON number", ErrNotCanonicalizable, f)
	}
	if f == 0 { // also -0, which ECMAScript prints as "0"
		return "0", nil
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	// "d.ddddde±XX": the significant digits and the decimal exponent.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mantissa, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mantissa, ".", "", 1)
	x, err := strconv.Atoi(exp)
	if err != nil {
		return "", fmt.Errorf("%w: cannot format %v", ErrNotCanonicalizable, f)
	}
	k, n := len(digits), x+1 // ECMA-262 names: k digits, value = digits × 10^(n−k)
	var out string
	switch {
	case k <= n && n <= 21:
		out = digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		out = digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		out = "0." + strings.Repeat("0", -n) + digits
	default:
		out = digits[:1]
		if k > 1 {
			out += "." + digits[1:]
		}
		if n-1 >= 0 {
			out += "e+" + strconv.Itoa(n-1)
		} else {
			out += "e-" + strconv.Itoa(1-n)
		}
	}
	return sign + out, nil
}

// clip shortens third-party text for error messages.
func clip(s string) string {
	const max = 64
	if len(s) > max {
		return strings.ToValidUTF8(s[:max], "") + "..."
	}
	return s
}
