package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

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
