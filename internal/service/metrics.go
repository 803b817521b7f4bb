package service

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/acpnorm/acpnorm/normalize"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
)

// Metrics are the Prometheus series a Service updates.
type Metrics struct {
	framesIn       prometheus.Counter
	execsOut       prometheus.Counter
	frameErrors    *prometheus.CounterVec
	openCalls      prometheus.Gauge
	evictions      *prometheus.CounterVec
	lateFrames     prometheus.Counter
	dataLosses     prometheus.Counter
	refusals       *prometheus.CounterVec
	sessions       prometheus.Gauge
	heldBytes      prometheus.Gauge
	openStreams    prometheus.Gauge
	streamRefusals *prometheus.CounterVec
	storeOps       *prometheus.CounterVec
	storeSeconds   *prometheus.HistogramVec
	unrecognized   *prometheus.CounterVec
	// queuedBytes is the bytes of the responses all streams hold for
	// their clients (see sendBytes).
	queuedBytes atomic.Int64

	// versions are the agent_version label values given out (see
	// versionLabel).
	versionsMu sync.Mutex
	versions   map[string]*versionSlot
	// versionsOf counts the values each namespace that holds one was
	// given, and versionsSeen orders uses of a value.
	versionsOf   map[string]int
	versionsSeen uint64

	// labelOf is the identity label of a namespace (see access.label).
	labelOf atomic.Pointer[func(namespace string) string]
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
		dataLosses: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "acpnorm", Name: "data_losses_detected_total",
			Help: "Sessions found older than what a client held (AcpFrame.held_revisions, held_sequence) or than what this process sent of them: the store lost commits. Each was answered with a FrameError DATA_LOSS.",
		}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "acpnorm", Name: "limit_refusals_total",
			Help: "Frames, fields or streams refused because a limit was reached, by limit (max_sessions, max_calls, max_calls_per_session, id_bytes, text_bytes, memory_budget, session_memory, session_state, quota_sessions, quota_calls, quota_memory, quota_streams; loss_floors and loss_floors_per_session: a call's revision held, after a DATA_LOSS, not kept; stream_refused_sessions: a refused session a stream forgot, past 4096) and identity (a configured name, \"default\", or \"other\" for a certificate identity no --tls-client-names entry maps).",
		}, []string{"limit", "identity"}),
		sessions: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "acpnorm", Name: "sessions",
			Help: "Sessions held in state.",
		}),
		heldBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "acpnorm", Name: "held_text_bytes",
			Help: "Bytes of text held by all calls, counted against --memory-budget.",
		}),
		openStreams: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "acpnorm", Name: "open_streams",
			Help: "Normalize streams being served.",
		}),
		streamRefusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "acpnorm", Name: "stream_refusals_total",
			Help: "Streams and calls refused or ended by a transport limit or access control, by reason (max_connections and max_connections_per_address: a connection closed as accepted, handshake_timeout: one closed for not finishing its handshake in time, first_stream_timeout: one closed for opening no stream in time after it, max_streams, max_health_watches, quota_streams, send_stalled, stream_idle, message_too_large, unreadable_message, unauthenticated, revoked, tls_handshake).",
		}, []string{"reason"}),
		storeOps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "acpnorm", Name: "store_ops_total",
			Help: "Operations on the shared state store (--store), by op (load, commit, version, confirm, delete) and result (ok, conflict: another replica changed the session first, error).",
		}, []string{"op", "result"}),
		storeSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "acpnorm", Name: "store_op_seconds",
			Help:    "Time an operation on the shared state store (--store) took, by op.",
			Buckets: prometheus.ExponentialBuckets(50e-6, 4, 9), // 50µs to 3.3s
		}, []string{"op"}),
		unrecognized: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "acpnorm", Name: "unrecognized_total",
			Help: "Sessions that showed something their dialect does not read, a sign that the agent's wire changed (acpnormd replay --explain shows where), each kind once per session, by dialect, agent_version (the agent's build from its initialize result, \"unknown\", or \"other\" for a build that got none of the 64 values, which the identities whose sessions showed builds share fairly) and what (exit_field, output_field, result_text, status_value, content_type, agent_name, shell_unread).",
		}, []string{"dialect", "agent_version", "what"}),
		versions:   map[string]*versionSlot{},
		versionsOf: map[string]int{},
	}
	if reg != nil {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "acpnorm", Name: "send_queue_bytes",
			Help: "Bytes of the responses all streams hold for their clients (queued, being sent, or waiting outside their session's lock), each stream bounded by --send-queue-bytes.",
		}, func() float64 { return float64(m.queuedBytes.Load()) }))
		reg.MustRegister(m.framesIn, m.execsOut, m.frameErrors, m.openCalls, m.evictions, m.lateFrames, m.dataLosses, m.refusals, m.sessions, m.heldBytes, m.openStreams, m.streamRefusals, m.storeOps, m.storeSeconds, m.unrecognized)
	}
	return m
}

func (m *Metrics) frameError(c codes.Code) { m.frameErrors.WithLabelValues(c.String()).Inc() }

// hooks has the Normalizer count into m.
func (m *Metrics) hooks() normalize.Hooks {
	return normalize.Hooks{
		RefusedIn:   func(namespace, limit string) { m.refusedIn(m.label(namespace), limit) },
		LateFrame:   m.lateFrames.Inc,
		DataLoss:    m.dataLosses.Inc,
		CallsOpened: func(delta int) { m.openCalls.Add(float64(delta)) },
		Released:    func(reason string, n int) { m.evictions.WithLabelValues(reason).Add(float64(n)) },
		Sessions:    func(delta int) { m.sessions.Add(float64(delta)) },
		HeldBytes:   func(total int64) { m.heldBytes.Set(float64(total)) },
		StoreOp: func(op, result string, took time.Duration) {
			m.storeOps.WithLabelValues(op, result).Inc()
			m.storeSeconds.WithLabelValues(op).Observe(took.Seconds())
		},
		UnrecognizedIn: func(namespace, dialect, agentVersion, what string) {
			m.unrecognized.WithLabelValues(dialect, m.versionLabel(namespace, agentVersion), what).Inc()
		},
	}
}

// maxVersionLabels bounds the agent_version values of
// acpnorm_unrecognized_total: a client may send any version string.
const maxVersionLabels = 64

// otherVersion is the agent_version of builds that got no value of their
// own.
const otherVersion = "other"

// versionSlot is an agent_version value given out: the namespace whose
// session showed it first, and when it was last used.
type versionSlot struct {
	namespace string
	seen      uint64
}

// versionLabel is the agent_version label of build v (already bounded in
// length by the Normalizer) shown by a session of namespace ns: v itself
// when it has a value, or while fewer than maxVersionLabels were given
// out; otherVersion once they were, unless ns holds less than its share.
// The values are shared fairly between the namespaces that hold them:
// each may hold maxVersionLabels divided by their number (ns counted),
// so that one client's made-up builds cannot leave every real one to
// otherVersion for the life of the process. A namespace under its share
// takes the value least recently used of one over its share (its series
// are deleted); one at its share gets otherVersion. One namespace alone
// may use all of them.
func (m *Metrics) versionLabel(ns, v string) string {
	m.versionsMu.Lock()
	defer m.versionsMu.Unlock()
	m.versionsSeen++
	if s := m.versions[v]; s != nil {
		s.seen = m.versionsSeen
		return v
	}
	if len(m.versions) >= maxVersionLabels {
		holders := len(m.versionsOf)
		if m.versionsOf[ns] == 0 {
			holders++
		}
		share := maxVersionLabels / holders
		if m.versionsOf[ns] >= share {
			return otherVersion
		}
		var victim string
		var oldest *versionSlot
		for value, s := range m.versions {
			if m.versionsOf[s.namespace] > share && (oldest == nil || s.seen < oldest.seen) {
				victim, oldest = value, s
			}
		}
		if oldest == nil {
			return otherVersion
		}
		m.unrecognized.DeletePartialMatch(prometheus.Labels{"agent_version": victim})
		delete(m.versions, victim)
		if m.versionsOf[oldest.namespace]--; m.versionsOf[oldest.namespace] == 0 {
			delete(m.versionsOf, oldest.namespace)
		}
	}
	m.versions[v] = &versionSlot{namespace: ns, seen: m.versionsSeen}
	m.versionsOf[ns]++
	return v
}

// refusedIn counts a refusal by limit of a request of identity label.
func (m *Metrics) refusedIn(label, limit string) { m.refusals.WithLabelValues(limit, label).Inc() }

// label is the identity label of a namespace's refusals: what the server's
// access control says (see access.label), else DefaultIdentity for the
// default namespace and otherIdentity for any other.
func (m *Metrics) label(namespace string) string {
	if f := m.labelOf.Load(); f != nil {
		return (*f)(namespace)
	}
	if namespace == "" {
		return DefaultIdentity
	}
	return otherIdentity
}

// streamRefused counts a stream or call refused or ended by a transport
// limit or access control.
func (m *Metrics) streamRefused(reason string) { m.streamRefusals.WithLabelValues(reason).Inc() }
