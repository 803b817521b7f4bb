package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/acpnorm/acpnorm/bench/load"
)

// ghzReport is the part of ghz's JSON report read here.
type ghzReport struct {
	Count   int64   `json:"count"`
	Total   int64   `json:"total"` // ns
	RPS     float64 `json:"rps"`
	Latency []struct {
		Percentage int   `json:"percentage"`
		Latency    int64 `json:"latency"` // ns
	} `json:"latencyDistribution"`
	Status map[string]int64 `json:"statusCodeDistribution"`
	Errors map[string]int64 `json:"errorDistribution"`
}

func (r *ghzReport) pct(p int) float64 {
	for _, l := range r.Latency {
		if l.Percentage == p {
			return float64(l.Latency) / 1e6
		}
	}
	return 0
}

// ghzRun drives every scenario with ghz against acpnormd and the echo
// server, interleaved, and prints what ghz measured: one ghz request is
// one whole Normalize stream carrying one pass over the scenario, so its
// latency is the stream's, and frames/s is streams/s times the frames of a
// pass. ghz marshals every message of every stream from JSON on the same
// cores as the server, so it saturates earlier than the Go client.
func ghzRun(args []string) error {
	fs := flag.NewFlagSet("ghz", flag.ContinueOnError)
	ghz := fs.String("ghz", ".bin/ghz", "ghz binary (v0.121.0)")
	acpnormd := fs.String("acpnormd", "", "acpnormd binary (required)")
	echod := fs.String("echod", "", "echo server binary (required)")
	recordings := fs.String("recordings", "test/testdata/recordings", "directory of the recordings")
	scenarios := fs.String("scenarios", "all", "comma-separated scenarios, or all")
	conc := fs.Int("c", 8, "ghz concurrency (streams at once)")
	duration := fs.Duration("duration", 5*time.Second, "ghz run time per scenario and server")
	proto := fs.String("proto", "proto/acpnorm/v1/normalizer.proto", "the contract")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *acpnormd == "" || *echod == "" {
		return fmt.Errorf("ghz: -acpnormd and -echod are required")
	}
	chosen, err := chooseScenarios(*recordings, *scenarios, false)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	acp, err := load.Start(ctx, "acpnorm", *acpnormd, "--listen", "serve", "--metrics-listen=", "--log-level=warn")
	if err != nil {
		return err
	}
	defer acp.Stop()
	echo, err := load.Start(ctx, "echo", *echod, "-listen")
	if err != nil {
		return err
	}
	defer echo.Stop()
	dir, err := os.MkdirTemp("", "acpbench-ghz")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tserver\tc\tstreams\tstreams/s\tframes/s\tratio\tstream p50 ms\tstream p99 ms\tnon-OK\t")
	failed := false
	for _, s := range chosen {
		nonce := strconv.FormatInt(time.Now().UnixNano(), 36)
		data, err := load.GHZData(s, nonce)
		if err != nil {
			return err
		}
		file := filepath.Join(dir, s.Name+".json")
		if err := os.WriteFile(file, data, 0o644); err != nil {
			return err
		}
		var echoFPS float64
		for _, srv := range []*load.Server{echo, acp} {
			cmd := exec.CommandContext(ctx, *ghz, "--insecure", "--proto", *proto, "--import-paths", filepath.Dir(filepath.Dir(filepath.Dir(*proto))),
				"--call", "acpnorm.v1.NormalizerService.Normalize", "--data-file", file,
				"-c", strconv.Itoa(*conc), "-z", duration.String(), "--duration-stop", "wait",
				"--max-recv-message-size", "64MiB", "--max-send-message-size", "64MiB",
				"-O", "json", srv.Addr)
			cmd.Stderr = os.Stderr
			out, err := cmd.Output()
			if err != nil {
				return fmt.Errorf("ghz %s on %s: %w", s.Name, srv.Name, err)
			}
			var r ghzReport
			if err := json.Unmarshal(out, &r); err != nil {
				return fmt.Errorf("ghz %s on %s: report: %w", s.Name, srv.Name, err)
			}
			var bad int64
			for code, n := range r.Status {
				if code != "OK" {
					bad += n
				}
			}
			fps := r.RPS * float64(s.Frames())
			ratio := ""
			if srv == echo {
				echoFPS = fps
			} else if echoFPS > 0 {
				ratio = fmt.Sprintf("%.2f×", fps/echoFPS)
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.1f\t%.0f\t%s\t%.1f\t%.1f\t%d\t\n", s.Name, srv.Name, *conc, r.Count, r.RPS, fps, ratio, r.pct(50), r.pct(99), bad)
			if bad > 0 {
				failed = true
				for e, n := range r.Errors {
					fmt.Fprintf(os.Stderr, "ghz %s on %s: %d× %s\n", s.Name, srv.Name, n, e)
				}
			}
		}
	}
	tw.Flush()
	if failed {
		return fmt.Errorf("ghz saw non-OK streams (see above)")
	}
	return nil
}
