// Package service implements the acpnorm gRPC service: the Normalize stream
// loops, the session state they share, and the unary lookups.
package service

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/dialect"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Service implements pb.NormalizerServiceServer.
type Service struct {
	pb.UnimplementedNormalizerServiceServer

	cfg      Config
	log      *slog.Logger
	sessions *sessions

	drainOnce sync.Once
	draining  chan struct{}
}

// New returns a Service with the given limits. A nil log discards logs.
func New(cfg Config, m *Metrics, log *slog.Logger) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if m == nil {
		m = NewMetrics(nil)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg, log: log, sessions: newSessions(cfg, m), draining: make(chan struct{})}, nil
}

// Run evicts expired state until ctx is done.
func (s *Service) Run(ctx context.Context) {
	every := min(s.cfg.TTL, max(s.cfg.Grace, time.Second)) / 2
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.sessions.sweep()
		}
	}
}

// Drain asks every Normalize stream to finish the frames it has read, send
// what they produced, and end with UNAVAILABLE so that clients reconnect
// elsewhere or later. Session state is kept.
func (s *Service) Drain() { s.drainOnce.Do(func() { close(s.draining) }) }

// ListDialects implements pb.NormalizerServiceServer.
func (s *Service) ListDialects(context.Context, *pb.ListDialectsRequest) (*pb.ListDialectsResponse, error) {
	resp := &pb.ListDialectsResponse{Detection: dialect.DetectionOrder}
	for _, d := range dialect.All() {
		info := d.Info()
		resp.Dialects = append(resp.Dialects, &pb.DialectInfo{
			Name:           info.Name,
			AgentNames:     info.AgentNames,
			Summary:        info.Summary,
			AuthMethodIds:  info.AuthMethodIDs,
			MethodPrefixes: info.MethodPrefixes,
			DetectionRules: dialect.DetectionRules(d),
		})
	}
	return resp, nil
}

// GetClientCapabilities implements pb.NormalizerServiceServer.
func (s *Service) GetClientCapabilities(_ context.Context, req *pb.GetClientCapabilitiesRequest) (*pb.GetClientCapabilitiesResponse, error) {
	name := strings.TrimSpace(req.GetDialect())
	d := dialect.Generic()
	if name != "" && !strings.EqualFold(name, dialect.Auto) {
		var ok bool
		if d, ok = dialect.Lookup(name); !ok {
			return nil, status.Errorf(codes.InvalidArgument, "unknown dialect %q; ListDialects lists the dialects of this build", name)
		}
	}
	info := d.Info()
	return &pb.GetClientCapabilitiesResponse{ClientCapabilitiesJson: info.ClientCapabilities, Dialect: info.Name}, nil
}
