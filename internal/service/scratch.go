package service

import (
	"math/bits"
	"sync"

	"google.golang.org/grpc/mem"
)

// scratchPool is the buffer pool of tolerantCodec (the buffers a message
// is encoded into before it is written, and the ones a request that came
// in several pieces is joined in before it is decoded) and of the
// server's transport (experimental.BufferPool: the HTTP/2 frames it reads,
// the socket's reads and the batches it writes). Each user reads only
// what it wrote (an encoding writes every byte of the length it asked
// for; a join copies every byte; gRPC 1.85's transport reads a frame's
// payload whole into the length it asked for, and uses only the bytes a
// socket read filled or a write batch was given, as its own uncleared
// pools for socket reads rely on), so, unlike gRPC's default pool, it
// hands buffers out without clearing them: the default pool clears a
// buffer's whole capacity on every Get, and its tiers jump from 32 KiB to
// 1 MiB, so a 40 KiB answer cleared 1 MiB (4% of acpnormd's CPU at c=8 on
// the Claude recordings, most of it for the answers; the transport's
// clearing was 1.7% on the Codex recordings). A frame's message is read
// where the transport (or a join) put it: its buffer comes back only
// once the stream applied the request (received).
//
// Its tiers are the powers of two from 1 KiB to 16 MiB (the default
// largest message), so a buffer is at most twice what it holds; larger
// ones are allocated and left to the collector. sync.Pool lets the
// collector take back what is idle.
type scratchPool struct {
	tiers [scratchTiers]sync.Pool
}

const (
	scratchMinShift = 10 // 1 KiB
	scratchMaxShift = 24 // 16 MiB
	scratchTiers    = scratchMaxShift - scratchMinShift + 1
)

var scratch = &scratchPool{}

var _ mem.BufferPool = (*scratchPool)(nil)

// tier returns the index of the smallest tier holding n bytes, or -1 past
// the largest.
func scratchTier(n int) int {
	if n <= 1<<scratchMinShift {
		return 0
	}
	shift := bits.Len(uint(n - 1)) // 2^shift >= n
	if shift > scratchMaxShift {
		return -1
	}
	return shift - scratchMinShift
}

// Get returns a buffer of length n whose bytes are whatever an earlier
// user left there: the caller writes all n before reading any.
func (p *scratchPool) Get(n int) *[]byte {
	t := scratchTier(n)
	if t < 0 {
		b := make([]byte, n)
		return &b
	}
	if b, ok := p.tiers[t].Get().(*[]byte); ok {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, 1<<(t+scratchMinShift))
	return &b
}

// poisonScratch makes Put fill every buffer it takes back with
// poisonByte, so that a test reading a buffer after it was given back
// reads that instead of what it expects. Tests set it before they start
// a server, never while one runs.
var poisonScratch bool

const poisonByte = 0xA5

// Put takes back a buffer Get returned (or a prefix of one); any other
// is left to the collector.
func (p *scratchPool) Put(b *[]byte) {
	c := cap(*b)
	t := scratchTier(c)
	if t < 0 || c != 1<<(t+scratchMinShift) {
		return
	}
	if poisonScratch {
		full := (*b)[:c]
		for i := range full {
			full[i] = poisonByte
		}
	}
	*b = (*b)[:0]
	p.tiers[t].Put(b)
}
