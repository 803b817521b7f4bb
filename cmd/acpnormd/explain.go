package main

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/acpnorm/acpnorm/internal/dialect"
	"github.com/acpnorm/acpnorm/internal/replay"
	"github.com/acpnorm/acpnorm/normalize"
)

// replay --explain: the recording is fed, in process, to a Normalizer as
// the service would feed it, and each frame is also read with the dialect
// the session reads it with (bound to the agent's build), so that every
// change a revision makes to a call can be traced to the frame that made
// it and to the field that frame's observation says it read
// (accum.Observation.Src). What the dialect did not understand
// (accum.Observation.Unrecognized) and what it kept out of output as a
// notice are listed per call too.

// explained is what explain learned of one call.
type explained struct {
	id    string
	first int // the frame that first named it
	last  *normalize.ShellExec
	// Where each value was last set: the frame and the words for it.
	command, cwd, exit []string
	output             []span // by source, in order
	notices            []string
	unknown            []string
	// heldExit is where an earlier frame of the call gave an exit that
	// the call holds until it ends (an exit line of the output text);
	// heldAt is that frame.
	heldExit string
	heldAt   int
	// held is the output, stdout and stderr as the revisions carried
	// them, for the exit line the session looks for when the call ends.
	// (a builder each: a long output comes in many appended texts)
	held      [3]strings.Builder
	heldTotal [3]int64 // the size of each whole text
	// exitLine: an exit line left in output was named.
	exitLine bool
}

// buildOf names the agent's build the call's last revision was read as.
func buildOf(x *normalize.ShellExec) string {
	if x.AgentVersion == "" {
		return "the agent did not say its version"
	}
	build := "agent build " + strconv.Quote(x.AgentVersion)
	if !dialect.ParseVersion(x.AgentVersion).Known() {
		build += " (not a version: read as the newest)"
	}
	return build
}

// span is one source of output and the frames it came from.
type span struct {
	src          string
	first, final int
	frames       int
}

// frameRead is one frame as the session's dialect read it.
type frameRead struct {
	n       int
	dialect string
	frame   dialect.Frame
	byCall  map[string][]*accum.Observation
}

// explain replays lines and prints, for every call, where its command,
// cwd, exit status and output came from.
func explain(w io.Writer, lines []replay.Line, f *replayFlags) (frameErrors int, err error) {
	var problems []string
	// agentName is what the session said of its agent's name (an
	// agent_name report: a name no dialect knows, or none at all).
	agentName := ""
	n := normalize.New(normalize.WithHooks(normalize.Hooks{UnrecognizedField: func(d, _, what, field string) {
		if what != normalize.UnrecognizedAgentName || agentName != "" {
			return
		}
		if field == "agentInfo.name" {
			agentName = fmt.Sprintf("dialect %s: no dialect knows the agent's name (agentInfo.name) (%s)", d, what)
		} else {
			agentName = fmt.Sprintf("dialect %s: the agent named no agent (agentInfo.name absent) and showed no sign of its dialect: a known agent may be misread (%s)", d, what)
		}
	}}))
	calls := map[string]*explained{}
	var order []string
	terminals := map[string]string{} // terminal id -> call id
	sessionCwd := ""                 // where the session's cwd came from
	if f.cwd != "" {
		sessionCwd = "--cwd"
	}
	reader := ""
	lastClientExit := 0 // the last frame that answered with a client terminal's exit status
	named := strings.TrimSpace(f.dialect)
	if strings.EqualFold(named, dialect.Auto) {
		named = ""
	}
	feed := func(seq uint64, run func(opts ...normalize.FeedOption) ([]*normalize.ShellExec, error)) []*normalize.ShellExec {
		var out []*normalize.ShellExec
		opts := []normalize.FeedOption{normalize.WithSequence(seq), normalize.WithNextReader(func(r string) { reader = r }),
			normalize.WithEmit(func(ev normalize.Event) error {
				switch {
				case ev.Error != nil:
					frameErrors++
					problems = append(problems, fmt.Sprintf("frame error: line %d: %s: %s", ev.Error.Sequence, ev.Error.Code, ev.Error.Message))
				case ev.ShellExec != nil:
					out = append(out, ev.ShellExec)
				}
				return nil
			})}
		if _, err := run(opts...); err != nil {
			if _, ok := err.(*normalize.FrameError); !ok {
				problems = append(problems, fmt.Sprintf("line %d: %v", seq, err))
			}
		}
		return out
	}
	revise := func(out []*normalize.ShellExec, fr *frameRead) {
		for _, x := range out {
			c := calls[x.ToolCallID]
			if c == nil {
				c = &explained{id: x.ToolCallID, first: fr.n}
				calls[x.ToolCallID] = c
				order = append(order, x.ToolCallID)
			}
			c.revised(x, fr, sessionCwd, lastClientExit)
		}
	}
	for _, l := range lines {
		d := readerFor(named, reader)
		fr := &frameRead{n: l.Number, dialect: d.Info().Name}
		fr.frame, _ = dialect.Read(d, l.Msg)
		if c := fr.frame.SessionCwd; c != "" && sessionCwd != "--cwd" {
			sessionCwd = fmt.Sprintf("frame %d session/new cwd", l.Number)
		}
		before := reader
		out := feed(uint64(l.Number), func(opts ...normalize.FeedOption) ([]*normalize.ShellExec, error) {
			opts = append(opts, normalize.WithDialect(f.dialect), normalize.WithCwd(f.cwd), normalize.WithDirection(replayDirection(l.Dir)))
			return n.Feed(f.session, l.Msg, opts...)
		})
		if reader != before && fr.frame.Sign != "" {
			// The frame showed the agent's dialect and was read again with it.
			d = readerFor(named, reader)
			fr.dialect = d.Info().Name
			fr.frame, _ = dialect.Read(d, l.Msg)
		}
		fr.index(terminals)
		if r := fr.frame.Response; r != nil && (r.HasExit || r.ExitStatus != nil) {
			lastClientExit = l.Number
		}
		revise(out, fr)
		for id, obs := range fr.byCall {
			if c := calls[id]; c != nil {
				c.noted(fr, obs)
			} else {
				problems = append(problems, shellUnread(fr, id, obs)...)
			}
		}
	}
	if !f.keepOpen {
		last := 0
		if len(lines) > 0 {
			last = lines[len(lines)-1].Number
		}
		out := feed(uint64(last+1), func(opts ...normalize.FeedOption) ([]*normalize.ShellExec, error) {
			return n.CloseSession(f.session, opts...)
		})
		revise(out, &frameRead{n: last + 1, dialect: "close"})
	}

	for _, p := range problems {
		fmt.Fprintln(w, p)
	}
	if agentName != "" {
		fmt.Fprintln(w, agentName)
	}
	if len(order) == 0 {
		fmt.Fprintf(w, "no shell commands found in %d lines\n", len(lines))
		return frameErrors, nil
	}
	sort.SliceStable(order, func(i, j int) bool { return calls[order[i]].first < calls[order[j]].first })
	for _, id := range order {
		calls[id].print(w)
	}
	return frameErrors, nil
}

// readerFor is the dialect the session reads its next frame with: the one
// named on the command line (bound to the build and the client the
// session reported), else the one the session reported (see
// normalize.WithNextReader: the name, then the version and the client's
// capabilities, each after a newline).
func readerFor(named, reader string) dialect.Dialect {
	name, peers, _ := strings.Cut(reader, "\n")
	version, caps, _ := strings.Cut(peers, "\n")
	client, _ := dialect.ParseClient([]byte(caps)) // what the session kept parses
	if named != "" {
		d, _ := dialect.Lookup(named)
		if !strings.EqualFold(name, d.Info().Name) {
			version = ""
		}
		return dialect.BindPeers(d, dialect.ParseVersion(version), client)
	}
	d, ok := dialect.Lookup(name)
	if !ok {
		d = dialect.Generic()
	}
	return dialect.BindPeers(d, dialect.ParseVersion(version), client)
}

func replayDirection(d pb.Direction) normalize.Direction {
	switch d {
	case pb.Direction_DIRECTION_AGENT_TO_CLIENT:
		return normalize.FromAgent
	case pb.Direction_DIRECTION_CLIENT_TO_AGENT:
		return normalize.FromClient
	}
	return normalize.DirectionUnknown
}

// index groups the frame's observations by call, through the terminals
// calls showed for observations that name only a terminal.
func (fr *frameRead) index(terminals map[string]string) {
	fr.byCall = map[string][]*accum.Observation{}
	for i := range fr.frame.Observations {
		o := &fr.frame.Observations[i]
		id := o.ToolCallID
		if o.TerminalID != "" {
			if id != "" {
				terminals[o.TerminalID] = id
			} else {
				id = terminals[o.TerminalID]
			}
		}
		if id != "" {
			fr.byCall[id] = append(fr.byCall[id], o)
		}
	}
}

// source says where this frame gave the value that field picks out of an
// observation: the field label, or, when the frame's observations have
// none, the dialect, or what else the frame was.
func (fr *frameRead) source(id string, field func(*accum.Sources) string, output bool) string {
	at := fmt.Sprintf("frame %d", fr.n)
	if fr.dialect == "close" {
		return fmt.Sprintf("line %d: the session was closed at the end of the file", fr.n)
	}
	obs := fr.byCall[id]
	for i := len(obs) - 1; i >= 0; i-- {
		if s := field(&obs[i].Src); s != "" {
			return at + " " + s
		}
	}
	if len(obs) > 0 {
		return at + " (read by the " + fr.dialect + " dialect; it names no field)"
	}
	switch f := &fr.frame; {
	case output && f.Response != nil && f.Response.HasOutput:
		return at + " terminal/output result output (a client terminal)"
	case f.Terminal != nil:
		return at + " " + f.Terminal.Method + " request (a client terminal)"
	case f.Response != nil && (f.Response.HasExit || f.Response.ExitStatus != nil):
		return at + " client terminal exit status (terminal/wait_for_exit or terminal/output result)"
	case f.Response != nil && f.Response.HasOutput:
		return at + " terminal/output result output (a client terminal)"
	case f.Response != nil:
		return at + " response to a client terminal request"
	case f.Answer != nil:
		return at + " permission answer"
	case f.TurnEnded:
		return at + " session/prompt result (the turn ended)"
	case f.Cancelled:
		return at + " session/cancel"
	}
	return at
}

// revised notes what revision x, made by frame fr, changed.
func (c *explained) revised(x *normalize.ShellExec, fr *frameRead, sessionCwd string, lastClientExit int) {
	prev := c.last
	c.last = x
	c.exitLineLeft(x, prev, fr)
	if prev == nil || x.Command != prev.Command {
		if x.Command != "" {
			c.command = []string{fr.source(c.id, func(s *accum.Sources) string { return s.Command }, false)}
		}
	}
	if prev == nil || x.Cwd != prev.Cwd {
		if x.Cwd != "" {
			src := fr.source(c.id, func(s *accum.Sources) string { return s.Cwd }, false)
			if !hasLabel(fr, c.id, func(s *accum.Sources) string { return s.Cwd }) && sessionCwd != "" {
				src = "the session's cwd (" + sessionCwd + ")"
			}
			c.cwd = []string{src}
		}
	}
	if (prev == nil || !sameExit(prev.ExitCode, x.ExitCode) || prev.Signal != x.Signal) && (x.ExitCode != nil || x.Signal != "") {
		src := fr.source(c.id, func(s *accum.Sources) string { return s.Exit }, false)
		if !givesClientExit(fr, c.id) && x.TerminalID != "" && lastClientExit > 0 && lastClientExit < fr.n {
			// The frame ended the call; the exit is the client terminal's
			// (stronger than any the frame gave, a text's exit line say).
			src = fmt.Sprintf("frame %d client terminal exit status (terminal/wait_for_exit or terminal/output result), applied when frame %d ended the call", lastClientExit, fr.n)
		} else if !givesExit(fr, c.id) && c.heldExit != "" && c.heldAt < fr.n {
			// The frame ended the call; the exit is an earlier frame's.
			src = fmt.Sprintf("%s, applied when frame %d ended the call", c.heldExit, fr.n)
		}
		c.exit = []string{src}
	}
	for _, t := range []*normalize.Text{x.Output, x.Stdout, x.Stderr} {
		if t == nil || (t.Text == "" && t.Mode == normalize.Append) {
			continue
		}
		if x.State == normalize.StateEnded && len(c.output) > 0 && !givesOutput(fr, c.id) {
			break // the ending revision restates the output whole
		}
		src := fr.source(c.id, func(s *accum.Sources) string { return s.Output }, true)
		src = strings.TrimPrefix(src, fmt.Sprintf("frame %d", fr.n))
		src = strings.TrimSpace(src)
		if src == "" {
			src = "(unlabelled)"
		}
		if k := len(c.output); k > 0 && c.output[k-1].src == src {
			if c.output[k-1].final != fr.n {
				c.output[k-1].final = fr.n
				c.output[k-1].frames++
			}
		} else {
			c.output = append(c.output, span{src: src, first: fr.n, final: fr.n, frames: 1})
		}
		break
	}
}

// shellUnread says where frame fr opened tool call id, which gives no
// record, with the signs of a shell its dialect did not take for one.
func shellUnread(fr *frameRead, id string, obs []*accum.Observation) []string {
	var out []string
	for _, o := range obs {
		for _, u := range o.Unrecognized {
			if u.What == accum.UnrecognizedShell {
				q := strconv.QuoteToGraphic(u.Field)
				out = append(out, fmt.Sprintf("frame %d: tool call %s has a shell's %s, but the %s dialect does not read it as a shell (shell_unread)", fr.n, strconv.QuoteToGraphic(clip(id, 80)), q[1:len(q)-1], fr.dialect))
			}
		}
	}
	return out
}

// exitLineLeft folds the texts of revision x and, when x ends the call,
// says an exit line its dialect left at either end of one, as the session
// says it (Hooks.Unrecognized, result_text).
func (c *explained) exitLineLeft(x, prev *normalize.ShellExec, fr *frameRead) {
	texts := false
	for i, t := range []*normalize.Text{x.Output, x.Stdout, x.Stderr} {
		if t == nil {
			continue
		}
		if t.Mode == normalize.Replace {
			c.held[i].Reset()
			c.held[i].WriteString(t.Text)
		} else {
			c.held[i].WriteString(t.Text)
		}
		c.heldTotal[i], texts = t.TotalBytes, true
	}
	// The session looks when the call ends, and at output that comes
	// after.
	ending := prev == nil || prev.State != normalize.StateEnded
	if c.exitLine || x.State != normalize.StateEnded || !ending && !texts {
		return
	}
	for i := range c.held {
		if h := c.held[i].String(); h != "" && accum.ExitLineIn([]byte(h), c.heldTotal[i] <= int64(len(h)), x.ExitCode) {
			c.unknown = append(c.unknown, fmt.Sprintf("frame %d output: an exit line at its start or end, left in it (result_text)", fr.n))
			c.exitLine = true
			return
		}
	}
}

// noted keeps what frame fr's observations of the call kept out of
// output and did not understand.
func (c *explained) noted(fr *frameRead, obs []*accum.Observation) {
	if givesExit(fr, c.id) {
		c.heldExit, c.heldAt = fr.source(c.id, func(s *accum.Sources) string { return s.Exit }, false), fr.n
	}
	for _, o := range obs {
		if o.Src.Notice != "" {
			c.addNotice(fmt.Sprintf("frame %d %s", fr.n, o.Src.Notice))
		}
		if o.CancelNotice != "" {
			c.addNotice(fmt.Sprintf("frame %d the agent's cancel notice %s", fr.n, quoteClip(o.CancelNotice)))
		}
		if o.FailNotice != "" {
			c.addNotice(fmt.Sprintf("frame %d the agent's failure notice %s", fr.n, quoteClip(o.FailNotice)))
		}
		for _, u := range o.Unrecognized {
			q := strconv.QuoteToGraphic(u.Field) // a member name is the agent's: no control characters reach the terminal
			c.unknown = append(c.unknown, fmt.Sprintf("frame %d %s (%s)", fr.n, q[1:len(q)-1], u.What))
		}
	}
}

func (c *explained) addNotice(s string) {
	for _, n := range c.notices {
		if n == s {
			return
		}
	}
	c.notices = append(c.notices, s)
}

// givesExit says whether the frame's observations of the call carry exit
// evidence or a signal.
func givesExit(fr *frameRead, id string) bool {
	for _, o := range fr.byCall[id] {
		if o.Exit != nil || o.Signal != "" {
			return true
		}
	}
	return false
}

// givesClientExit says whether the frame's observations of the call
// carry exit evidence as strong as a client terminal's exit status: the
// weaker evidence a dialect reads beside one (an exit line in the agent's
// result) does not decide the exit.
func givesClientExit(fr *frameRead, id string) bool {
	for _, o := range fr.byCall[id] {
		if o.Exit != nil && o.Exit.Source >= accum.ExitClient {
			return true
		}
	}
	return false
}

// givesOutput says whether the frame's observations of the call carry
// output.
func givesOutput(fr *frameRead, id string) bool {
	for _, o := range fr.byCall[id] {
		if len(o.Texts) > 0 {
			return true
		}
	}
	return false
}

func hasLabel(fr *frameRead, id string, field func(*accum.Sources) string) bool {
	for _, o := range fr.byCall[id] {
		if field(&o.Src) != "" {
			return true
		}
	}
	return false
}

func sameExit(a, b *int32) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func quoteClip(s string) string { return strconv.Quote(clip(oneLine(s), 80)) }

// print writes the call's explanation.
func (c *explained) print(w io.Writer) {
	x := c.last
	fmt.Fprintf(w, "call %s (dialect %s, %s)\n", strconv.Quote(c.id), x.Dialect, buildOf(x))
	list := func(what, value, lead string, items []string) {
		fmt.Fprintf(w, "  %-8s %s\n", what, value)
		for _, f := range items {
			fmt.Fprintf(w, "  %-8s   %s%s\n", "", lead, f)
		}
	}
	row := func(what, value string, from []string) { list(what, value, "from ", from) }
	cmd := "unknown"
	if x.Command != "" {
		cmd = strconv.Quote(clip(x.Command, 80))
	}
	row("command", cmd, c.command)
	cwd := "unknown"
	if x.Cwd != "" {
		cwd = x.Cwd
	}
	row("cwd", cwd, c.cwd)
	exit := "unknown"
	switch {
	case x.ExitCode != nil:
		exit = strconv.Itoa(int(*x.ExitCode))
	case len(c.unknown) > 0:
		exit = "unknown: no frame carried an exit code where the " + x.Dialect + " dialect reads one for this build (see below what it did not understand)"
	default:
		exit = "unknown: no frame carried an exit code where the " + x.Dialect + " dialect reads one for this build"
	}
	if x.Signal != "" {
		exit += ", signal " + x.Signal
	}
	if x.TimedOut {
		exit += ", timed out"
	}
	row("exit", exit, c.exit)
	var out []string
	for _, s := range c.output {
		frames := fmt.Sprintf("frame %d", s.first)
		if s.frames > 1 {
			frames = fmt.Sprintf("frames %d-%d (%d frames)", s.first, s.final, s.frames)
		}
		out = append(out, frames+" "+s.src)
	}
	size := "none"
	if t := firstText(x); t != nil {
		size = fmt.Sprintf("%d bytes", t.TotalBytes)
		if t.Truncated {
			size += " (truncated)"
		}
	}
	row("output", size, out)
	row("outcome", strings.TrimPrefix(x.State.String(), "")+" "+x.Outcome.String()+reasonOf(x), nil)
	if len(c.notices) > 0 {
		list("notices", "kept out of output:", "", c.notices)
	}
	if len(c.unknown) > 0 {
		list("unknown", "not understood by the "+x.Dialect+" dialect:", "", c.unknown)
	}
}

func reasonOf(x *normalize.ShellExec) string {
	if x.OutcomeReason == "" {
		return ""
	}
	return ": " + clip(oneLine(x.OutcomeReason), 100)
}

func firstText(x *normalize.ShellExec) *normalize.Text {
	for _, t := range []*normalize.Text{x.Output, x.Stdout, x.Stderr} {
		if t != nil {
			return t
		}
	}
	return nil
}
