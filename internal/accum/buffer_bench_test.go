package accum

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/acpnorm/acpnorm/internal/benchcpu"
)

// benchLimit is the service's default text limit.
const benchLimit = 256 << 10

// benchText returns exactly n bytes of ASCII build-log-like output.
func benchText(n int) string {
	var sb strings.Builder
	sb.Grow(n + 64)
	for i := 0; sb.Len() < n; i++ {
		fmt.Fprintf(&sb, "%6d: compiling package %03d of the workspace ... ok\n", i, i*7%1000)
	}
	return sb.String()[:n]
}

var benchSizes = []struct {
	name string
	n    int
}{
	{"1KiB", 1 << 10},
	{"64KiB", 64 << 10},
	{"1MiB", 1 << 20},
}

// cumulative returns the 1,000 cumulative snapshots of out.
func cumulative(out string, steps int) []string {
	snaps := make([]string, steps)
	for i := range snaps {
		snaps[i] = out[:len(out)*(i+1)/steps]
	}
	return snaps
}

// naive is the baseline a Buffer replaces: keep a copy of the whole latest
// snapshot and send all of it on every revision.
type naive struct{ text string }

func (n *naive) apply(s string) (emitted int) {
	n.text = strings.Clone(s)
	return len(n.text)
}

// BenchmarkSnapshot measures one cumulative-snapshot observation plus its
// Take, for outputs of 1 KiB, 64 KiB and 1 MiB each delivered as 1,000
// snapshots (a new Buffer per output). "naive" is the baseline that copies
// and re-sends the whole snapshot; "validate" is the floor every approach
// pays: one UTF-8 check of the snapshot.
func BenchmarkSnapshot(b *testing.B) {
	const steps = 1000
	for _, sz := range benchSizes {
		snaps := cumulative(benchText(sz.n), steps)
		grown := func(i int) int64 {
			if i == 0 {
				return int64(len(snaps[0]))
			}
			return int64(len(snaps[i]) - len(snaps[i-1]))
		}
		b.Run("size="+sz.name+"/buffer", func(b *testing.B) {
			b.SetBytes(int64(sz.n / steps))
			var buf *Buffer
			var emitted, real int64
			i := 0
			for b.Loop() {
				j := i % steps
				if j == 0 {
					buf = NewBuffer(benchLimit)
				}
				buf.Apply(Text{Kind: Snapshot, Text: snaps[j]})
				if c, ok := buf.Take(); ok {
					emitted += int64(len(c.Text))
				}
				real += grown(j)
				i++
			}
			b.ReportMetric(float64(emitted)/float64(real), "emitted/real")
		})
		b.Run("size="+sz.name+"/naive", func(b *testing.B) {
			b.SetBytes(int64(sz.n / steps))
			var n naive
			var emitted, real int64
			i := 0
			for b.Loop() {
				j := i % steps
				emitted += int64(n.apply(snaps[j]))
				real += grown(j)
				i++
			}
			b.ReportMetric(float64(emitted)/float64(real), "emitted/real")
		})
		b.Run("size="+sz.name+"/validate", func(b *testing.B) {
			b.SetBytes(int64(sz.n / steps))
			i := 0
			for b.Loop() {
				if !utf8.ValidString(snaps[i%steps]) {
					b.Fatal("invalid")
				}
				i++
			}
		})
	}
}

// BenchmarkEmitted1MiB replays a whole 1 MiB output delivered as 1,000
// cumulative snapshots per op, with a Take after each, and reports bytes
// emitted per byte of real output. The baselines re-send the whole snapshot
// ("resend-whole") or the whole bounded text ("resend-bounded") on every
// revision.
func BenchmarkEmitted1MiB(b *testing.B) {
	const size, steps = 1 << 20, 1000
	snaps := cumulative(benchText(size), steps)
	b.Run("buffer", func(b *testing.B) {
		b.SetBytes(size)
		var emitted int64
		for b.Loop() {
			buf := NewBuffer(benchLimit)
			for _, s := range snaps {
				buf.Apply(Text{Kind: Snapshot, Text: s})
				if c, ok := buf.Take(); ok {
					emitted += int64(len(c.Text))
				}
			}
		}
		b.ReportMetric(float64(emitted)/float64(size)/float64(b.N), "emitted/real")
	})
	b.Run("resend-whole", func(b *testing.B) {
		b.SetBytes(size)
		var emitted int64
		for b.Loop() {
			var n naive
			for _, s := range snaps {
				emitted += int64(n.apply(s))
			}
		}
		b.ReportMetric(float64(emitted)/float64(size)/float64(b.N), "emitted/real")
	})
	b.Run("resend-bounded", func(b *testing.B) {
		b.SetBytes(size)
		var emitted int64
		for b.Loop() {
			buf := NewBuffer(benchLimit)
			for _, s := range snaps {
				buf.Apply(Text{Kind: Snapshot, Text: s})
				emitted += int64(len(buf.Whole().Text))
			}
		}
		b.ReportMetric(float64(emitted)/float64(size)/float64(b.N), "emitted/real")
	})
}

// BenchmarkDelta measures one Delta observation plus its Take, for deltas of
// 64 B, 1 KiB and 64 KiB, as strings and as raw bytes.
func BenchmarkDelta(b *testing.B) {
	for _, n := range []int{64, 1 << 10, 64 << 10} {
		s := benchText(n)
		p := []byte(s)
		for _, form := range []string{"string", "bytes"} {
			b.Run(fmt.Sprintf("size=%d/%s", n, form), func(b *testing.B) {
				b.SetBytes(int64(n))
				buf := NewBuffer(benchLimit)
				t := Text{Kind: Delta, Text: s}
				if form == "bytes" {
					t = Text{Kind: Delta, Bytes: p}
				}
				for b.Loop() {
					buf.Apply(t)
					buf.Take()
				}
			})
		}
	}
}

// BenchmarkWindow measures one Window observation plus its Take: a producer
// that keeps its last 30,000 bytes, sliding by 1 KiB per observation. With
// limit=256KiB the window starts inside the held text; with limit=16KiB the
// held text lies inside the window.
func BenchmarkWindow(b *testing.B) {
	const span, slide, steps = 30000, 1 << 10, 1000
	out := benchText(span + slide*steps)
	wins := make([]string, steps)
	for i := range wins {
		end := span + slide*i
		wins[i] = out[end-span : end]
	}
	for _, limit := range []int{256 << 10, 16 << 10} {
		b.Run(fmt.Sprintf("limit=%dKiB", limit>>10), func(b *testing.B) {
			b.SetBytes(slide)
			var buf *Buffer
			var replaced int
			i := 0
			cpu := benchcpu.Now()
			for b.Loop() {
				j := i % steps
				if j == 0 {
					buf = NewBuffer(limit)
				}
				buf.Apply(Text{Kind: Window, Text: wins[j]})
				if c, ok := buf.Take(); ok && c.Replace && j > 0 {
					replaced++
				}
				i++
			}
			benchcpu.Report(b, cpu)
			b.ReportMetric(float64(replaced), "replaces")
		})
	}
}

// BenchmarkWindowDisjoint applies a 30,000-byte window that overlaps
// nothing of the 30,000 bytes held (OpenCode's final text after its live
// window, of other lines of the same output): every op searches the window
// for the held tail's anchor, finds it nowhere, and replaces.
func BenchmarkWindowDisjoint(b *testing.B) {
	const span = 30000
	out := benchText(3 * span)
	held, w := out[:span], out[2*span:]
	b.SetBytes(span)
	buf := NewBuffer(256 << 10)
	cpu := benchcpu.Now()
	for b.Loop() {
		buf.Apply(Text{Kind: Window, Text: held})
		buf.Apply(Text{Kind: Window, Text: w})
		if c, ok := buf.Take(); !ok || !c.Replace {
			b.Fatal("the window did not replace")
		}
		buf.Apply(Text{Kind: Snapshot, Text: ""})
	}
	benchcpu.Report(b, cpu)
}

// BenchmarkLastIndex compares lastIndex with strings.LastIndex on a
// 30,000-byte window (OpenCode's) of log lines and a 64-byte anchor:
// found 1 KiB from the end (a window that slid), found near the start,
// and not found (lines the window does not hold: a window that does not
// overlap the held text).
func BenchmarkLastIndex(b *testing.B) {
	text := benchText(30000)
	anchor := text[30000-1024-anchorLen : 30000-1024]
	cases := []struct{ name, s, anchor string }{
		{"slid", text, anchor},
		{"start", text, text[100 : 100+anchorLen]},
		{"none", text, benchText(60000)[40000 : 40000+anchorLen]}, // later lines, not in text
	}
	for _, c := range cases {
		want := strings.LastIndex(c.s, c.anchor)
		for _, f := range []struct {
			name string
			find func(s, anchor string) int
		}{{"lastIndex", lastIndex}, {"strings", strings.LastIndex}} {
			b.Run(c.name+"/"+f.name, func(b *testing.B) {
				b.SetBytes(int64(len(c.s)))
				cpu := benchcpu.Now()
				for b.Loop() {
					if f.find(c.s, c.anchor) != want {
						b.Fatal("wrong index")
					}
				}
				benchcpu.Report(b, cpu)
			})
		}
	}
}
