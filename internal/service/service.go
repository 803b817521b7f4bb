// Package service implements the acpnorm gRPC service as a thin adapter
// over the public normalize package, which holds the session state and all
// the semantics: it converts requests and responses, runs the Normalize
// stream loops, counts metrics, and answers the unary lookups.
package service

import (
	"context"
	"log/slog"
	"sync"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/normalize"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Service implements pb.NormalizerServiceServer.
type Service struct {
	pb.UnimplementedNormalizerServiceServer

	cfg      Config
	log      *slog.Logger
	sessions *sessions
	recheck  time.Duration // how often a stream checks its credential (see revocation)

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
	return &Service{cfg: cfg, log: log, sessions: newSessions(cfg, m, log), recheck: recheckEvery, draining: make(chan struct{})}, nil
}

// Run evicts expired state, and checks that the store answers (see
// storeHealth), until ctx is done.
func (s *Service) Run(ctx context.Context) {
	go s.sessions.store.run(ctx)
	s.sessions.n.Run(ctx)
}

// Drain asks every Normalize stream to finish the frames it has read, send
// what they produced, and end with UNAVAILABLE so that clients reconnect
// elsewhere or later. Session state is kept.
func (s *Service) Drain() { s.drainOnce.Do(func() { close(s.draining) }) }

// ListDialects implements pb.NormalizerServiceServer.
func (s *Service) ListDialects(context.Context, *pb.ListDialectsRequest) (*pb.ListDialectsResponse, error) {
	list, detection := normalize.Dialects()
	resp := &pb.ListDialectsResponse{Detection: detection}
	for _, d := range list {
		resp.Dialects = append(resp.Dialects, &pb.DialectInfo{
			Name:           d.Name,
			AgentNames:     d.AgentNames,
			Summary:        d.Summary,
			AuthMethodIds:  d.AuthMethodIDs,
			MethodPrefixes: d.MethodPrefixes,
			DetectionRules: d.DetectionRules,
		})
	}
	return resp, nil
}

// GetClientCapabilities implements pb.NormalizerServiceServer.
func (s *Service) GetClientCapabilities(_ context.Context, req *pb.GetClientCapabilitiesRequest) (*pb.GetClientCapabilitiesResponse, error) {
	caps, name, err := normalize.ClientCapabilities(req.GetDialect())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return &pb.GetClientCapabilitiesResponse{ClientCapabilitiesJson: caps, Dialect: name}, nil
}
