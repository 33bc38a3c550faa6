package a2a

import (
	"strings"
	"testing"
)

// stringEndByBytes is stringEnd as a byte-by-byte scan: a backslash
// escapes the byte after it.
func stringEndByBytes(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

var stringEndSeeds = []string{
	`"abc"`, `""`, `"a\"b"`, `"a\\"b"`, `"a\\\"b"`, `"a\\\\"`, `"\\"`, `"\"`, `"abc`, `"ab\`, `x"a"`, ``, `"`,
	`{"a":"b\\","c":"d\"e"}`, `"` + strings.Repeat("x", 1000) + `\\\\\"` + strings.Repeat("y", 100) + `"rest`,
}

func TestStringEndMatchesByteScan(t *testing.T) {
	for _, s := range stringEndSeeds {
		for i := range len(s) + 1 {
			if got, want := stringEnd([]byte(s), i), stringEndByBytes([]byte(s), i); got != want {
				t.Fatalf("stringEnd(%q, %d) = %d, want %d", s, i, got, want)
			}
		}
	}
}

func FuzzStringEnd(f *testing.F) {
	for _, s := range stringEndSeeds {
		f.Add([]byte(s), 0)
	}
	f.Fuzz(func(t *testing.T, b []byte, i int) {
		if i < 0 || i > len(b) {
			return
		}
		if got, want := stringEnd(b, i), stringEndByBytes(b, i); got != want {
			t.Fatalf("stringEnd(%q, %d) = %d, want %d", b, i, got, want)
		}
	})
}
