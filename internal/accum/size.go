package accum

import "unicode/utf8"

// Size is the memory a Buffer holds for its text: the capacity of its
// backing array, which never exceeds 1.5×limit.
func (b *Buffer) Size() int { return cap(b.data) }

// growthBound is the most that Size can grow while texts of the given
// lengths are folded in, one after the other. Invalid UTF-8 can become up
// to three times longer (each bad byte turns into U+FFFD), and a sequence
// held back from a byte Delta can join the next; each append grows the
// array to at most max(64, 2×(held + added), 2×cap), never past
// 1.5×limit.
func (b *Buffer) growthBound(lens ...int) int {
	held := len(b.data) - b.off
	c := cap(b.data)
	for _, n := range lens {
		add := utf8.RuneLen(utf8.RuneError)*n + utf8.UTFMax
		c = min(max(64, 2*(held+add), 2*c), b.maxCap())
		held = min(held+add, b.limit)
	}
	return max(0, c-cap(b.data))
}

// Size is the memory a Call holds for text: its output streams and the
// strings it keeps about the command. It changes only in Apply and End.
func (c *Call) Size() int {
	n := len(c.id) + len(c.cur.terminalID) + len(c.cur.command) + len(c.cur.cwd) + len(c.cur.description) + len(c.cur.approvalReason) + len(c.cur.signal) + len(c.notice) + len(c.cur.reason)
	for s, b := range c.streams {
		if b != nil {
			n += b.Size()
		}
		n += c.echoes[s].heldLen()
	}
	return n
}

// GrowthBound is the most that Size can grow when o is applied. A caller
// that must bound memory reserves it before Apply and settles the real
// change after.
func (c *Call) GrowthBound(o *Observation) int {
	// The outcome reason, rewritten when the call ends or learns more, can
	// quote the signal and the agent's cancel or failure notice.
	n := len(o.TerminalID) + len(o.Command) + len(o.Cwd) + len(o.Description) + len(o.ApprovalReason) +
		maxReason + 2*(len(o.Signal)+len(o.CancelNotice)+len(o.FailNotice)+len(c.cur.signal)+len(c.notice))
	var lens [numStreams][]int
	for _, t := range o.Texts {
		if t.Stream < numStreams {
			l := len(t.Text) + len(t.Bytes)
			if lens[t.Stream] == nil {
				l += c.echoes[t.Stream].heldLen() // released with it
			}
			lens[t.Stream] = append(lens[t.Stream], l)
		}
	}
	for s, l := range lens {
		if l == nil {
			continue
		}
		b := c.streams[s]
		if b == nil {
			b = NewBuffer(c.limit)
		}
		n += b.growthBound(l...)
	}
	if o.Status.Ended() {
		n += c.EndGrowthBound()
	}
	return n
}

// maxReason bounds the outcome reason's own words (without the signal or
// notice it quotes).
const maxReason = 128

// EndGrowthBound is the most that Size can grow when the call is ended
// (End, or an observation that ends it): held-back bytes are flushed.
func (c *Call) EndGrowthBound() int {
	n := 0
	for s, b := range c.streams {
		held := c.echoes[s].heldLen()
		if b == nil && held > 0 {
			b = NewBuffer(c.limit)
		}
		if b != nil && b.ncarry+held > 0 {
			n += b.growthBound(b.ncarry + held)
		}
	}
	return n
}
