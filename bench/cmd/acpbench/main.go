// Command acpbench runs acpnorm's service load benchmark: it starts acpnormd
// and the echo baseline (bench/echod) on loopback ports, replays every
// scenario on 1, 8 and 32 concurrent Normalize streams against each,
// interleaved (acpnorm, echo, then echo, acpnorm in the next round, for
// several rounds), and prints the medians side by side with acpnorm's
// ratio to the baseline. bench/run.sh builds the binaries and runs it.
//
// Usage:
//
//	acpbench [flags]                         the benchmark
//	acpbench -profile FILE [flags]           the same, acpnorm served in-process and CPU-profiled
//	acpbench ghz -ghz BIN [flags]            the same scenarios driven by ghz
//	acpbench ghzdata -scenario NAME -out F   a ghz --data-file for one scenario
//	acpbench memory -acpnormd BIN [flags]    RSS with 10,000 open calls x 4 KiB, then after closing them
//	acpbench cores -acpnormd BIN [flags]     server cores with 32 sessions on one stream vs on 8
//	acpbench store -acpnormd BIN [flags]     the same cells on acpnormd --store redis://... vs in memory
//	acpbench pair -a BIN -b BIN [flags]      two acpnormd binaries alternated: frames/s and server CPU µs per frame
//
// It exits 1 when any run saw an error (a FrameError, a failed send, a
// stream that broke, a barrier never answered), never because of speed.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/acpnorm/acpnorm/bench/load"
)

func main() {
	var err error
	switch {
	case len(os.Args) > 1 && os.Args[1] == "ghzdata":
		err = ghzData(os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "ghz":
		err = ghzRun(os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "profiled":
		err = profiled(os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "memory":
		err = memory(os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "cores":
		err = cores(os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "pair":
		err = pair(os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "store":
		err = storeBench(os.Args[2:])
	default:
		err = run(os.Args[1:])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "acpbench:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("acpbench", flag.ContinueOnError)
	acpnormd := fs.String("acpnormd", "", "acpnormd binary (required)")
	echod := fs.String("echod", "", "echo server binary (required)")
	cf := addCellFlags(fs, "all", "1,8,32", 3, false)
	pngOut := fs.String("png", "", "write the chart here")
	profile := fs.String("profile", "", "serve acpnorm in-process from this binary (same limits as acpnormd) and write its CPU profile here")
	heapProfile := fs.String("heapprofile", "", "with -profile: also write a heap profile of the server 10 s after it starts (under load)")
	storeURL := fs.String("store", "", "serve acpnorm with its sessions in this Redis (redis://host:port/db), as acpnormd --store does")
	send := addSendFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if (*acpnormd == "" && *profile == "") || *echod == "" {
		return fmt.Errorf("-acpnormd (or -profile) and -echod are required")
	}
	streams, chosen, err := cf.cells()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	acp, err := startACP(ctx, *profile, *heapProfile, *acpnormd, *storeURL)
	if err != nil {
		return err
	}
	defer acp.Stop()
	echo, err := load.Start(ctx, "echo", *echod, "-listen")
	if err != nil {
		return err
	}
	defer echo.Stop()
	servers := []*load.Server{acp, echo}

	cells := cf.rounds * len(chosen) * len(streams) * 2
	fmt.Fprintf(os.Stderr, "acpbench: %d scenarios x c=%v x %d rounds x 2 servers = %d cells of %v (about %v)\n",
		len(chosen), streams, cf.rounds, cells, cf.duration, time.Duration(cells)*(cf.duration+300*time.Millisecond))
	for _, s := range chosen {
		fmt.Fprintf(os.Stderr, "  %-10s %5d frames, %6.1f MB per pass: %s\n", s.Name, s.Frames(), float64(s.Bytes())/1e6, s.What)
	}
	results, failed, err := runRounds(ctx, cf.rounds, chosen, streams, servers, send.options(cf.duration), func(r *load.Result) string {
		return fmt.Sprintf("%-7s %8.0f frames/s  p99 %7.2f ms  %.2f cores  %d frame errors  %d send errors",
			r.Server, r.FramesPerSec, r.P99ms, r.ServerCores, r.FrameErrors, r.SendErrors)
	})
	if err != nil {
		return err
	}
	rows := load.Summarize(results, [2]string{acp.Name, echo.Name})
	fmt.Println()
	load.PrintTable(os.Stdout, rows)
	if cf.markdown {
		fmt.Println()
		load.PrintMarkdown(os.Stdout, rows)
	}
	if cf.jsonOut != "" {
		if err := writeResults(cf.jsonOut, results, rows); err != nil {
			return err
		}
	}
	if *pngOut != "" {
		if err := load.Chart(rows, *pngOut); err != nil {
			return err
		}
	}
	if failed {
		return errRunFailed
	}
	return nil
}

// ghzData writes a ghz --data-file: the NormalizeRequests of one pass over
// a scenario, in protojson, as one bidirectional stream. Session ids are
// ghz templates ({{.WorkerID}}, {{.RequestNumber}}) plus a run nonce, so
// every stream ghz opens uses fresh sessions.
func ghzData(args []string) error {
	fs := flag.NewFlagSet("ghzdata", flag.ContinueOnError)
	recordings := fs.String("recordings", "test/testdata/recordings", "directory of the recordings")
	name := fs.String("scenario", "", "scenario (required)")
	out := fs.String("out", "", "output file (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *name == "" || *out == "" {
		return fmt.Errorf("ghzdata: -scenario and -out are required")
	}
	chosen, err := chooseScenarios(*recordings, *name, false)
	if err != nil {
		return err
	}
	nonce := strconv.FormatInt(time.Now().UnixNano(), 36)
	b, err := load.GHZData(chosen[0], nonce)
	if err != nil {
		return err
	}
	return os.WriteFile(*out, b, 0o644)
}

// chooseScenarios loads the scenarios of the recordings in dir and picks
// the comma-separated names (or all); with mixed, the mixed load
// (load.Mixed) is one of them too.
func chooseScenarios(dir, names string, mixed bool) ([]*load.Scenario, error) {
	all, err := load.Scenarios(dir)
	if err != nil {
		return nil, err
	}
	if mixed {
		all = append(all, load.Mixed(all))
	}
	return load.Select(all, names)
}

// cellFlags are the flags of the commands that run scenarios at stream
// counts over rounds of cells (acpbench itself, pair and store).
type cellFlags struct {
	recordings, scenarios, conc, jsonOut string
	rounds                               int
	duration                             time.Duration
	markdown                             bool
	mixed                                bool // the mixed load is one of the scenarios
}

// addCellFlags defines the cell flags on fs with a command's defaults;
// with mixed, the mixed load is one of the scenarios -scenarios chooses
// from.
func addCellFlags(fs *flag.FlagSet, scenarios, conc string, rounds int, mixed bool) *cellFlags {
	f := &cellFlags{mixed: mixed}
	help := "comma-separated scenarios, or all"
	if mixed {
		help = "comma-separated scenarios (mixed: every recording and grok-text on each stream), or all"
	}
	fs.StringVar(&f.recordings, "recordings", "test/testdata/recordings", "directory of the recordings")
	fs.StringVar(&f.scenarios, "scenarios", scenarios, help)
	fs.StringVar(&f.conc, "c", conc, "comma-separated stream counts")
	fs.IntVar(&f.rounds, "rounds", rounds, "rounds; each runs every cell on every server")
	fs.DurationVar(&f.duration, "duration", 2*time.Second, "sending time of one cell")
	fs.StringVar(&f.jsonOut, "json", "", "write every result and the summary here")
	fs.BoolVar(&f.markdown, "markdown", false, "also print the summary as a Markdown table")
	return f
}

// sendFlags are the flags that say how the load client sends (acpbench
// itself and pair).
type sendFlags struct {
	ownIDs bool
	rate   float64
}

// addSendFlags defines the send flags on fs.
func addSendFlags(fs *flag.FlagSet) *sendFlags {
	f := &sendFlags{}
	fs.BoolVar(&f.ownIDs, "own-acp-ids", false, "send each stream's recordings with ACP session ids of its own, as concurrent agents' sessions have (default: the recorded ids, shared by the streams that replay the same recording)")
	fs.Float64Var(&f.rate, "rate", 0, "pace each stream at this many frames a second, latency counted from each frame's turn (default 0: as fast as the server takes them, the server saturated)")
	return f
}

// options returns the load options the flags say, each cell's duration d.
func (f *sendFlags) options(d time.Duration) load.Options {
	return load.Options{Duration: d, OwnACPIds: f.ownIDs, Rate: f.rate}
}

// cells returns the stream counts of -c and the scenarios -scenarios
// chooses.
func (f *cellFlags) cells() ([]int, []*load.Scenario, error) {
	streams, err := parseStreams(f.conc)
	if err != nil {
		return nil, nil, err
	}
	chosen, err := chooseScenarios(f.recordings, f.scenarios, f.mixed)
	return streams, chosen, err
}

// parseStreams reads a comma-separated list of stream counts.
func parseStreams(s string) ([]int, error) {
	var streams []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-c: %q is not a stream count", f)
		}
		streams = append(streams, n)
	}
	return streams, nil
}

// startACP starts this binary's profiled server when profile is set, or
// else the acpnormd binary; with storeURL, on that Redis; with heap, the
// profiled server also writes a heap profile there.
func startACP(ctx context.Context, profile, heap, acpnormd, storeURL string) (*load.Server, error) {
	if profile == "" {
		args := []string{"serve", "--metrics-listen=", "--log-level=warn"}
		if storeURL != "" {
			args = append(args, "--store", storeURL)
		}
		return load.Start(ctx, "acpnorm", acpnormd, "--listen", args...)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := []string{"profiled", "-cpuprofile", profile, "-store", storeURL}
	if heap != "" {
		args = append(args, "-heapprofile", heap)
	}
	return load.Start(ctx, "acpnorm", self, "-listen", args...)
}
