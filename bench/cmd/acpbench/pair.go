package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/acpnorm/acpnorm/bench/load"
)

// pair runs the same scenarios against two acpnormd binaries (two commits,
// say), alternating them within every round (a then b, then b then a in
// the next round), and prints both side by side with the ratios a / b,
// the first named first. Its figure is the server's CPU
// time per frame (user plus system, from /proc), which a machine shared
// with other work disturbs far less than frames/s: b costing more than a
// shows there as a ratio below 1 whatever the load was.
func pair(args []string) error {
	fs := flag.NewFlagSet("pair", flag.ContinueOnError)
	binA := fs.String("a", "", "first acpnormd binary (required)")
	binB := fs.String("b", "", "second acpnormd binary (required)")
	nameA := fs.String("name-a", "", "name of the first in the table (default: its file name)")
	nameB := fs.String("name-b", "", "name of the second in the table (default: its file name)")
	cf := addCellFlags(fs, "claude,codex", "8", 5, false)
	echod := fs.String("echod", "", "also run the echo server (bench/echod) in every round and print each binary against it")
	floor := fs.Bool("floor", false, "with -echod, also run the echo server as the floor of an exact reader (echod -scan: each frame's JSON validated before the answer), named scan, and print it against echo and each binary against it")
	send := addSendFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *binA == "" || *binB == "" {
		return fmt.Errorf("pair: -a and -b are required")
	}
	names := [2]string{*nameA, *nameB}
	for i, bin := range [2]string{*binA, *binB} {
		if names[i] == "" {
			names[i] = filepath.Base(bin)
		}
	}
	if names[0] == names[1] || names[0] == "echo" || names[1] == "echo" || names[0] == "scan" || names[1] == "scan" {
		return fmt.Errorf("pair: the binaries need two names other than echo and scan (the baselines'), not %q and %q: give -name-a and -name-b", names[0], names[1])
	}
	if *floor && *echod == "" {
		return fmt.Errorf("pair: -floor runs the echo server, so it needs -echod")
	}
	streams, chosen, err := cf.cells()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var servers []*load.Server
	for i, bin := range [2]string{*binA, *binB} {
		s, err := load.Start(ctx, names[i], bin, "--listen", "serve", "--metrics-listen=", "--log-level=warn")
		if err != nil {
			return err
		}
		defer s.Stop()
		servers = append(servers, s)
	}
	if *echod != "" {
		echo, err := load.Start(ctx, "echo", *echod, "-listen")
		if err != nil {
			return err
		}
		defer echo.Stop()
		servers = append(servers, echo)
	}
	if *floor {
		scan, err := load.Start(ctx, "scan", *echod, "-listen", "-scan")
		if err != nil {
			return err
		}
		defer scan.Stop()
		servers = append(servers, scan)
	}
	results, failed, err := runRounds(ctx, cf.rounds, chosen, streams, servers, send.options(cf.duration), func(r *load.Result) string {
		return fmt.Sprintf("%-16s %8.0f frames/s  %7.1f µs CPU/frame  %.2f cores  %d frame errors  %d send errors",
			r.Server, r.FramesPerSec, r.ServerUsPerFrame, r.ServerCores, r.FrameErrors, r.SendErrors)
	})
	if err != nil {
		return err
	}
	pairs := [][2]string{names}
	if *echod != "" {
		pairs = append(pairs, [2]string{names[0], "echo"}, [2]string{names[1], "echo"})
	}
	if *floor {
		pairs = append(pairs, [2]string{"scan", "echo"}, [2]string{names[0], "scan"}, [2]string{names[1], "scan"})
	}
	var rows []load.Row
	for _, p := range pairs {
		r := load.Summarize(results, p)
		rows = append(rows, r...)
		fmt.Println()
		load.PrintPair(os.Stdout, r, p)
		if cf.markdown {
			fmt.Println()
			load.PrintPairMarkdown(os.Stdout, r, p)
		}
	}
	if cf.jsonOut != "" {
		if err := writeResults(cf.jsonOut, results, rows); err != nil {
			return err
		}
	}
	if failed {
		return errRunFailed
	}
	return nil
}
