package normalize

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/acpnorm/acpnorm/internal/accum"
)

// DefaultMemoryBudget returns the default byte budget for held text: a
// quarter of the memory this process may use, which is the smaller of the
// machine's memory (MemTotal in /proc/meminfo) and the cgroup's limit
// (memory.max, or memory.limit_in_bytes under cgroup v1). When neither can
// be read it is 1 GiB.
var DefaultMemoryBudget = sync.OnceValue(func() int {
	mem := memTotal()
	if lim := cgroupLimit(); lim > 0 && (mem == 0 || lim < mem) {
		mem = lim
	}
	if mem <= 0 {
		return 1 << 30
	}
	return int(mem / 4)
})

// memTotal is MemTotal from /proc/meminfo in bytes, 0 when unknown.
func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err == nil && kb > 0 {
				return kb << 10
			}
		}
	}
	return 0
}

// cgroupLimit is the memory limit of this process's cgroup in bytes, 0
// when there is none or it cannot be read.
func cgroupLimit() int64 {
	for _, p := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
		if err != nil || n <= 0 || n >= 1<<60 { // "max", or cgroup v1's "no limit"
			continue
		}
		return n
	}
	return 0
}

// sessionMemory is the share of the budget one session may hold.
func (c config) sessionMemory() int {
	if c.SessionMemory > 0 {
		return c.SessionMemory
	}
	return max(c.MemoryBudget/8, 1)
}

// reserve sets aside n more bytes of held text for session s, up to the
// session's share and the global budget. It returns the limit that refuses
// them, or "".
func (ss *sessions) reserve(s *session, n int) string {
	if n <= 0 {
		return ""
	}
	if ss.held.Add(int64(n)) > int64(ss.cfg.MemoryBudget) {
		ss.held.Add(int64(-n))
		return LimitMemory
	}
	if s.held+n > ss.cfg.sessionMemory() {
		ss.held.Add(int64(-n))
		return LimitSessionMemory
	}
	if held, q := s.space.held.Add(int64(n)), ss.cfg.quota.Memory; q > 0 && held > int64(q) {
		s.space.held.Add(int64(-n))
		ss.held.Add(int64(-n))
		return LimitQuotaMemory
	}
	s.held += n
	return ""
}

// settle replaces what was reserved for a call by what it really holds
// now. With reserved 0 it charges a change that cannot be refused (ending
// a call flushes held-back bytes).
func (ss *sessions) settle(s *session, e *entry, reserved int) {
	now := e.call.Size()
	d := now - e.size - reserved
	e.size = now
	s.held += d
	s.space.held.Add(int64(d))
	ss.hooks.heldBytes(ss.held.Add(int64(d)))
}

// unhold gives back what a call held when it is released.
func (ss *sessions) unhold(s *session, e *entry) {
	s.held -= e.size
	s.space.held.Add(int64(-e.size))
	ss.hooks.heldBytes(ss.held.Add(int64(-e.size)))
	e.size = 0
}

// budget reserves what applying o to e can take. When a limit refuses it,
// the observation's output is not held (each stream it touched is marked
// truncated instead) and, if still needed, the strings it sets are left
// out too; the call's life (its status, exit code, outcome) always
// applies. It returns what was reserved.
func (ss *sessions) budget(s *session, e *entry, o *accum.Observation, r *reply) int {
	need := e.call.GrowthBound(o)
	limit := ss.reserve(s, need)
	if limit == "" {
		return need
	}
	ss.refused(r, limit)
	var dropped int
	if len(o.Texts) > 0 {
		// Each stream the update touched says truncated, and counts the
		// output it was not given in its total (the text seen, before
		// bounding): a delta's bytes, or a whole text's size.
		var touched [accum.NumStreams]bool
		var unheld, whole [accum.NumStreams]int64
		texts := make([]accum.Text, 0, accum.NumStreams)
		for _, t := range o.Texts {
			n := len(t.Text) + len(t.Bytes)
			dropped += n
			if int(t.Stream) >= accum.NumStreams {
				continue
			}
			touched[t.Stream] = true
			if t.Kind == accum.Delta {
				unheld[t.Stream] += int64(n)
			} else {
				whole[t.Stream] = max(whole[t.Stream], int64(n), t.TotalBytes)
			}
		}
		for s, ok := range touched {
			if ok {
				texts = append(texts, accum.Text{Stream: accum.Stream(s), Kind: accum.Delta, Truncated: true, Unheld: unheld[s], TotalBytes: whole[s]})
			}
		}
		o.Texts = texts
	}
	what := "output"
	need = e.call.GrowthBound(o)
	if ss.reserve(s, need) != "" {
		for _, f := range []*string{&o.Command, &o.Cwd, &o.Description, &o.ApprovalReason, &o.CancelNotice, &o.TerminalID} {
			dropped += len(*f)
			*f = ""
		}
		what = "output, command, cwd and description"
		need = e.call.GrowthBound(o)
		if ss.reserve(s, need) != "" {
			need = 0 // what is left cannot grow; settle charges it
		}
	}
	scope, held, of, flag := ss.limitOf(s, limit)
	r.fail(ResourceExhausted, e.call.ID(), "frame %d of session %q: %s holds %d bytes of text, and this update of tool call %q could take more than its limit of %d bytes (%s); its %s (%d bytes) is not held and the field says truncated, and the rest of the update applies", r.seq, s.id, scope, held, e.call.ID(), of, flag, what, dropped)
	return need
}

// limitOf describes a memory limit that refused text of session s: what
// it bounds, what that holds now, the limit and the option setting it.
func (ss *sessions) limitOf(s *session, limit string) (scope string, held int64, of int, flag string) {
	switch limit {
	case LimitSessionMemory:
		return "the session", int64(s.held), ss.cfg.sessionMemory(), "WithSessionMemory, acpnormd --session-memory"
	case LimitQuotaMemory:
		return "its namespace (acpnormd: the identity)", s.space.held.Load(), ss.cfg.quota.Memory, "WithQuota, acpnormd --quota-memory"
	case LimitSessionState:
		return "what the session keeps besides its calls (its cwd, asks, terminal ids and client terminals)", int64(s.state + s.termOutput), ss.cfg.stateLimit(), "4 × WithTextLimit, at least 4 MiB; acpnormd --text-limit"
	}
	return "the service", ss.held.Load(), ss.cfg.MemoryBudget, "WithMemoryBudget, acpnormd --memory-budget"
}

// A session's own state, besides its calls, holds text its client sent:
// its cwd, its unanswered permission asks (their JSON-RPC ids, their
// calls' ids and their reject options), the terminal ids its calls showed
// (with those calls' ids), and its client terminals and the terminal
// requests awaiting their answer (their ids, the calls' ids, the
// commands and cwds). That text is charged like a call's (session.state
// counts it, within session.held) from when it is kept until it goes.
// The ids are most of it at the bounds: 4 × WithMaxCallsPerSession of
// each kind, two ids of up to WithMaxIDBytes each.

// stateLimit bounds what a session keeps besides its calls, which a store
// writes with every commit of the session: 4 × the text limit, at least
// 4 MiB.
func (c config) stateLimit() int { return max(4*c.TextLimit, 4<<20) }

// holdState reserves n bytes of a session's own state. It returns the
// limit that refuses them, or "".
func (ss *sessions) holdState(s *session, n int) string {
	if n > 0 && s.state+s.termOutput+n > ss.cfg.stateLimit() {
		return LimitSessionState
	}
	if limit := ss.reserve(s, n); limit != "" {
		return limit
	}
	s.state += n
	ss.hooks.heldBytes(ss.held.Load())
	return ""
}

// unholdState gives back n bytes of a session's own state.
func (ss *sessions) unholdState(s *session, n int) {
	if n == 0 {
		return
	}
	s.state -= n
	s.held -= n
	s.space.held.Add(int64(-n))
	ss.hooks.heldBytes(ss.held.Add(int64(-n)))
}

// chargeState charges what a session loaded from the store keeps of its
// own, as it was when stored.
func (ss *sessions) chargeState(s *session) {
	n := s.stateBytes() - s.state
	s.state += n
	s.held += n
	s.space.held.Add(int64(n))
	ss.hooks.heldBytes(ss.held.Add(int64(n)))
}

// stateRefused says that a limit refused n bytes of what a session would
// keep (what), and what became of them (then).
func (ss *sessions) stateRefused(r *reply, s *session, call, limit, what string, n int, then string) {
	ss.refused(r, limit)
	scope, held, of, flag := ss.limitOf(s, limit)
	r.fail(ResourceExhausted, call, "frame %d of session %q: %s holds %d bytes of text, and %s (%d bytes) would take it past its limit of %d bytes (%s); %s", r.seq, s.id, scope, held, what, n, of, flag, then)
}

// stateBytes is what a session's own state holds (see holdState).
func (s *session) stateBytes() int {
	n := len(s.cwd)
	for id, a := range s.asks {
		n += a.size(id)
	}
	for t, call := range s.terminals {
		n += termRef(t, call)
	}
	for id, ct := range s.terms {
		n += ct.size(id)
	}
	for id, q := range s.termReqs {
		n += q.size(id)
	}
	return n
}

// size is what an ask kept under JSON-RPC id holds.
func (a ask) size(id string) int {
	n := len(id) + len(a.callID)
	for _, o := range a.reject {
		n += len(o)
	}
	return n
}

// termRef is what a session's note that call showed terminal t holds.
func termRef(t, call string) int { return len(t) + len(call) }

// size is what a terminal request awaiting its answer under JSON-RPC id
// holds (its method is one of a few constants).
func (q termReq) size(id string) int {
	return len(id) + len(q.terminal) + len(q.command) + len(q.cwd)
}

// size is what client terminal id holds besides its output (charged
// apart, see holdTermOutput): its id, its call's, its command and cwd.
func (ct *clientTerm) size(id string) int {
	return len(id) + len(ct.call) + len(ct.command) + len(ct.cwd)
}
