package proxy

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
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

// queued is how many bytes f's pipe holds (FIONREAD, which Linux names TIOCINQ too), or pipeSize, the
// most it may hold, when that cannot be asked.
func queued(f *os.File) int64 {
	rc, err := f.SyscallConn()
	if err != nil {
		return pipeSize
	}
	n, qerr := 0, error(nil)
	if err := rc.Control(func(fd uintptr) { n, qerr = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }); err != nil || qerr != nil {
		return pipeSize
	}
	return int64(n)
}

// held says whether f's pipe holds bytes or still has a writer (poll(2):
// no hang-up), which a read past its deadline cannot tell.
func held(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return true
	}
	h := true
	_ = rc.Control(func(fd uintptr) {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(pfd, 0); err == nil {
			h = pfd[0].Revents&unix.POLLIN != 0 || pfd[0].Revents&unix.POLLHUP == 0
		}
	})
	return h
}
