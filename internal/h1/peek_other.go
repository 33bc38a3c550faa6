//go:build !unix

package h1

import "net"

// Peeker cannot peek at a connection here: a connection the peer closed
// while idle is found when the exchange on it fails, and retried as
// RoundTrip allows; a handed-off stream's caller is watched by a goroutine.
func Peeker(net.Conn) (quiet func() bool, ok bool) { return nil, false }
