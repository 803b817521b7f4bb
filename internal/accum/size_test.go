package accum

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// Size never grows by more than GrowthBound said, whatever is applied.
func TestGrowthBoundHolds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "héllo\n", "\xff\xfe", "\xe2\x82", "\xac", strings.Repeat("x", 300), strings.Repeat("y", 5000)}
	kinds := []TextKind{Delta, Snapshot, Window, Final}
	for round := range 100 {
		c := NewCall("c", 64+rng.IntN(4096))
		for step := range 40 {
			o := &Observation{ToolCallID: "c", Shell: ShellYes}
			if rng.IntN(3) == 0 {
				o.Command = strings.Repeat("c", rng.IntN(50))
			}
			switch rng.IntN(8) {
			case 0:
				o.Signal = strings.Repeat("S", 1+rng.IntN(40))
			case 1:
				o.Cancelled, o.CancelNotice = true, strings.Repeat("n", rng.IntN(200))
			case 2:
				o.Exit = &Exit{Code: int32(rng.IntN(3)), Source: ExitTerminal}
			case 3:
				// Words whose owner the agent's final decides.
				o.Cancelled, o.CancelNotice, o.Worded.Cancelled, o.WordsIfFailed = true, strings.Repeat("n", rng.IntN(200)), true, true
			}
			for range rng.IntN(4) {
				var sb strings.Builder
				for range rng.IntN(6) {
					sb.WriteString(pieces[rng.IntN(len(pieces))])
				}
				tx := Text{Stream: Stream(rng.IntN(int(numStreams))), Kind: kinds[rng.IntN(len(kinds))]}
				if rng.IntN(2) == 0 {
					tx.Bytes = []byte(sb.String())
				} else {
					tx.Text = sb.String()
					if o.WordsIfFailed && (tx.Kind == Snapshot || tx.Kind == Final) {
						tx.Whole = tx.Text + strings.Repeat("w", rng.IntN(3000))
					}
				}
				o.Texts = append(o.Texts, tx)
			}
			if step == 39 || rng.IntN(20) == 0 {
				o.Status = StatusCompleted
			}
			before, bound := c.Size(), c.GrowthBound(o)
			c.Apply(o)
			if grew := c.Size() - before; grew > bound {
				t.Fatalf("round %d step %d: Size grew by %d, bound was %d", round, step, grew, bound)
			}
		}
		before, bound := c.Size(), c.EndGrowthBound()
		c.End(false, "test")
		if grew := c.Size() - before; grew > bound {
			t.Fatalf("round %d: End grew Size by %d, bound was %d", round, grew, bound)
		}
	}
}

// A Buffer holds at most 1.5×limit, and a fresh one's bound for a small
// text is small (a budget is not spent on room never used).
func TestSizeIsBounded(t *testing.T) {
	b := NewBuffer(1000)
	if g := b.growthBound(10); g > 128 {
		t.Fatalf("bound for 10 bytes into an empty buffer is %d", g)
	}
	for range 100 {
		b.Apply(Text{Kind: Delta, Text: strings.Repeat("z", 333)})
	}
	if b.Size() > 1500 {
		t.Fatalf("Size %d over 1.5×limit", b.Size())
	}
	if g := b.growthBound(1 << 20); g != 1500-b.Size() {
		t.Fatalf("bound at full size %d", g)
	}
}

// A text that comes whole into an empty Buffer (a new one, or one it
// replaces) takes its own size, not twice that; appends after it grow the
// array by doubling, within 1.5×limit.
func TestWholeTextTakesItsOwnSize(t *testing.T) {
	b := NewBuffer(1 << 20)
	b.Apply(Text{Kind: Snapshot, Text: strings.Repeat("a", 4096)})
	if got := b.Size(); got != 4096 {
		t.Fatalf("a 4096-byte snapshot in a new Buffer holds %d bytes, want 4096", got)
	}
	b.Apply(Text{Kind: Snapshot, Text: strings.Repeat("b", 10000)})
	if got := b.Size(); got != 10000 {
		t.Fatalf("a 10000-byte snapshot that replaces holds %d bytes, want 10000", got)
	}
	b.Apply(Text{Kind: Delta, Text: "more"})
	if got := b.Size(); got != 2*10004 {
		t.Fatalf("after an append the Buffer holds %d bytes, want %d (doubled)", got, 2*10004)
	}
	small := NewBuffer(1 << 20)
	small.Apply(Text{Kind: Delta, Text: "x"})
	if got := small.Size(); got != 64 {
		t.Fatalf("a 1-byte Delta holds %d bytes, want the 64-byte minimum", got)
	}
}
