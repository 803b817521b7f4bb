package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/acpnorm/acpnorm/bench/load"
)

// memory starts acpnormd on loopback, opens -calls calls with -output
// bytes of live output each (spread over -sessions sessions on -streams
// streams, none ended), prints the server's RSS then, closes every session
// and prints its RSS every half second for -settle.
func memory(args []string) error {
	fs := flag.NewFlagSet("memory", flag.ContinueOnError)
	acpnormd := fs.String("acpnormd", "", "acpnormd binary (required)")
	calls := fs.Int("calls", 10000, "calls to open, in all")
	sessions := fs.Int("sessions", 100, "sessions they are spread over (calls must be a multiple; at most --max-calls-per-session each)")
	streams := fs.Int("streams", 10, "streams the sessions are spread over")
	output := fs.Int("output", 4096, "bytes of live output of each call")
	settle := fs.Duration("settle", 10*time.Second, "how long RSS is sampled after the closes")
	jsonOut := fs.String("json", "", "write the result here")
	redisServer := fs.String("redis-server", "", "start this redis-server on a loopback port and serve with --store redis://... (the calls' state is then also in Redis)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *acpnormd == "" {
		return fmt.Errorf("memory: -acpnormd is required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	metrics, err := load.FreeAddr()
	if err != nil {
		return err
	}
	srvArgs := []string{"serve", "--metrics-listen=" + metrics, "--log-level=warn"}
	redisPID := 0
	if *redisServer != "" {
		dir, err := os.MkdirTemp("", "acpbench-redis-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		rs, err := load.StartRedis(ctx, *redisServer, dir)
		if err != nil {
			return err
		}
		defer rs.Stop()
		redisPID = rs.PID()
		srvArgs = append(srvArgs, "--store", "redis://"+rs.Addr+"/0")
		fmt.Fprintf(os.Stderr, "acpbench memory: the store is redis-server on %s\n", rs.Addr)
	}
	acp, err := load.Start(ctx, "acpnorm", *acpnormd, "--listen", srvArgs...)
	if err != nil {
		return err
	}
	defer acp.Stop()
	fmt.Fprintf(os.Stderr, "acpbench memory: %d calls x %d B of output, %d sessions on %d streams\n", *calls, *output, *sessions, *streams)
	r, err := load.Memory(ctx, load.MemoryOptions{
		Addr: acp.Addr, MetricsURL: "http://" + metrics + "/metrics", ServerPID: acp.PID(),
		Calls: *calls, Sessions: *sessions, Streams: *streams, OutputBytes: *output,
		Settle: *settle, RunID: strconv.FormatInt(time.Now().UnixNano(), 36),
	})
	if err != nil {
		return err
	}
	mib := func(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
	fmt.Printf("RSS before:              %s\n", mib(r.RSSBefore))
	fmt.Printf("opened in:               %v\n", r.OpenTime.Round(time.Millisecond))
	fmt.Printf("server's open calls:     %.0f (held text %.1f MiB)\n", r.OpenCalls, r.HeldBytes/(1<<20))
	fmt.Printf("RSS, every call open:    %s (peak while opening %s)\n", mib(r.RSSOpen), mib(r.PeakOpen))
	if redisPID > 0 {
		if rss, err := load.RSS(redisPID); err == nil {
			fmt.Printf("redis-server RSS now:    %s\n", mib(rss))
		}
	}
	for _, s := range r.Closed {
		fmt.Printf("RSS %5.1f s after close: %s\n", s.After.Seconds(), mib(s.RSS))
	}
	fmt.Printf("peak of the run (closes included): %s\n", mib(r.Peak))
	fmt.Printf("server's open calls after: %.0f\n", r.OpenCallsAfter)
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(r, "", "  ")
		if err := os.WriteFile(*jsonOut, b, 0o644); err != nil {
			return err
		}
	}
	if r.Failed() {
		for _, e := range r.Errors {
			fmt.Fprintln(os.Stderr, "   ", e)
		}
		return fmt.Errorf("errors during the run (see above)")
	}
	return nil
}
