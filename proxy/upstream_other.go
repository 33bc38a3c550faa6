//go:build !unix

package proxy

import "net"

// peeker cannot peek at a connection here: a connection the agent closed
// while idle is found when the exchange on it fails, and retried as
// RoundTrip allows; a handed-off stream's caller is watched by a goroutine.
func peeker(net.Conn) (quiet func() bool, ok bool) { return nil, false }
