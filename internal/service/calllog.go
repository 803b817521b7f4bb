package service

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// logStreams logs a stream's start and finish with the fields, message
// and levels of the logging middleware, which still logs the unary calls.
// The middleware's stream interceptor hands the handler a stream of its
// own that reads the clock before and after every message it carries, to
// report message events this server does not log: at c=8 that clock was
// 0.5–1.5% of the server's samples (BENCHMARKS.md, "Around the streams
// and the notices"). This hands the handler the stream it was given and
// reads the clock twice per stream. Its start line comes as the stream
// opens, where the middleware's came with the stream's first message.
func logStreams(logger logging.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		start := time.Now()
		ctx := ss.Context()
		call := interceptors.NewServerCallMeta(info.FullMethod, info, nil)
		fields := logging.Fields{
			logging.SystemTag[0], logging.SystemTag[1],
			logging.ComponentFieldKey, logging.KindServerFieldValue,
			logging.ServiceFieldKey, call.Service,
			logging.MethodFieldKey, call.Method,
			logging.MethodTypeFieldKey, string(call.Typ),
		}
		if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
			fields = append(fields, "peer.address", p.Addr.String())
		}
		fields = append(fields, "grpc.start_time", start.Format(time.RFC3339))
		logger.Log(ctx, logging.LevelInfo, "started call", fields...)

		err := handler(srv, ss)
		end := err
		if errors.Is(end, io.EOF) {
			end = nil
		}
		code := logging.DefaultErrorToCode(end)
		fields = append(fields, "grpc.code", code.String())
		if end != nil {
			fields = append(fields, "grpc.error", end.Error())
		}
		fields = append(fields, logging.DurationToTimeMillisFields(time.Since(start))...)
		logger.Log(ctx, logging.DefaultServerCodeToLevel(code), "finished call", fields...)
		return err
	}
}

// refusalLogEvery is how often, at most, refused calls are logged at INFO.
const refusalLogEvery = 10 * time.Second

// refusalLog logs the calls access control refused: each at DEBUG, and at
// INFO one line per interval with how many were refused since the last
// one and the last refusal's peer and reason.
type refusalLog struct {
	log   *slog.Logger
	burst burstLog
}

// burstLog picks which of a burst of events get a log line: the first at
// once, then at most one every interval, each standing for the events
// since the line before.
type burstLog struct {
	every time.Duration

	mu    sync.Mutex
	last  time.Time // of the last line
	count int       // events since it
}

// due counts an event at now and reports whether it gets a line: then n
// is how many events the line stands for, and since how long it is since
// the line before (0 for the first line).
func (b *burstLog) due(now time.Time) (n int, since time.Duration, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.count++
	if !b.last.IsZero() && now.Sub(b.last) < b.every {
		return 0, 0, false
	}
	if !b.last.IsZero() {
		since = now.Sub(b.last)
	}
	n, b.last, b.count = b.count, now, 0
	return n, since, true
}

// sinceLast appends to a burst's line the time since the line before
// (due's since), when there was one.
func sinceLast(fields []any, since time.Duration) []any {
	if since > 0 {
		fields = append(fields, "since", since.Round(time.Second).String())
	}
	return fields
}

func (r *refusalLog) note(ctx context.Context, err error) {
	method, _ := grpc.Method(ctx)
	addr := ""
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		addr = p.Addr.String()
	}
	st := status.Convert(err)
	r.log.DebugContext(ctx, "call refused", "grpc.method", method, "peer.address", addr, "grpc.code", st.Code().String(), "grpc.error", st.Message())
	n, since, ok := r.burst.due(time.Now())
	if !ok {
		return
	}
	fields := []any{"refused", n, "last.grpc.method", method, "last.peer.address", addr, "last.grpc.code", st.Code().String(), "last.grpc.error", st.Message()}
	fields = sinceLast(fields, since)
	r.log.InfoContext(ctx, "calls refused by access control (each is counted in acpnorm_stream_refusals_total; at most one such line every "+r.burst.every.String()+")", fields...)
}
