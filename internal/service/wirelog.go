package service

import (
	"log/slog"
	"sync"
)

// maxWireChanges bounds the wire changes wireLog remembers having logged.
const maxWireChanges = 256

// wireLog logs each wire change (normalize.Hooks.UnrecognizedField) the
// first time the process sees it: the dialect, the agent's build, what
// and the field, so that an operator learns which field a new build moved
// without a recording. It remembers maxWireChanges of them; past that it
// says once that it logs no more (acpnorm_unrecognized_total still
// counts).
type wireLog struct {
	log  *slog.Logger
	mu   sync.Mutex
	seen map[[4]string]bool
	full bool
}

func newWireLog(log *slog.Logger) *wireLog {
	return &wireLog{log: log, seen: map[[4]string]bool{}}
}

// changed is normalize.Hooks.UnrecognizedField.
func (w *wireLog) changed(dialect, agentVersion, what, field string) {
	k := [4]string{dialect, agentVersion, what, field}
	w.mu.Lock()
	switch {
	case w.seen[k]:
		w.mu.Unlock()
		return
	case len(w.seen) >= maxWireChanges:
		first := !w.full
		w.full = true
		w.mu.Unlock()
		if first {
			w.log.Warn("wire changes: logged the first ones; more are counted by acpnorm_unrecognized_total only", "logged", maxWireChanges)
		}
		return
	}
	w.seen[k] = true
	w.mu.Unlock()
	w.log.Warn("wire change: an agent sent something its dialect does not read (acpnormd replay --explain on a recording shows the frames)",
		"dialect", dialect, "agent_version", agentVersion, "what", what, "field", field)
}
