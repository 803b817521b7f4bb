//go:build !linux

package service

import (
	"net"
	"time"
)

// setUserTimeout does nothing: TCP_USER_TIMEOUT is Linux's (gRPC sets it
// there only too).
func setUserTimeout(net.Conn, time.Duration) error { return nil }
