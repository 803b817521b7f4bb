// Command loup brings the loopback interface up and runs a command: the
// agent harness starts it as `unshare -n loup CMD ARGS...`, so the command
// gets a network namespace where 127.0.0.1 works and nothing else exists.
// It does what `ip link set lo up` does, so the harness needs no iproute2.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"unsafe"
)

// ifreq is struct ifreq for the SIOC[GS]IFFLAGS ioctls: the name, then
// the flags as the first two bytes of the union.
type ifreq struct {
	name  [syscall.IFNAMSIZ]byte
	flags uint16
	_     [22]byte
}

func loUp() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer syscall.Close(fd)
	var r ifreq
	copy(r.name[:], "lo")
	if err := ioctl(fd, syscall.SIOCGIFFLAGS, &r); err != nil {
		return fmt.Errorf("reading the flags of lo: %w", err)
	}
	r.flags |= syscall.IFF_UP | syscall.IFF_RUNNING
	if err := ioctl(fd, syscall.SIOCSIFFLAGS, &r); err != nil {
		return fmt.Errorf("bringing lo up: %w", err)
	}
	return nil
}

func ioctl(fd int, req uintptr, r *ifreq) error {
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), req, uintptr(unsafe.Pointer(r))); errno != 0 {
		return errno
	}
	return nil
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: unshare -n loup CMD [ARGS...]")
		os.Exit(2)
	}
	if err := loUp(); err != nil {
		fmt.Fprintf(os.Stderr, "loup: %v\n", err)
		os.Exit(1)
	}
	path, err := exec.LookPath(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "loup: %v\n", err)
		os.Exit(127)
	}
	err = syscall.Exec(path, os.Args[1:], os.Environ())
	fmt.Fprintf(os.Stderr, "loup: exec %s: %v\n", path, err)
	os.Exit(126)
}
