package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime/metrics"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/acpnorm/acpnorm/internal/gcpace"
	"github.com/acpnorm/acpnorm/internal/service"
	"github.com/acpnorm/acpnorm/store/redisstore"
)

// profiled serves the real service with acpnormd's default limits,
// transport settings and collector floor, in this process, and writes a
// CPU profile of the whole time it served when it gets SIGTERM or SIGINT.
// `acpbench -profile FILE` runs it in place of acpnormd to see where the
// time goes under load.
func profiled(args []string) error {
	fs := flag.NewFlagSet("profiled", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "gRPC listen address")
	out := fs.String("cpuprofile", "", "CPU profile file (required)")
	storeURL := fs.String("store", "", "keep sessions in this Redis (redis://host:port/db), as acpnormd --store does")
	heapOut := fs.String("heapprofile", "", "also write a heap profile here, -heapat after the server starts")
	heapAt := fs.Duration("heapat", 10*time.Second, "when to write -heapprofile (under load: acpbench's first cell starts about a second in)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("profiled: -cpuprofile is required")
	}
	defer gcpace.Start(gcpace.DefaultFloor).Stop() // acpnormd's default --gc-floor
	cfg := service.DefaultConfig()
	if *storeURL != "" {
		st, err := redisstore.Open(*storeURL)
		if err != nil {
			return err
		}
		defer st.Close()
		cfg.Store = st
	}
	svc, err := service.New(cfg, nil, nil)
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go svc.Run(ctx)
	if *heapOut != "" {
		go writeHeap(ctx, *heapOut, *heapAt)
	}
	go logGC(ctx)
	srv := service.NewServer(svc, service.DefaultServerOptions(), nil)
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
		<-sig
		srv.GRPC.Stop()
	}()
	err = srv.Serve(lis)
	pprof.StopCPUProfile()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeHeap writes a heap profile to out at after: what the live heap
// held at the last collection before then.
func writeHeap(ctx context.Context, out string, after time.Duration) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(after):
	}
	f, err := os.Create(out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "heapprofile:", err)
		return
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		fmt.Fprintln(os.Stderr, "heapprofile:", err)
	}
}

// logGC writes to stderr, every second in which the collector ran, the
// cycles it ran and the live heap after the last: a "gcsec" line.
func logGC(ctx context.Context) {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	last := s[0].Value.Uint64()
	start := time.Now()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		metrics.Read(s)
		if n := s[0].Value.Uint64(); n != last {
			fmt.Fprintf(os.Stderr, "gcsec %.0f s: %d cycles, live heap %.1f MiB\n", time.Since(start).Seconds(), n-last, float64(s[1].Value.Uint64())/(1<<20))
			last = n
		}
	}
}
