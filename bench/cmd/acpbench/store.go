package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/acpnorm/acpnorm/bench/load"
	"github.com/redis/go-redis/v9"
)

// storeBench runs the same scenarios against two acpnormd processes, one
// keeping its sessions in memory (the default) and one with --store
// redis://..., interleaved over rounds, and prints both side by side with
// the ratio redis / memory. It starts redis-server itself (-redis-server,
// on a free loopback port, no persistence) unless -redis gives a URL.
// The redis figures count redis-server's CPU time beside acpnormd's, and
// each redis cell says how many bytes Redis received per frame.
//
// With -wait-replicas N it also starts N replicas of that redis-server and
// a third acpnormd, redis-waitN, with --store-wait-replicas N, which
// answers a frame only once N replicas hold its commit, and prints it
// against memory and against redis (which then also replicates, without
// waiting).
func storeBench(args []string) error {
	fs := flag.NewFlagSet("store", flag.ContinueOnError)
	acpnormd := fs.String("acpnormd", "", "acpnormd binary (required)")
	redisServer := fs.String("redis-server", "redis-server", "redis-server binary, started on a free loopback port")
	redisURL := fs.String("redis", "", "use this Redis (redis://host:port/db) instead of starting redis-server")
	cf := addCellFlags(fs, "mixed", "1,8,32", 3, true)
	wait := fs.Int("wait-replicas", 0, "also start this many replicas of redis-server and an acpnormd with --store-wait-replicas N")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *acpnormd == "" {
		return fmt.Errorf("store: -acpnormd is required")
	}
	streams, chosen, err := cf.cells()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	url, redisPIDs, redisAddr := *redisURL, []int(nil), ""
	if *wait > 0 && url != "" {
		return fmt.Errorf("store: -wait-replicas starts its own redis-server and replicas; drop -redis")
	}
	if url == "" {
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
		url, redisPIDs, redisAddr = "redis://"+rs.Addr+"/0", []int{rs.PID()}, rs.Addr
		_, port, _ := strings.Cut(rs.Addr, ":")
		for i := range *wait {
			rdir, err := os.MkdirTemp(dir, fmt.Sprint("replica-", i, "-"))
			if err != nil {
				return err
			}
			r, err := load.StartRedis(ctx, *redisServer, rdir, "--replicaof", "127.0.0.1 "+port)
			if err != nil {
				return err
			}
			defer r.Stop()
			redisPIDs = append(redisPIDs, r.PID())
		}
		// A deployment's replicas are up before its load: so are these.
		if err := replicasOnline(ctx, rs.Addr, *wait, time.Minute); err != nil {
			return err
		}
	}
	// redisCPU is the CPU time of the redis-server processes (the master
	// and its replicas) so far.
	redisCPU := func() (time.Duration, error) {
		var sum time.Duration
		for _, pid := range redisPIDs {
			d, err := load.ProcCPU(pid)
			if err != nil {
				return 0, err
			}
			sum += d
		}
		return sum, nil
	}
	common := []string{"serve", "--metrics-listen=", "--log-level=warn"}
	mem, err := load.Start(ctx, "memory", *acpnormd, "--listen", common...)
	if err != nil {
		return err
	}
	defer mem.Stop()
	red, err := load.Start(ctx, "redis", *acpnormd, "--listen", append(common, "--store", url)...)
	if err != nil {
		return err
	}
	defer red.Stop()
	servers := []*load.Server{red, mem}
	var waiting *load.Server
	if *wait > 0 {
		name := fmt.Sprint("redis-wait", *wait)
		waiting, err = load.Start(ctx, name, *acpnormd, "--listen", append(common, "--store", url, "--store-wait-replicas", strconv.Itoa(*wait))...)
		if err != nil {
			return err
		}
		defer waiting.Stop()
		servers = append(servers, waiting)
	}

	cells := cf.rounds * len(chosen) * len(streams) * len(servers)
	names := make([]string, len(servers))
	for i, srv := range servers {
		names[i] = srv.Name
	}
	fmt.Fprintf(os.Stderr, "acpbench store: %d scenarios x c=%v x %d rounds x {%s, Redis at %s with %d replicas} = %d cells of %v (about %v)\n",
		len(chosen), streams, cf.rounds, strings.Join(names, ", "), url, *wait, cells, cf.duration, time.Duration(cells)*(cf.duration+300*time.Millisecond))
	for _, s := range chosen {
		fmt.Fprintf(os.Stderr, "  %-10s %5d frames, %6.1f MB per pass: %s\n", s.Name, s.Frames(), float64(s.Bytes())/1e6, s.What)
	}
	var results []*load.Result
	failed := false
	runID := strconv.FormatInt(time.Now().UnixNano(), 36)
	for round := range cf.rounds {
		for _, s := range chosen {
			for _, c := range streams {
				// Each round starts with another server, so that none
				// always runs on a machine the one before warmed or tired.
				order := append(slices.Clone(servers[round%len(servers):]), servers[:round%len(servers)]...)
				for _, srv := range order {
					onRedis := srv != mem && len(redisPIDs) > 0
					var rcpu0 time.Duration
					var rin0 int64
					if onRedis {
						rcpu0, _ = redisCPU()
						rin0, _ = load.RedisStat(redisAddr, "total_net_input_bytes")
					}
					r, err := load.Run(ctx, load.Options{
						Addr: srv.Addr, Streams: c, Duration: cf.duration, Scenario: s,
						ServerPID: srv.PID(), RunID: fmt.Sprintf("%s-%d-%s-%d-%s", runID, round, s.Name, c, srv.Name),
					})
					if err != nil {
						return err
					}
					if ctx.Err() != nil {
						return ctx.Err()
					}
					redisCores := ""
					if onRedis {
						if rcpu1, err := redisCPU(); err == nil {
							rc := (rcpu1 - rcpu0).Seconds() / r.Elapsed.Seconds()
							r.ServerCores += rc
							redisCores = fmt.Sprintf(" (redis-server %.2f of them)", rc)
						}
						if rin1, err := load.RedisStat(redisAddr, "total_net_input_bytes"); err == nil && r.Frames > 0 {
							redisCores += fmt.Sprintf("  Redis received %.0f B/frame (frames: %.0f B)", float64(rin1-rin0)/float64(r.Frames), float64(r.Bytes)/float64(r.Frames))
						}
					}
					r.Server, r.Round = srv.Name, round+1
					results = append(results, r)
					fmt.Fprintf(os.Stderr, "round %d %-10s c=%-2d %-7s %8.0f frames/s  p99 %7.2f ms  %.2f cores%s  %d frame errors  %d send errors\n",
						round+1, s.Name, c, srv.Name, r.FramesPerSec, r.P99ms, r.ServerCores, redisCores, r.FrameErrors, r.SendErrors)
					if r.Failed() {
						failed = true
						for _, e := range r.Errors {
							fmt.Fprintln(os.Stderr, "   ", e)
						}
					}
				}
			}
		}
	}
	pairs := [][2]string{{red.Name, mem.Name}}
	if waiting != nil {
		pairs = append(pairs, [2]string{waiting.Name, mem.Name}, [2]string{waiting.Name, red.Name})
	}
	summary := map[string][]load.Row{}
	var rows []load.Row
	for i, p := range pairs {
		r := load.Summarize(results, p)
		if i == 0 {
			rows = r
		}
		summary[p[0]+"/"+p[1]] = r
		fmt.Println()
		load.PrintPair(os.Stdout, r, p)
		if cf.markdown {
			fmt.Println()
			load.PrintPairMarkdown(os.Stdout, r, p)
		}
	}
	if cf.jsonOut != "" {
		b, _ := json.MarshalIndent(struct {
			Results []*load.Result        `json:"results"`
			Summary []load.Row            `json:"summary"`
			Pairs   map[string][]load.Row `json:"pairs"`
		}{results, rows, summary}, "", "  ")
		if err := os.WriteFile(cf.jsonOut, b, 0o644); err != nil {
			return err
		}
	}
	if failed {
		return fmt.Errorf("errors during the run (see above); speed is never a failure")
	}
	return nil
}

// replicasOnline waits until the master at addr has n replicas online at
// its own replication offset.
func replicasOnline(ctx context.Context, addr string, n int, timeout time.Duration) error {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	deadline := time.Now().Add(timeout)
	for {
		info, err := c.Info(ctx, "replication").Result()
		if err == nil {
			offset, online := "", 0
			for _, line := range strings.Split(info, "\r\n") {
				if v, ok := strings.CutPrefix(line, "master_repl_offset:"); ok {
					offset = v
				}
			}
			for _, line := range strings.Split(info, "\r\n") {
				if strings.HasPrefix(line, "slave") && strings.Contains(line, "state=online") && strings.Contains(line, "offset="+offset+",") {
					online++
				}
			}
			if online >= n {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("store: the redis-server at %s has not %d replicas online after %v: %v", addr, n, timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
