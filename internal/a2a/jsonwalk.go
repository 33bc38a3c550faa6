package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The gateway reads a few members of bodies it otherwise forwards byte for
// byte. It must read them exactly as the agent will, or a crafted body could
// authorize one task id while the agent acts on another: encoding/json
// matches member names case-insensitively and lets the last duplicate win,
// while JavaScript, Python and Go agents disagree on both. So members are
// located with this strict walker instead, and any body in which a member
// the gateway reads appears twice, or in another letter case, is refused.
// Requests are read stricter still (pickStrict): every member name is
// checked, known or not, and some objects admit only the members listed.

var errNotObject = errors.New("expected a JSON object")

// ambiguityError reports a member that appears twice or in two spellings.
type ambiguityError struct{ name string }

func (e *ambiguityError) Error() string {
	return fmt.Sprintf("member %q appears more than once or in another letter case", e.name)
}

// badKeyError reports a member name that parsers may read differently:
// one with control or invisible characters, surrounding white space or
// bytes that are not UTF-8, which some decoders keep, some replace and
// some strip or trim.
type badKeyError struct{ name string }

func (e *badKeyError) Error() string {
	return fmt.Sprintf("member name %s holds control or invisible characters, surrounding white space or invalid UTF-8", clipQuoteASCII(e.name))
}

// unknownMemberError reports a member the gateway does not forward in an
// object that admits only the members it knows.
type unknownMemberError struct{ name string }

func (e *unknownMemberError) Error() string {
	return fmt.Sprintf("member %s is not one the gateway accepts here", clipQuoteASCII(e.name))
}

// clipQuoteASCII quotes a member name for an error message: clipped, and
// with every control or non-ASCII character escaped so it can be seen.
func clipQuoteASCII(s string) string {
	const max = 64
	if len(s) > max {
		s = s[:max] + "..."
	}
	return strconv.QuoteToASCII(s)
}

// member is a member name the gateway reads, with its snake_case alias:
// protobuf JSON parsers (which many agents use) accept both spellings of a
// field, so "task_id" must be read as "taskId" too.
type member struct{ name, alias string }

// members builds the member list for the given lowerCamel names.
func members(names ...string) []member {
	out := make([]member, len(names))
	for i, n := range names {
		var b strings.Builder
		for _, c := range n {
			if c >= 'A' && c <= 'Z' {
				b.WriteByte('_')
				c += 'a' - 'A'
			}
			b.WriteRune(c)
		}
		out[i] = member{n, b.String()}
	}
	return out
}

// pick locates the members named in keys within the JSON object b, which
// must already be valid JSON, and stores each raw value in out at the same
// index (nil when absent). A JSON null counts as absent.
func pick(b []byte, keys []member, out [][]byte) error {
	_, err := pickSeen(b, keys, out)
	return err
}

// pickSeen is pick that also reports, as bit k, which keys were present,
// null included.
func pickSeen(b []byte, keys []member, out [][]byte) (seen uint64, err error) {
	return walk(b, keys, out, 0)
}

// walkMode makes the walker stricter.
type walkMode uint8

const (
	// checkNames refuses every member name checkKey refuses, whatever the
	// member, and names that fold to one of keys by compatibility forms
	// (fullwidth letters) as well as by letter case.
	checkNames walkMode = 1 << iota
	// knownOnly refuses members that are not in keys.
	knownOnly
)

// pickStrict is pick for requests: checkNames always, plus mode.
func pickStrict(b []byte, keys []member, out [][]byte, mode walkMode) error {
	_, err := walk(b, keys, out, mode|checkNames)
	return err
}

func walk(b []byte, keys []member, out [][]byte, mode walkMode) (seen uint64, err error) {
	for i := range out {
		out[i] = nil
	}
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return seen, errNotObject
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return seen, nil
	}
	for i < len(b) {
		keyEnd := stringEnd(b, i)
		if keyEnd < 0 {
			return seen, errNotObject
		}
		rawKey := b[i+1 : keyEnd-1]
		key, err := memberName(rawKey)
		if err != nil {
			return seen, err
		}
		folded := key
		if mode&checkNames != 0 {
			if !checkKey(rawKey, key) {
				return seen, &badKeyError{key}
			}
			folded = foldCompat(key)
		}
		i = skipSpace(b, keyEnd)
		if i >= len(b) || b[i] != ':' {
			return seen, errNotObject
		}
		i = skipSpace(b, i+1)
		valEnd := valueEnd(b, i)
		if valEnd < 0 {
			return seen, errNotObject
		}
		val := b[i:valEnd]
		known := false
		for k, want := range keys {
			if key == want.name || key == want.alias {
				if seen&(1<<k) != 0 {
					return seen, &ambiguityError{want.name}
				}
				seen |= 1 << k
				known = true
				if string(val) != "null" {
					out[k] = val
				}
			} else if strings.EqualFold(folded, want.name) || strings.EqualFold(folded, want.alias) {
				return seen, &ambiguityError{want.name}
			}
		}
		if !known && mode&knownOnly != 0 {
			return seen, &unknownMemberError{key}
		}
		i = skipSpace(b, valEnd)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			return seen, nil
		}
		return seen, errNotObject
	}
	return seen, errNotObject
}

// memberName unescapes a member name; "\u0069d" is "id" to every agent.
func memberName(raw []byte) (string, error) {
	for _, c := range raw {
		if c == '\\' {
			var s string
			q := make([]byte, 0, len(raw)+2)
			q = append(append(append(q, '"'), raw...), '"')
			if err := json.Unmarshal(q, &s); err != nil {
				return "", err
			}
			return s, nil
		}
	}
	return string(raw), nil
}

// checkKey reports whether a member name reads the same to every parser:
// raw (as sent) is UTF-8 and the unescaped name holds no replacement
// character (an escaped lone surrogate becomes one), no control or format
// (zero-width, bidi) character, and no leading or trailing white space.
func checkKey(raw []byte, name string) bool {
	if printableASCII(name) {
		return name == "" || name[0] != ' ' && name[len(name)-1] != ' '
	}
	if !utf8.Valid(raw) {
		return false
	}
	for _, r := range name {
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return false
		}
	}
	first, _ := utf8.DecodeRuneInString(name)
	last, _ := utf8.DecodeLastRuneInString(name)
	return name == "" || !unicode.IsSpace(first) && !unicode.IsSpace(last)
}

// foldCompat maps the fullwidth forms of ASCII (U+FF01-U+FF5E) to ASCII,
// as NFKC normalisation does, so that "ｔａｓｋＩｄ" is compared with
// "taskId". strings.EqualFold already folds the other lookalikes that
// Unicode case folding knows (U+017F long s, U+212A Kelvin sign).
func foldCompat(name string) string {
	if printableASCII(name) || !strings.ContainsFunc(name, isFullwidth) {
		return name
	}
	return strings.Map(func(r rune) rune {
		if isFullwidth(r) {
			return r - 0xFEE0
		}
		return r
	}, name)
}

func isFullwidth(r rune) bool { return r >= 0xFF01 && r <= 0xFF5E }

// printableASCII reports whether s is only printable ASCII (spaces
// included), the common case that needs no closer look.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string starting at b[i] ('"').
// Every answer and stream event is walked more than once, and most of its
// bytes are long texts: the closing quote is searched for with
// bytes.IndexByte, and one is escaped when an odd run of backslashes
// precedes it.
func stringEnd(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	for j := i + 1; ; {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1
		}
		q := j + k
		n := 0
		for p := q - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1
		}
		j = q + 1
	}
}

// valueEnd returns the index just past the value starting at b[i].
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e := stringEnd(b, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j
		}
		j++
	}
	return j
}

// jsonString decodes a raw JSON string value; nil (absent or null) is "".
func jsonString(raw []byte, name string) (string, error) {
	if raw == nil {
		return "", nil
	}
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		inner := raw[1 : len(raw)-1]
		plain := true
		for _, c := range inner {
			if c == '\\' || c < 0x20 {
				plain = false
				break
			}
		}
		if plain {
			return string(inner), nil
		}
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			return s, nil
		}
	}
	return "", fmt.Errorf("%s must be a string", name)
}

// jsonStrings decodes a raw JSON array of strings; nil is an empty list.
func jsonStrings(raw []byte, name string) ([]string, error) {
	if raw == nil {
		return nil, nil
	}
	var out []string
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("%s must be an array of strings", name)
	}
	return out, nil
}

// isObject reports whether raw is a JSON object.
func isObject(raw []byte) bool {
	i := skipSpace(raw, 0)
	return i < len(raw) && raw[i] == '{'
}
