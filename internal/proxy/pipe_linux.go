package proxy

import (
	"os"
	"syscall"
)

// pipeSize is the size the proxy asks for its pipes to the agent: 1 MiB,
// Linux's default /proc/sys/fs/pipe-max-size, the most an unprivileged
// process may set.
const pipeSize = 1 << 20

// growPipe asks for f's pipe to hold pipeSize bytes. It is best effort: a
// system that refuses keeps the pipe as it is, which only costs more
// wake-ups.
func growPipe(f *os.File) {
	const fSetPipeSz = 1031 // F_SETPIPE_SZ
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_, _, _ = syscall.Syscall(syscall.SYS_FCNTL, fd, fSetPipeSz, pipeSize)
	})
}
