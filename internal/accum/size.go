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
	g := b.growth()
	for _, n := range lens {
		g.add(n)
	}
	return g.bound()
}

// growthStep is growthBound one text at a time, so that a caller adds
// the texts of several streams without a slice of lengths per stream.
type growthStep struct {
	held, c, cap0, limit, maxCap int
}

// growth starts a growthStep on b; on nil, on the empty Buffer that a
// first text would make with limit.
func (b *Buffer) growth() growthStep {
	return growthStep{held: len(b.data) - b.off, c: cap(b.data), cap0: cap(b.data), limit: b.limit, maxCap: b.maxCap()}
}

func newGrowth(limit int) growthStep {
	b := Buffer{limit: max(limit, minLimit)}
	return b.growth()
}

// streamGrowth is the growth of stream s of c from now: its Buffer's, or
// a new one's when the call has none yet.
func (c *Call) streamGrowth(s Stream) growthStep {
	if b := c.streams[s]; b != nil {
		return b.growth()
	}
	return newGrowth(c.limit)
}

func (g *growthStep) add(n int) {
	add := utf8.RuneLen(utf8.RuneError)*n + utf8.UTFMax
	g.c = min(max(64, 2*(g.held+add), 2*g.c), g.maxCap)
	g.held = min(g.held+add, g.limit)
}

func (g *growthStep) bound() int { return max(0, g.c-g.cap0) }

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
	if h := c.held; h != nil {
		n += h.size()
	}
	if w := c.wordedExit; w != nil {
		n += len(w.head) + len(w.tail)
	}
	return n
}

// size is the memory held words keep: their texts and strings.
func (h *heldWords) size() int {
	n := len(h.notice) + len(h.signal) + len(h.failNotice)
	for _, t := range h.texts {
		n += len(t.Text) + len(t.Whole)
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
	// Each stream's texts are added in turn, without a slice of their
	// lengths: this runs for every frame.
	var steps [numStreams]growthStep
	var seen [numStreams]bool
	for _, t := range o.Texts {
		if t.Stream < numStreams {
			g := &steps[t.Stream]
			l := len(t.Text) + len(t.Bytes)
			if !seen[t.Stream] {
				seen[t.Stream] = true
				*g = c.streamGrowth(t.Stream)
				l += c.echoes[t.Stream].heldLen() // released with it
			}
			g.add(l)
		}
	}
	for s := range steps {
		if seen[s] {
			n += steps[s].bound()
		}
	}
	if o.Worded.Exit {
		// Exit words kept to put back (Call.wordedExit).
		n += maxExitWords
	}
	if w := c.wordedExit; w != nil && o.ExitWordsOutput {
		// Put back into their stream.
		n += len(w.head) + len(w.tail)
	}
	if o.WordsIfFailed {
		// Held until the call ends (Call.held).
		n += len(o.CancelNotice) + len(o.Signal) + len(o.FailNotice)
		for _, t := range o.Texts {
			n += len(t.Text) + len(t.Whole)
		}
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
	if h := c.held; h != nil {
		// Held words become output, or their rest does, and a notice
		// the outcome reason quotes.
		n += maxReason + 2*(len(h.notice)+len(h.failNotice)) + len(h.signal)
		for _, t := range h.texts {
			g := c.streamGrowth(t.Stream)
			g.add(max(len(t.Text), len(t.Whole)) + c.echoes[t.Stream].heldLen())
			n += g.bound()
		}
	}
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
