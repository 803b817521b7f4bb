package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/acpnorm/acpnorm/bench/load"
)

// cores measures how many cores acpnormd uses when the same sessions
// come interleaved on one stream or spread over several: -sessions
// recordings in flight at once, their frames interleaved one by one,
// carried by each stream count of -c (sessions/c per stream). Cells
// alternate their order between rounds; it prints the medians of the
// server's CPU time over wall time and of frames/s.
func cores(args []string) error {
	fs := flag.NewFlagSet("cores", flag.ContinueOnError)
	acpnormd := fs.String("acpnormd", "", "acpnormd binary (required)")
	recordings := fs.String("recordings", "test/testdata/recordings", "directory of the recordings")
	scenarios := fs.String("scenarios", "grok-text,codex", "comma-separated scenarios, or all")
	sessions := fs.Int("sessions", 32, "sessions in flight at once, over all streams")
	conc := fs.String("c", "1,8", "comma-separated stream counts; each must divide -sessions")
	rounds := fs.Int("rounds", 3, "rounds")
	duration := fs.Duration("duration", 3*time.Second, "sending time of one cell")
	profile := fs.String("profile", "", "serve acpnorm in-process (acpbench profiled, acpnormd's defaults) and write its CPU profile here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *acpnormd == "" && *profile == "" {
		return fmt.Errorf("cores: -acpnormd (or -profile) is required")
	}
	streams, err := parseStreams(*conc)
	if err != nil {
		return err
	}
	for _, n := range streams {
		if *sessions%n != 0 {
			return fmt.Errorf("-c: %d is not a stream count dividing -sessions %d", n, *sessions)
		}
	}
	chosen, err := chooseScenarios(*recordings, *scenarios, false)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	acp, err := startACP(ctx, *profile, "", *acpnormd, "")
	if err != nil {
		return err
	}
	defer acp.Stop()
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Fprintf(os.Stderr, "acpbench cores: load average before: %s", b)
	}
	type key struct {
		scenario string
		streams  int
	}
	got := map[key][]*load.Result{}
	failed := false
	runID := strconv.FormatInt(time.Now().UnixNano(), 36)
	for round := range *rounds {
		for _, s := range chosen {
			order := slices.Clone(streams)
			if round%2 == 1 {
				slices.Reverse(order)
			}
			for _, c := range order {
				r, err := load.Run(ctx, load.Options{
					Addr: acp.Addr, Streams: c, Sessions: *sessions / c, Duration: *duration, Scenario: s,
					ServerPID: acp.PID(), RunID: fmt.Sprintf("%s-%d-%s-%d", runID, round, s.Name, c),
				})
				if err != nil {
					return err
				}
				if ctx.Err() != nil {
					return ctx.Err()
				}
				got[key{s.Name, c}] = append(got[key{s.Name, c}], r)
				fmt.Fprintf(os.Stderr, "round %d %-10s %2d streams x %2d sessions  %8.0f frames/s  %.2f server cores  %.2f client cores\n",
					round+1, s.Name, c, *sessions/c, r.FramesPerSec, r.ServerCores, r.ClientCores)
				if r.Failed() {
					failed = true
					for _, e := range r.Errors {
						fmt.Fprintln(os.Stderr, "   ", e)
					}
				}
			}
		}
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Fprintf(os.Stderr, "acpbench cores: load average after: %s", b)
	}
	med := func(rs []*load.Result, f func(*load.Result) float64) float64 {
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = f(r)
		}
		slices.Sort(xs)
		if len(xs)%2 == 1 {
			return xs[len(xs)/2]
		}
		return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
	}
	fmt.Printf("\nmedians of %d rounds, %d sessions in flight:\n", *rounds, *sessions)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "scenario\tstreams\tsessions/stream\tframes/s\tMB/s\tserver cores\tclient cores\t")
	for _, s := range chosen {
		for _, c := range streams {
			rs := got[key{s.Name, c}]
			fmt.Fprintf(w, "%s\t%d\t%d\t%.0f\t%.1f\t%.2f\t%.2f\t\n", s.Name, c, *sessions/c,
				med(rs, func(r *load.Result) float64 { return r.FramesPerSec }),
				med(rs, func(r *load.Result) float64 { return r.MBPerSec }),
				med(rs, func(r *load.Result) float64 { return r.ServerCores }),
				med(rs, func(r *load.Result) float64 { return r.ClientCores }))
		}
	}
	w.Flush()
	if failed {
		return fmt.Errorf("errors during the run (see above)")
	}
	return nil
}
