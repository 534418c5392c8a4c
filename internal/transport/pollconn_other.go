//go:build !unix

package transport

import "net"

// pollConn is the Unix socket poller (pollconn_unix.go); elsewhere the
// server reads through the netpoller.
type pollConn struct{ net.Conn }

func newPollConn(net.Conn) (*pollConn, bool) { return nil, false }
