package grpcwire

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func TestFraming(t *testing.T) {
	var body []byte
	body = AppendMessage(body, []byte("one"))
	body = AppendMessage(body, nil)
	body = AppendMessage(body, []byte("three"))
	r := bytes.NewReader(body)
	for _, want := range []string{"one", "", "three"} {
		got, err := ReadMessage(r, 16)
		if err != nil || string(got) != want {
			t.Fatalf("got %q %v, want %q", got, err, want)
		}
	}
	if _, err := ReadMessage(r, 16); err != io.EOF {
		t.Fatalf("at the end: %v", err)
	}
	// One byte at a time reads the same.
	r2 := iotest.OneByteReader(bytes.NewReader(body))
	if got, err := ReadMessage(r2, 16); err != nil || string(got) != "one" {
		t.Errorf("one byte reader: %q %v", got, err)
	}
}

func TestFramingRefuses(t *testing.T) {
	msg := AppendMessage(nil, []byte("hello"))
	compressed := append([]byte{1}, msg[1:]...)
	badFlag := append([]byte{2}, msg[1:]...)
	for _, c := range []struct {
		name string
		body []byte
		max  int64
		want error
	}{
		{"compressed", compressed, 16, ErrCompressed},
		{"bad flag", badFlag, 16, ErrBadFlag},
		{"over the limit", msg, 4, ErrTooLarge},
		{"cut prefix", msg[:3], 16, ErrTruncated},
		{"cut message", msg[:7], 16, ErrTruncated},
		{"huge length", []byte{0, 0xff, 0xff, 0xff, 0xff}, 1 << 20, ErrTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadMessage(bytes.NewReader(c.body), c.max)
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
	boom := errors.New("boom")
	if _, err := ReadMessage(iotest.ErrReader(boom), 16); !errors.Is(err, boom) {
		t.Errorf("read error: %v", err)
	}
	if _, err := ReadMessage(io.MultiReader(bytes.NewReader(msg[:6]), iotest.ErrReader(boom)), 16); !errors.Is(err, boom) {
		t.Errorf("read error inside a message: %v", err)
	}
	// A length at the limit is read.
	if got, err := ReadMessage(bytes.NewReader(msg), 5); err != nil || string(got) != "hello" {
		t.Errorf("at the limit: %q %v", got, err)
	}
}

func TestTimeouts(t *testing.T) {
	for s, want := range map[string]time.Duration{
		"1H": time.Hour, "2M": 2 * time.Minute, "5S": 5 * time.Second, "100m": 100 * time.Millisecond,
		"7u": 7 * time.Microsecond, "9n": 9, "99999999H": 1<<63 - 1, "00000001S": time.Second, "0m": 0,
	} {
		if got, err := ParseTimeout(s); err != nil || got != want {
			t.Errorf("ParseTimeout(%q) = %v %v, want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "S", "1", "1s", "1x", "-1S", "+1S", "1.5S", "123456789S", " 1S", "1S "} {
		if _, err := ParseTimeout(s); err == nil {
			t.Errorf("ParseTimeout(%q) accepted", s)
		}
	}
	for d, want := range map[time.Duration]string{
		time.Nanosecond: "1n", 99999999: "99999999n", 100000000: "100000u", 1500 * time.Millisecond: "1500000u",
		time.Hour: "3600000m", 30 * 24 * time.Hour: "2592000S", 0: "1n", -time.Second: "1n", 1<<63 - 1: "2562048H",
	} {
		if got := FormatTimeout(d); got != want {
			t.Errorf("FormatTimeout(%v) = %q, want %q", d, got, want)
		}
	}
	// Formatting never shortens the deadline.
	for _, d := range []time.Duration{1, 999, 100000001, 123456789012, 1<<40 + 3} {
		back, err := ParseTimeout(FormatTimeout(d))
		if err != nil || back < d || !strings.ContainsAny(FormatTimeout(d)[len(FormatTimeout(d))-1:], "HMSmun") {
			t.Errorf("%v: %v %v", d, back, err)
		}
	}
}
