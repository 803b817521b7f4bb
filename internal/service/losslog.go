package service

import (
	"log/slog"
	"time"

	"github.com/acpnorm/acpnorm/normalize"
)

// lossLogEvery is how often, at most, DATA_LOSS answers are logged.
const lossLogEvery = 10 * time.Second

// lossLog logs the DATA_LOSS FrameErrors the server answers (a session
// lost state: a Redis restarted without persistence, a replica promoted
// while behind, an eviction; without a store, a restarted process), at
// WARN: the first at
// once, then at most one line every lossLogEvery with how many were
// answered since the last line and the last one's session, identity
// (the metrics' identity label: a configured name, "default" or "other")
// and message, which names the calls and revisions lost, never their
// text. Every field of a line is of that one answer, so one identity's
// session is never shown under another's name. A burst of losses (every
// session of a Redis that lost everything) makes one line per interval;
// the metrics count each (acpnorm_data_losses_detected_total, and
// acpnorm_frame_errors_total{code="DataLoss"}). Answers after the last
// line are counted in the next one.
type lossLog struct {
	log   *slog.Logger
	now   func() time.Time
	burst burstLog
}

func newLossLog(log *slog.Logger, now func() time.Time) *lossLog {
	return &lossLog{log: log, now: now, burst: burstLog{every: lossLogEvery}}
}

// note counts one DATA_LOSS answered to a stream of identity (its
// label), and logs it when a line is due.
func (l *lossLog) note(identity string, e *normalize.FrameError) {
	n, since, ok := l.burst.due(l.now())
	if !ok {
		return
	}
	fields := []any{"answered", n, "session", e.SessionID, "identity", identity, "sequence", e.Sequence, "detail", e.Message}
	fields = sinceLast(fields, since)
	l.log.Warn("DATA_LOSS: a session holds less than its client was answered (lost in the store, or with this process's memory); its request was not applied, and the client rebuilds the session (each answer is counted in acpnorm_frame_errors_total{code=\"DataLoss\"}; at most one such line every "+lossLogEvery.String()+")", fields...)
}
