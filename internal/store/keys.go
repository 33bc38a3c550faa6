package store

import (
	"errors"
	"fmt"
	"strings"
)

// keyspace builds the Redis keys of every concern. All keys have the form
//
//	<prefix>:<family>:{<tag>}
//
// where <family> names the concern ("own" for ownership) and everything the
// caller controls is escaped so that no input can reach outside its field:
// bytes other than ASCII letters, digits and "-._~@/+=" become %XX. The
// escaped text therefore never contains ":", "|", "{" or "}", which makes a
// key unambiguous and keeps the Cluster hash tag (the text between the
// braces) exactly the one the family chose.
type keyspace struct {
	prefix string
}

// tagged returns <prefix>:<family>:{<part>:<part>...}, every part escaped.
func (k keyspace) tagged(family string, parts ...string) string {
	var b strings.Builder
	n := len(k.prefix) + len(family) + 4
	for _, p := range parts {
		n += len(p) + 1
	}
	b.Grow(n)
	b.WriteString(k.prefix)
	b.WriteByte(':')
	b.WriteString(family)
	b.WriteString(":{")
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(':')
		}
		writeEscaped(&b, p)
	}
	b.WriteByte('}')
	return b.String()
}

// refTagged returns <prefix>:<family>:{<agent>:<t|c>:<id>}. The hash tag is
// the reference itself: records of different tasks land in different slots,
// and records of the same task in different families share one slot, so a
// script may touch them together.
func (k keyspace) refTagged(family, agent string, ref Ref) string {
	code := "t"
	if ref.Kind == RefContext {
		code = "c"
	}
	return k.tagged(family, agent, code, ref.ID)
}

// plain reports whether c is written as itself by writeEscaped.
func plain(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~@/+=", c) >= 0
}

const hexDigits = "0123456789ABCDEF"

func writeEscaped(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if plain(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&0xF])
	}
}

func escape(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	writeEscaped(&b, s)
	return b.String()
}

// escapePair renders "<a>|<b>", both escaped, so the "|" between them is
// unambiguous: the index strings and members that name a task or a
// task's challenge.
func escapePair(a, b string) string { return escape(a) + "|" + escape(b) }

// unescapePair reverses escapePair; neither half may be empty.
func unescapePair(v string) (a, b string, err error) {
	ea, eb, _ := strings.Cut(v, "|")
	a, errA := unescape(ea)
	b, errB := unescape(eb)
	if errA != nil || errB != nil || a == "" || b == "" {
		return "", "", fmt.Errorf("malformed pair %.64q", v)
	}
	return a, b, nil
}

// parseTaskRef reads the escapePair of a task's agent and id.
func parseTaskRef(v string) (TaskRef, error) {
	agent, taskID, err := unescapePair(v)
	return TaskRef{Agent: agent, TaskID: taskID}, err
}

// luaEscape is escape for the scripts that build keys from what they read
// in Redis (a dead letter's key from its queue entry's id), which Go does
// not know when it calls them. TestLuaEscapeIsEscape keeps the two in step.
const luaEscape = `
local function escape(s)
  return (string.gsub(s, '[^%w%-%._~@/%+=]', function(c) return string.format('%%%02X', string.byte(c)) end))
end
`

var errBadEscape = errors.New("malformed escape")

// unescape reverses escape. It accepts only what escape produces, so every
// stored text has exactly one spelling.
func unescape(s string) (string, error) {
	if !strings.Contains(s, "%") {
		for i := 0; i < len(s); i++ {
			if !plain(s[i]) {
				return "", fmt.Errorf("%w: unexpected byte %q", errBadEscape, s[i])
			}
		}
		return s, nil
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if plain(c) {
			out = append(out, c)
			continue
		}
		if c != '%' || i+2 >= len(s) {
			return "", fmt.Errorf("%w at byte %d", errBadEscape, i)
		}
		hi, lo := strings.IndexByte(hexDigits, s[i+1]), strings.IndexByte(hexDigits, s[i+2])
		if hi < 0 || lo < 0 {
			return "", fmt.Errorf("%w at byte %d", errBadEscape, i)
		}
		v := byte(hi<<4 | lo)
		if plain(v) {
			return "", fmt.Errorf("%w at byte %d: %q need not be escaped", errBadEscape, i, v)
		}
		out = append(out, v)
		i += 2
	}
	return string(out), nil
}
