//go:build linux

package service

import (
	"os"
	"syscall"
	"time"
)

// changeOf is what the inode says of a file beside its modification
// time: its number and its change time, which a write sets even when
// the modification time is put back (cp -p, rsync -t, touch -r).
func changeOf(fi os.FileInfo) (uint64, time.Time) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, time.Time{}
	}
	return uint64(st.Ino), time.Unix(int64(st.Ctim.Sec), int64(st.Ctim.Nsec))
}
