package load

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// Row is the summary of one scenario at one concurrency: medians over the
// rounds of each server and acpnorm's ratios to the baseline.
type Row struct {
	Scenario string `json:"scenario"`
	Streams  int    `json:"streams"`
	// Median over rounds, acpnorm then the echo baseline (or the two
	// servers named to Summarize, in that order).
	FPS   [2]float64 `json:"frames_per_sec"`
	MBps  [2]float64 `json:"mb_per_sec"`
	P50ms [2]float64 `json:"p50_ms"`
	P99ms [2]float64 `json:"p99_ms"`
	// P99SmallMs and P99BigMs are the medians of Result's.
	P99SmallMs [2]float64 `json:"p99_small_ms"`
	P99BigMs   [2]float64 `json:"p99_big_ms"`
	Cores      [2]float64 `json:"server_cores"`
	// UsPerFrame is the median server CPU time per frame, in µs.
	UsPerFrame [2]float64 `json:"server_us_per_frame"`
	PeakRSS    [2]int64   `json:"server_peak_rss"` // the largest over rounds
	FPSRatio   float64    `json:"fps_ratio"`       // acpnorm / echo frames/s
	P99Ratio   float64    `json:"p99_ratio"`       // acpnorm / echo p99
	CPURatio   float64    `json:"cpu_ratio"`       // acpnorm / echo server CPU per frame
	Rounds     int        `json:"rounds"`
	Errors     int64      `json:"errors"`
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Summarize folds the results of every round into one row per scenario
// and concurrency, in the order they first appear. servers names acpnorm
// first and the baseline second.
func Summarize(results []*Result, servers [2]string) []Row {
	type key struct {
		scenario string
		streams  int
	}
	var order []key
	groups := map[key][2][]*Result{}
	for _, r := range results {
		k := key{r.Scenario, r.Streams}
		g, seen := groups[k]
		if !seen {
			order = append(order, k)
		}
		for i, name := range servers {
			if r.Server == name {
				g[i] = append(g[i], r)
			}
		}
		groups[k] = g
	}
	var rows []Row
	for _, k := range order {
		g := groups[k]
		row := Row{Scenario: k.scenario, Streams: k.streams, Rounds: min(len(g[0]), len(g[1]))}
		for i := range 2 {
			var fps, mb, p50, p99, small, big, cores, us []float64
			for _, r := range g[i] {
				fps = append(fps, r.FramesPerSec)
				mb = append(mb, r.MBPerSec)
				p50 = append(p50, r.P50ms)
				p99 = append(p99, r.P99ms)
				small = append(small, r.P99SmallMs)
				big = append(big, r.P99BigMs)
				cores = append(cores, r.ServerCores)
				us = append(us, r.ServerUsPerFrame)
				row.PeakRSS[i] = max(row.PeakRSS[i], r.ServerPeakRSS)
				row.Errors += r.FrameErrors + r.SendErrors
			}
			row.FPS[i], row.MBps[i], row.P50ms[i], row.P99ms[i], row.Cores[i] = median(fps), median(mb), median(p50), median(p99), median(cores)
			row.UsPerFrame[i] = median(us)
			row.P99SmallMs[i], row.P99BigMs[i] = median(small), median(big)
		}
		if row.FPS[1] > 0 {
			row.FPSRatio = row.FPS[0] / row.FPS[1]
		}
		if row.P99ms[1] > 0 {
			row.P99Ratio = row.P99ms[0] / row.P99ms[1]
		}
		if row.UsPerFrame[1] > 0 {
			row.CPURatio = row.UsPerFrame[0] / row.UsPerFrame[1]
		}
		rows = append(rows, row)
	}
	return rows
}

// PrintTable writes the rows as an aligned table, acpnorm and the
// baseline side by side.
func PrintTable(w io.Writer, rows []Row) { PrintPair(w, rows, [2]string{"acpnorm", "echo"}) }

// PrintPair writes the rows as an aligned table, the two servers named
// side by side; ratios are the first over the second.
func PrintPair(w io.Writer, rows []Row, names [2]string) {
	a, b := names[0], names[1]
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "scenario\tc\tframes/s %s\t%s\tratio\tMB/s %s\t%s\tp50 ms %s\t%s\tp99 ms %s\t%s\tratio\tCPU cores %s\t%s\tCPU µs/frame %s\t%s\tratio\tpeak RSS MiB %s\t%s\terrors\t\n", a, b, a, b, a, b, a, b, a, b, a, b, a, b)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.2f×\t%.1f\t%.1f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f×\t%.2f\t%.2f\t%.1f\t%.1f\t%.2f×\t%.0f\t%.0f\t%d\t\n",
			r.Scenario, r.Streams, r.FPS[0], r.FPS[1], r.FPSRatio, r.MBps[0], r.MBps[1],
			r.P50ms[0], r.P50ms[1], r.P99ms[0], r.P99ms[1], r.P99Ratio,
			r.Cores[0], r.Cores[1], r.UsPerFrame[0], r.UsPerFrame[1], r.CPURatio, float64(r.PeakRSS[0])/(1<<20), float64(r.PeakRSS[1])/(1<<20), r.Errors)
	}
	tw.Flush()
}

// PrintMarkdown writes the rows as a Markdown table.
func PrintMarkdown(w io.Writer, rows []Row) { PrintPairMarkdown(w, rows, [2]string{"acpnorm", "echo"}) }

// PrintPairMarkdown writes the rows as a Markdown table, the two servers
// named side by side.
func PrintPairMarkdown(w io.Writer, rows []Row, names [2]string) {
	a, b := names[0], names[1]
	fmt.Fprintf(w, "| scenario | c | frames/s %s | %s | ratio | p50 ms %s | %s | p99 ms %s | %s | ratio | CPU cores %s | %s | CPU µs/frame %s | %s | ratio | peak RSS MiB %s | %s | errors |\n", a, b, a, b, a, b, a, b, a, b, a, b)
	fmt.Fprintln(w, "|---"+strings.Repeat("|--:", 17)+"|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %d | %.0f | %.0f | %.2f× | %.2f | %.2f | %.2f | %.2f | %.2f× | %.2f | %.2f | %.1f | %.1f | %.2f× | %.0f | %.0f | %d |\n",
			r.Scenario, r.Streams, r.FPS[0], r.FPS[1], r.FPSRatio,
			r.P50ms[0], r.P50ms[1], r.P99ms[0], r.P99ms[1], r.P99Ratio,
			r.Cores[0], r.Cores[1], r.UsPerFrame[0], r.UsPerFrame[1], r.CPURatio, float64(r.PeakRSS[0])/(1<<20), float64(r.PeakRSS[1])/(1<<20), r.Errors)
	}
}
