package service

import (
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
)

// Metrics are the Prometheus series a Service updates.
type Metrics struct {
	framesIn    prometheus.Counter
	execsOut    prometheus.Counter
	frameErrors *prometheus.CounterVec
	openCalls   prometheus.Gauge
	evictions   *prometheus.CounterVec
	openStreams prometheus.Gauge
	refusals    *prometheus.CounterVec
}

// NewMetrics registers the series with reg. A nil reg gives metrics that
// count but are not exported.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		framesIn: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "acpnorm", Name: "frames_received_total",
			Help: "ACP frames and control messages received.",
		}),
		execsOut: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "acpnorm", Name: "shell_execs_sent_total",
			Help: "ShellExec revisions produced.",
		}),
		frameErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "acpnorm", Name: "frame_errors_total",
			Help: "FrameErrors produced, by gRPC code.",
		}, []string{"code"}),
		openCalls: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "acpnorm", Name: "open_calls",
			Help: "Tool calls held in session state (open or in their grace period).",
		}),
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "acpnorm", Name: "evictions_total",
			Help: "Tool calls dropped from state, by reason (ttl, grace, session_closed).",
		}, []string{"reason"}),
		openStreams: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "acpnorm", Name: "open_streams",
			Help: "Normalize streams being served.",
		}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "acpnorm", Name: "refusals_total",
			Help: "Streams, calls and connections refused or ended by a limit or access control, by reason (max_streams, send_stalled, message_too_large, unreadable_message, unauthenticated, tls_handshake).",
		}, []string{"reason"}),
	}
	if reg != nil {
		reg.MustRegister(m.framesIn, m.execsOut, m.frameErrors, m.openCalls, m.evictions, m.openStreams, m.refusals)
	}
	return m
}

func (m *Metrics) frameError(c codes.Code) { m.frameErrors.WithLabelValues(c.String()).Inc() }

func (m *Metrics) refused(reason string) { m.refusals.WithLabelValues(reason).Inc() }
