package grpcwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// The framing errors of ReadMessage, for the caller to answer each with
// its status (a message over the limit is RESOURCE_EXHAUSTED, the others
// INTERNAL or INVALID_ARGUMENT).
var (
	// ErrCompressed is a message with the compressed flag set. The
	// gateway reads no compressed messages: it does not decompress what it
	// must read strictly and forward as sent, and without a grpc-encoding
	// (or with identity) the flag is a protocol error anyway.
	ErrCompressed = errors.New("grpc: compressed message, but no compression was negotiated")
	// ErrTooLarge is a message longer than the limit.
	ErrTooLarge = errors.New("grpc: message larger than the limit")
	// ErrTruncated is a body that ends inside a message.
	ErrTruncated = errors.New("grpc: the body ends inside a message")
	// ErrBadFlag is a flag byte other than 0 and 1.
	ErrBadFlag = errors.New("grpc: invalid message flag")
)

// prefixLen is the length of the prefix of every message: one flag byte
// (bit 0: compressed) and a big-endian 32-bit length.
const prefixLen = 5

// ReadMessage reads one length-prefixed message from r, refusing one
// longer than max before reading it. It returns io.EOF when r ends cleanly
// between messages, and ErrTruncated when it ends inside one.
func ReadMessage(r io.Reader, max int64) ([]byte, error) {
	var prefix [prefixLen]byte
	if n, err := io.ReadFull(r, prefix[:]); err != nil {
		if err == io.EOF && n == 0 {
			return nil, io.EOF
		}
		if err == io.ErrUnexpectedEOF {
			return nil, ErrTruncated
		}
		return nil, err
	}
	switch prefix[0] {
	case 0:
	case 1:
		return nil, ErrCompressed
	default:
		return nil, ErrBadFlag
	}
	n := int64(binary.BigEndian.Uint32(prefix[1:]))
	if n > max {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, n, max)
	}
	msg := make([]byte, n)
	if _, err := io.ReadFull(r, msg); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, ErrTruncated
		}
		return nil, err
	}
	return msg, nil
}

// AppendMessage appends msg to dst as one uncompressed length-prefixed
// message. msg must be shorter than 4 GiB; the callers' limits are far
// below that.
func AppendMessage(dst, msg []byte) []byte {
	dst = append(dst, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(msg)))
	return append(dst, msg...)
}

// timeoutUnits are the grpc-timeout units, longest first.
var timeoutUnits = []struct {
	unit byte
	d    time.Duration
}{
	{'H', time.Hour}, {'M', time.Minute}, {'S', time.Second},
	{'m', time.Millisecond}, {'u', time.Microsecond}, {'n', time.Nanosecond},
}

// maxTimeoutDigits is the protocol's bound on the grpc-timeout value.
const maxTimeoutDigits = 8

// ParseTimeout reads a grpc-timeout header value: at most 8 ASCII digits
// and a unit (H, M, S, m, u, n). A value too long for a time.Duration is
// capped at the longest one.
func ParseTimeout(s string) (time.Duration, error) {
	if len(s) < 2 || len(s) > maxTimeoutDigits+1 {
		return 0, fmt.Errorf("grpc-timeout %q: not 1 to %d digits and a unit", s, maxTimeoutDigits)
	}
	digits, unit := s[:len(s)-1], s[len(s)-1]
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, fmt.Errorf("grpc-timeout %q: not a number", s)
		}
	}
	n, _ := strconv.ParseInt(digits, 10, 64)
	for _, u := range timeoutUnits {
		if u.unit == unit {
			if n > int64(time.Duration(1<<63-1)/u.d) {
				return time.Duration(1<<63 - 1), nil
			}
			return time.Duration(n) * u.d, nil
		}
	}
	return 0, fmt.Errorf("grpc-timeout %q: unknown unit", s)
}

// FormatTimeout writes d as a grpc-timeout value in the finest unit that
// keeps it within 8 digits, rounded up to that unit so the agent is never
// given less time than remains. A non-positive d is written as 1n: the
// deadline has passed.
func FormatTimeout(d time.Duration) string {
	if d <= 0 {
		return "1n"
	}
	const max = 99999999
	for i := len(timeoutUnits) - 1; i >= 0; i-- {
		u := timeoutUnits[i]
		n := d / u.d
		if d%u.d != 0 {
			n++
		}
		if n <= max {
			return strconv.FormatInt(int64(n), 10) + string(u.unit)
		}
	}
	return strconv.Itoa(max) + "H"
}
