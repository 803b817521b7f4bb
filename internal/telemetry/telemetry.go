// Package telemetry sets up OpenTelemetry traces and metrics for acpnormd's
// gRPC server, configured only by the standard OTEL_* environment
// variables, and off unless an OTLP endpoint is set.
//
// It is on when OTEL_EXPORTER_OTLP_ENDPOINT, or the per-signal
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_METRICS_ENDPOINT,
// is set, and OTEL_SDK_DISABLED is not "true". Each signal whose endpoint
// is set gets an exporter chosen the standard way (OTEL_TRACES_EXPORTER,
// OTEL_METRICS_EXPORTER, OTEL_EXPORTER_OTLP_PROTOCOL, headers, timeouts,
// TLS: all read by the OpenTelemetry SDK itself), the resource comes from
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (service.name defaults to
// acpnormd), and the sampler from OTEL_TRACES_SAMPLER and
// OTEL_TRACES_SAMPLER_ARG. Without an endpoint nothing is built: no
// exporter, no goroutine, no connection.
package telemetry

import (
	"context"
	"errors"
	"os"
	"strings"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc/stats"
)

// Telemetry holds the providers of a running setup.
type Telemetry struct {
	traces  *sdktrace.TracerProvider // nil when traces are off
	metrics *sdkmetric.MeterProvider // nil when metrics are off
}

// Providers are the trace and metric providers a gRPC stats handler
// records to; a nil one is off.
type Providers struct {
	Traces  trace.TracerProvider
	Metrics metric.MeterProvider
}

// Enabled says whether the environment asks for telemetry: an OTLP
// endpoint is set for traces or metrics and the SDK is not disabled.
func Enabled() bool {
	traces, metrics := signals()
	return traces || metrics
}

func signals() (traces, metrics bool) {
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return false, false
	}
	set := func(name string) bool { return strings.TrimSpace(os.Getenv(name)) != "" }
	all := set("OTEL_EXPORTER_OTLP_ENDPOINT")
	return all || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), all || set("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
}

// FromEnv builds the exporters the environment asks for, or returns nil
// (and no error) when it asks for none.
func FromEnv(ctx context.Context, version string) (*Telemetry, error) {
	traces, metrics := signals()
	if !traces && !metrics {
		return nil, nil
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "acpnormd"), attribute.String("service.version", version)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
		resource.WithTelemetrySDK(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, err
	}
	t := &Telemetry{}
	if traces {
		exp, err := autoexport.NewSpanExporter(ctx)
		if err != nil {
			return nil, err
		}
		// The sampler is the SDK's default, which reads OTEL_TRACES_SAMPLER.
		t.traces = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	}
	if metrics {
		reader, err := autoexport.NewMetricReader(ctx)
		if err != nil {
			_ = t.Shutdown(ctx)
			return nil, err
		}
		t.metrics = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res))
	}
	return t, nil
}

// Providers returns the providers; a signal that is off is nil.
func (t *Telemetry) Providers() Providers {
	var p Providers
	if t != nil && t.traces != nil {
		p.Traces = t.traces
	}
	if t != nil && t.metrics != nil {
		p.Metrics = t.metrics
	}
	return p
}

// ServerHandler returns the gRPC stats handler that records a span per
// RPC (a stream is one span) and the RPC metrics to p. It uses the W3C
// trace context and baggage propagators, so a client's trace continues.
func ServerHandler(p Providers) stats.Handler {
	opts := []otelgrpc.Option{
		otelgrpc.WithPropagators(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})),
	}
	var tp trace.TracerProvider = tracenoop.NewTracerProvider()
	if p.Traces != nil {
		tp = p.Traces
	}
	var mp metric.MeterProvider = metricnoop.NewMeterProvider()
	if p.Metrics != nil {
		mp = p.Metrics
	}
	opts = append(opts, otelgrpc.WithTracerProvider(tp), otelgrpc.WithMeterProvider(mp))
	return otelgrpc.NewServerHandler(opts...)
}

// Shutdown flushes what is buffered and stops the exporters.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var errs []error
	if t.traces != nil {
		errs = append(errs, t.traces.Shutdown(ctx))
	}
	if t.metrics != nil {
		errs = append(errs, t.metrics.Shutdown(ctx))
	}
	return errors.Join(errs...)
}
