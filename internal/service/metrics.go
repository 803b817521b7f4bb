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
	lateFrames  prometheus.Counter
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
		lateFrames: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "acpnorm", Name: "late_frames_refused_total",
			Help: "Observations refused because their tool call was already released (evicted, past its grace period, or closed).",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.framesIn, m.execsOut, m.frameErrors, m.openCalls, m.evictions, m.lateFrames)
	}
	return m
}

func (m *Metrics) frameError(c codes.Code) { m.frameErrors.WithLabelValues(c.String()).Inc() }
