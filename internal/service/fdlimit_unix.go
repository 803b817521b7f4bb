//go:build unix

package service

import "syscall"

// fdLimit is the process's soft limit on open file descriptors (Go raises
// it to the hard limit at start); 0 when it cannot be read.
func fdLimit() uint64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0
	}
	return r.Cur
}
