package service

import (
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// setUserTimeout sets the TCP_USER_TIMEOUT of c, a TCP connection, to d
// (in milliseconds, the option's unit); other connections are left.
func setUserTimeout(c net.Conn, d time.Duration) error {
	tcp, ok := c.(*net.TCPConn)
	if !ok {
		return nil
	}
	raw, err := tcp.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d.Milliseconds()))
	}); err != nil {
		return err
	}
	return serr
}
