//go:build !unix

package proxy

import "net"

// idleOpen cannot peek at a connection here: a connection the agent
// closed while idle is found when the exchange on it fails, and retried
// as RoundTrip allows.
func idleOpen(net.Conn) bool { return true }
