//go:build !linux

package proxy

import "os"

// pipeSize is the most one read of the relay takes.
const pipeSize = 1 << 20

// growPipe does nothing where pipes cannot be resized.
func growPipe(*os.File) {}

// queued is the most f's pipe may hold: where the proxy does not ask how
// much it holds, all of it counts as the agent's.
func queued(*os.File) int64 { return pipeSize }

// held says whether f's pipe may hold bytes or still have a writer: where
// the proxy does not ask, it may.
func held(*os.File) bool { return true }
