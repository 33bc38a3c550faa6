package a2a

import (
	"bytes"
	"fmt"
	"sync"
	"unicode/utf8"
)

// checkJSON validates b as UTF-8 JSON and refuses an object with a member
// twice at any depth: decoders disagree on which one counts. It needs no
// recursion, so nesting is bounded only by the answer's size.
func checkJSON(b []byte) error {
	// JSON is UTF-8; decoders replace invalid bytes, so two different ids
	// (or member names) could read as one.
	if !utf8.Valid(b) {
		return ambiguous("not UTF-8")
	}
	// Every request and answer is checked, a bridged one three or four
	// times: the checkers' buffers are reused rather than made each time.
	c := checkers.Get().(*jsonChecker)
	err := c.check(b)
	c.reset()
	return err
}

// smallObject is the member count up to which an object's names are
// compared pairwise; larger objects use a set.
const smallObject = 16

type jsonFrame struct {
	object bool
	keys   int // index in jsonChecker.keys of the object's first name
	set    map[string]struct{}
}

type jsonChecker struct {
	stack []jsonFrame
	keys  [][]byte
}

// Buffers sized for typical answers; deeper or wider ones grow them, and
// a checker grown beyond maxPooledKeys names is not kept.
const (
	pooledFrames  = 8
	pooledKeys    = 32
	maxPooledKeys = 256
)

var checkers = sync.Pool{New: func() any {
	return &jsonChecker{stack: make([]jsonFrame, 0, pooledFrames), keys: make([][]byte, 0, pooledKeys)}
}}

// reset returns c to the pool, holding no part of the checked JSON (the
// names point into it) and none of its name sets.
func (c *jsonChecker) reset() {
	if cap(c.keys) > maxPooledKeys || cap(c.stack) > maxPooledKeys {
		return
	}
	clear(c.keys[:cap(c.keys)])
	clear(c.stack[:cap(c.stack)])
	c.keys, c.stack = c.keys[:0], c.stack[:0]
	checkers.Put(c)
}

var errJSON = fmt.Errorf("%w: invalid JSON", ErrNotA2A)

func (c *jsonChecker) check(b []byte) error {
	i := skipSpace(b, 0)
	for {
		// A value starts at i.
		if i >= len(b) {
			return errJSON
		}
		switch b[i] {
		case '{', '[':
			obj := b[i] == '{'
			c.stack = append(c.stack, jsonFrame{object: obj, keys: len(c.keys)})
			i = skipSpace(b, i+1)
			if i < len(b) && (obj && b[i] == '}' || !obj && b[i] == ']') {
				c.pop()
				i++
				break
			}
			if obj {
				var err error
				if i, err = c.member(b, i); err != nil {
					return err
				}
			}
			continue
		case '"':
			end, _ := scanString(b, i)
			if end < 0 {
				return errJSON
			}
			i = end
		case 't':
			i = literal(b, i, "true")
		case 'f':
			i = literal(b, i, "false")
		case 'n':
			i = literal(b, i, "null")
		default:
			i = scanNumber(b, i)
		}
		if i < 0 {
			return errJSON
		}
		// After a value: close containers, or move to the next element.
		for {
			i = skipSpace(b, i)
			if len(c.stack) == 0 {
				if i != len(b) {
					return errJSON
				}
				return nil
			}
			if i >= len(b) {
				return errJSON
			}
			top := &c.stack[len(c.stack)-1]
			if b[i] == ',' {
				i = skipSpace(b, i+1)
				if top.object {
					var err error
					if i, err = c.member(b, i); err != nil {
						return err
					}
				}
				break
			}
			if top.object && b[i] == '}' || !top.object && b[i] == ']' {
				c.pop()
				i++
				continue
			}
			return errJSON
		}
	}
}

func (c *jsonChecker) pop() {
	top := c.stack[len(c.stack)-1]
	c.keys = c.keys[:top.keys]
	c.stack = c.stack[:len(c.stack)-1]
}

// member reads a member name and its colon, records the name in the
// innermost object and returns where the value starts.
func (c *jsonChecker) member(b []byte, i int) (int, error) {
	if i >= len(b) || b[i] != '"' {
		return 0, errJSON
	}
	end, escaped := scanString(b, i)
	if end < 0 {
		return 0, errJSON
	}
	name := b[i+1 : end-1]
	if escaped {
		s, err := memberName(name)
		if err != nil {
			return 0, errJSON
		}
		name = []byte(s)
	}
	top := &c.stack[len(c.stack)-1]
	if top.set != nil {
		if _, dup := top.set[string(name)]; dup {
			return 0, ambiguous("member %q appears twice", clipName(string(name)))
		}
		top.set[string(name)] = struct{}{}
	} else {
		for _, k := range c.keys[top.keys:] {
			if bytes.Equal(k, name) {
				return 0, ambiguous("member %q appears twice", clipName(string(name)))
			}
		}
		c.keys = append(c.keys, name)
		if len(c.keys)-top.keys > smallObject {
			top.set = make(map[string]struct{}, 2*smallObject)
			for _, k := range c.keys[top.keys:] {
				top.set[string(k)] = struct{}{}
			}
		}
	}
	i = skipSpace(b, end)
	if i >= len(b) || b[i] != ':' {
		return 0, errJSON
	}
	return skipSpace(b, i+1), nil
}

// scanString returns the index just past the valid JSON string at b[i]
// ('"'), or -1, and whether it holds escapes.
func scanString(b []byte, i int) (int, bool) {
	escaped := false
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return j + 1, escaped
		case c == '\\':
			escaped = true
			j++
			if j >= len(b) {
				return -1, false
			}
			switch b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(b) {
					return -1, false
				}
				for _, h := range b[j+1 : j+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return -1, false
					}
				}
				j += 4
			default:
				return -1, false
			}
		case c < 0x20:
			return -1, false
		}
	}
	return -1, false
}

func literal(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// scanNumber returns the index just past the JSON number at b[i], or -1.
func scanNumber(b []byte, i int) int {
	digits := func(j int) int {
		k := j
		for k < len(b) && b[k] >= '0' && b[k] <= '9' {
			k++
		}
		if k == j {
			return -1
		}
		return k
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if i = digits(i); i < 0 {
		return -1
	}
	if i < len(b) && b[i] == '.' {
		if i = digits(i + 1); i < 0 {
			return -1
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i = digits(i); i < 0 {
			return -1
		}
	}
	return i
}
