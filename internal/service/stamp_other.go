//go:build !unix

package service

import (
	"os"
	"time"
)

// changeOf is nothing where the platform gives no inode: the
// modification time and size alone tell a change.
func changeOf(os.FileInfo) (uint64, time.Time) { return 0, time.Time{} }
