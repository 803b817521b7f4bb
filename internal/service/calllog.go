package service

import (
	"errors"
	"io"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"
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
