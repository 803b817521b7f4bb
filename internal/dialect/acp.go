package dialect

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/acpnorm/acpnorm/internal/jsonlit"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Frame is what one JSON-RPC message says, in neutral terms.
type Frame struct {
	// Observations about tool calls, in the order the frame gives them.
	Observations []accum.Observation
	// AgentName is `agentInfo.name` from an `initialize` result.
	AgentName string
	// AgentVersion is `agentInfo.version` from an `initialize` result, as
	// sent (trimmed, cut to MaxVersionBytes; "" when absent or not a
	// string), or the build of the agent behind an adapter as the adapter
	// names it in another result's `_meta`, with the agent's name before
	// it ("pi v0.84.4"; see agentBuilds). ParseVersion reads it; Bind
	// binds a dialect to it.
	AgentVersion string
	// Client is set by an `initialize` request: what the client declared
	// in its clientCapabilities (the zero Client when it declared none).
	// ClientErr says why capabilities it sent were not kept (not an
	// object, over MaxClientBytes); Client is then the zero Client.
	Client    *Client
	ClientErr error
	// Sign names the dialect that this frame identifies its agent by when
	// the agent gives no name: an `initialize` result without
	// `agentInfo.name` offering an auth method only that agent offers, a
	// vendor method only that agent sends, or (read by the generic
	// dialect) an opening tool call of a shape only that agent sends. ""
	// when the frame identifies none. See DetectionOrder.
	Sign string
	// Unnamed is set by an `initialize` result (a result with
	// `protocolVersion`) that gives no `agentInfo.name`: ACP makes
	// agentInfo optional. Unless a sign shows (Sign, on this frame or a
	// later one), the generic dialect reads the agent, and nothing but
	// this flag says that nothing chose it.
	Unnamed bool
	// SessionCwd is the `cwd` of a `session/new`, `session/load` or
	// (ACP v2) `session/resume` request.
	SessionCwd string
	// TurnEnded is set by a `session/prompt` result (any stopReason).
	TurnEnded bool
	// Cancelled is set by `session/cancel` and by a turn that ended with
	// stopReason `cancelled`.
	Cancelled bool
	// Ask is set for a `session/request_permission` request.
	Ask *Ask
	// Answer is set for a response that answers a permission ask.
	Answer *Answer
	// Terminal is set for a request of the agent about a client-owned
	// terminal (see terminal.go).
	Terminal *TerminalRequest
	// Response is set for a response that can answer such a request: an
	// error response, or a result naming a terminal, an output or an exit
	// status.
	Response *Response
	// Load is set by a `session/load` request, or an ACP v2
	// `session/resume` with `replayFrom`: the agent replays the
	// session's history (see History); its JSON-RPC id is LoadID.
	Load   bool
	LoadID string
	// Prompt is set by a `session/prompt` request: a new turn starts.
	Prompt bool
}

// Ask identifies a permission request so that its answer can be matched.
type Ask struct {
	// RequestID is the JSON-RPC id, as raw JSON text.
	RequestID string
	// RejectOptions are the distinct optionIds of the first
	// MaxAskRejects options whose kind is a reject kind (reject_once,
	// reject_always), in order.
	RejectOptions []string
	// UnreadRejects counts the reject options after those, whose optionId
	// is none of theirs: they are not read.
	UnreadRejects int
}

// Answer is a client's response to a permission ask.
type Answer struct {
	// RequestID is the JSON-RPC id, as raw JSON text.
	RequestID string
	// Cancelled says the outcome was `cancelled` (the turn was cancelled).
	Cancelled bool
	// OptionID is the selected option, when one was selected.
	OptionID string
}

// ErrBadFrame wraps every error about a frame that is not usable JSON-RPC.
var ErrBadFrame = errors.New("bad frame")

// message is one JSON-RPC message read in a single typed pass: the
// envelope, the params of every method Read understands with the update or
// toolCall typed as the dialect's U, and the result of a response. It is
// decoded leniently: a field of an unexpected JSON type is left unset
// (encoding/json goes on past an UnmarshalTypeError) instead of failing the
// frame; see checkStrict for the JSON-RPC layer, which stays strict.
type message[U any] struct {
	// JSONRPC is not read, but typed so that a wrong type is noticed.
	JSONRPC rpcString `json:"jsonrpc"`
	ID      rawID     `json:"id"`
	Method  rpcString `json:"method"`
	// Params is nil when params is absent or null.
	Params *struct {
		Update   *U `json:"update"`
		ToolCall *U `json:"toolCall"`
		// Subject is where an ACP v2 permission ask names its tool
		// call: {"type":"tool_call","toolCall":{...}}.
		Subject *struct {
			ToolCall *U `json:"toolCall"`
		} `json:"subject"`
		// Options are a permission ask's, bounded (see askOptions).
		Options askOptions `json:"options"`
		Cwd     string     `json:"cwd"`
		// ReplayFrom is ACP v2 session/resume's: present, the agent
		// replays the session's history (v1's session/load).
		ReplayFrom signMember `json:"replayFrom"`
		// The params of a client-terminal request.
		terminalParams
	} `json:"params"`
	Result *responseResult `json:"result"`
	// Error is the member of an error response.
	Error rawAny `json:"error"`
}

// rpcString is a string member of the envelope that notes a value of
// another JSON type (Bad) instead of leaving only encoding/json's first
// type error to tell, so that a vendor field's type error cannot hide it.
// Like a string field, it keeps its value on null or another type.
type rpcString struct {
	S   string
	Bad bool
}

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (r *rpcString) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if s, ok := jsonlit.Unquote(b); ok {
		r.S = s
	} else if !isNull(b) {
		r.Bad = true
	}
	return nil
}

// UnmarshalJSONString implements jsonlit.StringUnmarshaler: what
// UnmarshalJSON keeps of a string literal (it keeps Bad as it was).
func (r *rpcString) UnmarshalJSONString(text string) { r.S = text }

// rawID is the JSON-RPC id as raw JSON text. Set says the member was
// present (even as null).
type rawID struct {
	Text string
	Set  bool
}

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (r *rawID) UnmarshalJSON(b []byte) error {
	*r = rawID{Text: string(bytes.TrimSpace(b)), Set: true}
	return nil
}

// implementation is an agent's name and build in an initialize result.
type implementation struct {
	Name string `json:"name"`
	// Version is lenient: a build that sends a number or an object
	// here is an unknown build, not a bad frame.
	Version Str `json:"version"`
}

type responseResult struct {
	AgentInfo *implementation `json:"agentInfo"`
	// Info is ACP v2's name for agentInfo (the draft's initialize result:
	// protocolVersion 2, info, capabilities), read only in an initialize
	// result and only when agentInfo is absent.
	Info       *implementation `json:"info"`
	StopReason *string         `json:"stopReason"`
	Outcome    *struct {
		Outcome  string `json:"outcome"`
		OptionID string `json:"optionId"`
	} `json:"outcome"`

	// AuthMethods is read leniently: it is only ever a sign.
	AuthMethods authMethodIDs `json:"authMethods"`
	// ProtocolVersion says the result is an `initialize` result (the
	// member ACP requires there); only whether it is there is read.
	ProtocolVersion signMember `json:"protocolVersion"`
	// SessionID says the result is a session/new (or fork) result, which
	// names no agent: an agentInfo a wrapper or a proxy adds there is not
	// read. Only whether it is there is read.
	SessionID signMember `json:"sessionId"`

	// Meta is the result's `_meta`, for a dialect that reads the agent's
	// build there (agentBuilds).
	Meta resultMeta `json:"_meta"`

	// The members of a client-terminal method's result.
	terminalResult
}

// signMember is a member decoded only for whether it is there (and not
// null): a sign, never a value.
type signMember struct{ Present bool }

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (s *signMember) UnmarshalJSON(b []byte) error {
	s.Present = !isNull(b)
	return nil
}

// resultMeta is a response result's `_meta` object as raw JSON, valid
// while the frame is read; nil when absent or not an object.
type resultMeta []byte

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (r *resultMeta) UnmarshalJSON(b []byte) error {
	*r = nil
	if b = bytes.TrimSpace(b); len(b) > 0 && b[0] == '{' {
		*r = b
	}
	return nil
}

// agentBuilds is implemented by a dialect's update type (its pointer, P
// of readFrame, called on nil) when its agent speaks through an adapter
// whose `agentInfo.version` is the adapter's own build, and the adapter
// names the build of the agent behind it in a response result's `_meta`
// (a session/new result, say). agentBuild returns that build from meta,
// the agent's name first ("pi v0.84.4", which ParseVersion reads with
// Name "pi"), or "" when meta names none. The frame says it as its
// AgentVersion, and the session binds its dialect to it: the dialect
// tells it from the adapter's own by the name.
type agentBuilds interface {
	agentBuild(meta []byte) string
}

// callOf is the constraint of readFrame: every dialect's update type
// embeds ToolCall.
type callOf[U any] interface {
	*U
	call() *ToolCall
}

func (tc *ToolCall) call() *ToolCall { return tc }

// Read reads one JSON-RPC message with dialect d. Messages that say nothing
// about shell commands give an empty Frame and no error. The error, when not
// nil, wraps ErrBadFrame and names the problem.
func Read(d Dialect, msg []byte) (Frame, error) {
	return ReadIn(d, msg, "")
}

// ReadIn is Read for a frame of scope: whose frame it is (for acpnormd,
// the identity that sent it). What reading it leaves behind to read the
// next frames faster (the decode memo of jsonlit.Elide) is kept under
// scope, and only frames of the same scope use it. Read is ReadIn with
// the scope "".
func ReadIn(d Dialect, msg []byte, scope string) (Frame, error) {
	f, err := d.read(msg, scope)
	if err == nil {
		if err = unsoundIDs(msg, &f); err != nil {
			return Frame{}, fmt.Errorf("%w: %v", ErrBadFrame, err)
		}
		if _, ok := Unbound(d).(neverEchoes); ok {
			for i := range f.Observations {
				f.Observations[i].NoEcho = true
			}
		}
	}
	return f, err
}

// neverEchoes is implemented by a dialect whose agent never writes the
// command before its output (recorded: none of its builds does). Its
// observations say so (accum.Observation.NoEcho), so that a command that
// itself prints "$ <command>" first keeps that line: the core otherwise
// takes it for the echo some agents write.
type neverEchoes interface {
	neverEchoes()
}

// replacement is U+FFFD as UTF-8: what the decode makes of invalid UTF-8
// and of a lone surrogate escape (as encoding/json does).
const replacement = string(utf8.RuneError)

// unsoundIDs returns an error when an id the frame names a call or a
// terminal by holds U+FFFD that the frame did not send as such: a string
// literal with invalid UTF-8 or a lone surrogate escape (`"id\ud800"`)
// decodes to it. Two such ids that differ only there ("id\ud800" and
// "id\udfff") decode alike, so they would be read as one call, one's
// result taken for the other's. An id that holds U+FFFD itself (sent as
// its UTF-8 or as `\ufffd`) is sound. The scan runs only when an id holds
// U+FFFD, which no agent's ids do.
func unsoundIDs(msg []byte, f *Frame) error {
	var odd []string
	note := func(id string) {
		if strings.Contains(id, replacement) {
			odd = append(odd, id)
		}
	}
	for i := range f.Observations {
		note(f.Observations[i].ToolCallID)
		note(f.Observations[i].TerminalID)
	}
	if f.Terminal != nil {
		note(f.Terminal.TerminalID)
	}
	if f.Response != nil {
		note(f.Response.TerminalID)
	}
	if odd == nil {
		return nil
	}
	for i := 0; i < len(msg); {
		q := bytes.IndexByte(msg[i:], '"')
		if q < 0 {
			break
		}
		start := i + q
		end := jsonlit.StringEnd(msg, start)
		lit := msg[start:end]
		i = end
		if !bytes.Contains(lit, []byte(`\u`)) && utf8.Valid(lit) {
			continue // decodes to U+FFFD only where it holds it
		}
		s, ok := jsonlit.Unquote(lit)
		if !ok {
			continue
		}
		for _, id := range odd {
			if s == id && !jsontext.Value(lit).IsValid() {
				return fmt.Errorf("the id %s is not valid Unicode (invalid UTF-8 or a lone surrogate escape), so it cannot be told from ids that differ only there", shownLiteral(lit))
			}
		}
	}
	return nil
}

// shownLiteral is a string literal as an error shows it: as sent when it
// is valid UTF-8 (a lone surrogate escape shows as its escape), else
// its text quoted by Go (an invalid byte shows as \xNN); at most 80
// bytes of it.
func shownLiteral(lit []byte) string {
	if len(lit) > 80 {
		lit = lit[:80]
	}
	if utf8.Valid(lit) {
		return string(lit)
	}
	return fmt.Sprintf("%q", bytes.TrimSuffix(lit[1:], []byte{'"'}))
}

// methodUpdates is implemented by a dialect's update type (its pointer,
// P of readFrame) when the dialect observes an update its agent sends
// under a method of its own, one readFrame does not read (methodsRead):
// observeUnder is handed the update of such a message and the method.
// quietFrame may skip such a message, without decoding it, unless its
// update's kind is one sessionUpdates lists as observed, so observeUnder
// must observe nothing in an update of any other kind;
// TestQuietUpdatesObserveNothing holds it to that.
type methodUpdates interface {
	observeUnder(method string) []accum.Observation
}

// askMetas is implemented by a dialect's update type (its pointer, P of
// readFrame) when its agent says what a permission ask is about in the
// request's own `_meta` (params._meta, beside toolCall) rather than in
// the toolCall: setAskMeta is handed that value's bytes (nil when there
// is none) before ask reads the toolCall, so ask and knownTool may read
// it.
type askMetas interface {
	setAskMeta(meta []byte)
}

// askMetaOf is the `_meta` of a request's params in msg, the value's
// bytes alone, or nil when there is none.
func askMetaOf(msg []byte) []byte {
	v := valueAt(msg, "PARAMS", "_META")
	if len(v) == 0 {
		return nil
	}
	return v[:jsonlit.ValueEnd(v, 0)]
}

// readFrame is the whole of Read for a dialect whose updates and
// permission asks decode into U: one json.Unmarshal of the message (as
// jsonlit.FastDecode does it where it can, see decodeElided and
// jsonlit.Decode), then
// observe reads a `session/update`'s update and ask a permission ask's
// toolCall (starting from askBase). observe is not called when the frame
// has no update, ask not when the toolCall is absent or has no id.
func readFrame[U any, P callOf[U]](msg []byte, scope string, observe func(*U) []accum.Observation, ask func(*U) accum.Observation) (Frame, error) {
	var f Frame
	if sign, quiet := quietFrame(msg); quiet {
		// A session/update no dialect observes, or a message of a method
		// the switch below does not read: the typed decode would give
		// this frame and no error (see quietFrame).
		f.Sign = sign
		return f, nil
	}
	var m message[U]
	var err error
	var checked []jsonlit.Lit
	// walk is what the walks after the decode read (noticeUnrecognized,
	// and contradictions where contradictionsReadLight says so):
	// the frame, or the light frame the elided decode read, which is the
	// frame but for the values it took out, each a valid value of the same
	// type in the same place. Those are content texts and members the
	// dialect reads as a rawText or rawBytes, which the walk skips as
	// members it reads whole; in the light frame it skips "" and [] instead
	// of a whole snapshot.
	walk := msg
	plan := readPlanOf[U]()
	// marked is where the fast decode found the update's rawOutput and
	// _meta in walk, when it decoded walk (fast).
	var marked jsonlit.Marked
	var fast bool
	if plan.content || len(plan.members) > 0 {
		var light []byte
		light, checked, marked, fast, err = decodeElided(msg, &m, plan.content, plan.members, scope, plan.marks)
		if light != nil {
			walk = light
		}
	} else {
		marked, fast, err = jsonlit.DecodeMarked(msg, &m, plan.marks)
	}
	if _, typeErr := err.(*json.UnmarshalTypeError); err != nil && !typeErr {
		return f, notAnObject(err)
	}
	// A type error in a permission ask's options is noted by askOptions,
	// which never fails.
	badOptions := m.Params != nil && m.Params.Options.bad != nil && m.Method.S == "session/request_permission"
	if m.JSONRPC.Bad || m.Method.Bad || badOptions || (err != nil && strictParams(m.Method.S)) {
		// The light frame has the frame's types (see walk), and big
		// outputs taken out of it.
		if err := checkStrict(walk); err != nil {
			return f, err
		}
	}
	if v := m.JSONRPC.S; v != "" && v != "2.0" {
		return f, fmt.Errorf("%w: the JSON-RPC layer: jsonrpc is %q, not \"2.0\"", ErrBadFrame, capText(v, 32))
	}
	method := m.Method.S
	if method == "" && !m.ID.Set {
		return f, fmt.Errorf("%w: neither a request, a notification nor a response (no method and no id)", ErrBadFrame)
	}
	err = nil
	switch method {
	case "":
		readResponse(&f, &m.ID, m.Result)
		if b, ok := any(P(nil)).(agentBuilds); ok && m.Result != nil && m.Result.Meta != nil {
			if v := strings.TrimSpace(b.agentBuild(m.Result.Meta)); v != "" {
				f.AgentVersion = cutVersion(v)
			}
		}
		if m.Error.Present {
			f.Response = &Response{RequestID: m.ID.Text, Error: true}
		}
	case "session/update":
		if m.Params == nil {
			return f, fmt.Errorf("%w: session/update without params", ErrBadFrame)
		}
		u := m.Params.Update
		switch {
		case u == nil:
			return f, fmt.Errorf("%w: session/update without params.update", ErrBadFrame)
		case P(u).call().SessionUpdate == "":
			return f, fmt.Errorf("%w: session/update: params.update without sessionUpdate", ErrBadFrame)
		}
		tc := P(u).call()
		word := tc.Status
		unsure := unknownStatus(tc)
		var live, other []accum.Observation
		failed := false
		if unsure {
			// Read as a final: what it carries is read as its dialect
			// reads a final's (see notEnded), after it is read as a
			// live frame, for the exit codes its agent fills in while
			// the command runs, and under the other final status, for
			// the words only a failed end makes the agent's.
			live = observe(u)
			_, failed = any(P(u)).(endsWordedFailed)
			primary, second := "completed", "failed"
			if failed {
				primary, second = second, primary
			}
			tc.Status = &second
			other = observe(u)
			tc.Status = &primary
		}
		f.Observations = observe(u)
		cw := msg
		if plan.light {
			cw = walk
		}
		contradictions(cw, f.Observations)
		if unsure {
			tc.Status = word
			notEnded(f.Observations, live, other, failed)
		}
		var at *jsonlit.Marked
		if fast && !noMarks.Load() {
			at = &marked
		}
		noticeUnrecognized(walk, at, plan.known, tc, f.Observations, tc.SessionUpdate == "tool_call" && knowsTool(P(u)))
		markChecked(f.Observations, checked)
		for _, o := range f.Observations {
			if err == nil && o.ToolCallID == "" && o.TerminalID == "" {
				err = errors.New("a tool call update without toolCallId")
				if t := updateIDType(msg); t != "" {
					err = fmt.Errorf("a tool call update whose toolCallId is a JSON %s, not a string", t)
				}
			}
		}
	case "session/request_permission":
		p := m.Params
		if p == nil {
			return f, fmt.Errorf("%w: session/request_permission without params", ErrBadFrame)
		}
		f.Ask = &Ask{RequestID: m.ID.Text, RejectOptions: p.Options.reject, UnreadRejects: p.Options.unread}
		tc := p.ToolCall
		if tc == nil && p.Subject != nil {
			tc = p.Subject.ToolCall // ACP v2
		}
		if tc != nil && P(tc).call().ToolCallID != "" {
			if r, ok := any(P(tc)).(askMetas); ok {
				r.setAskMeta(askMetaOf(msg))
			}
			f.Observations = []accum.Observation{ask(tc)}
			// An ask is often the first sight of a call.
			if !knowsTool(P(tc)) {
				noticeShellUnread(walk, "TOOLCALL", P(tc).call(), f.Observations)
			}
		}
	case "session/new":
		if m.Params != nil {
			f.SessionCwd = m.Params.Cwd
		}
	case "initialize":
		if m.ID.Set {
			c, cerr := readClient(msg)
			f.Client, f.ClientErr = &c, cerr
		}
	case "session/cancel":
		f.Cancelled = true
	case "session/load":
		f.Load, f.LoadID = true, m.ID.Text
		if m.Params != nil {
			f.SessionCwd = m.Params.Cwd
		}
	case "session/resume":
		// ACP v2 restores a session with session/resume; it replays the
		// history, as v1's session/load, only when replayFrom asks.
		if m.Params != nil {
			f.SessionCwd = m.Params.Cwd
			if m.Params.ReplayFrom.Present {
				f.Load, f.LoadID = true, m.ID.Text
			}
		}
	case "session/prompt":
		f.Prompt = true
	case MethodTerminalCreate, MethodTerminalOutput, MethodTerminalWait, MethodTerminalKill, MethodTerminalRelease:
		var p terminalParams
		cwd := ""
		if m.Params != nil {
			p, cwd = m.Params.terminalParams, m.Params.Cwd
		}
		f.Terminal = readTerminalRequest(m.ID.Text, method, &p, cwd)
	default: // every other method: methodsRead lists the cases above
		f.Sign = signOfMethod(method)
		if m.Params != nil && m.Params.Update != nil {
			if u, ok := any(P(m.Params.Update)).(methodUpdates); ok {
				f.Observations = u.observeUnder(method)
			}
		}
	}
	if err != nil {
		return Frame{}, fmt.Errorf("%w: %s: %v", ErrBadFrame, methodName(method), err)
	}
	return f, nil
}

// sessionUpdates declares every `sessionUpdate` kind of a `session/update`
// that readFrame knows: true for a kind some dialect observes (the
// observe functions of every dialect, and Grok's `task_completed`, which
// arrives under its own `_x.ai/` methods), false for a kind no dialect
// observes, whose frame is the empty Frame without an error. A frame of a
// false kind is not decoded (quietFrame); a kind not listed is decoded,
// as is every frame whose kind is not a plain string. Under a method
// readFrame does not read, a true kind is always decoded, and any other
// may be skipped (see quietFrame).
// TestQuietUpdatesObserveNothing holds every dialect to the false kinds,
// and TestObservedUpdatesObserve to the true ones.
var sessionUpdates = map[string]bool{
	"tool_call":             true,
	"tool_call_update":      true,
	"terminal_update":       true,
	"terminal_output_chunk": true,
	"task_completed":        true,

	// ACP's own kinds about everything but tool calls.
	"user_message_chunk":        false,
	"agent_message_chunk":       false,
	"agent_thought_chunk":       false,
	"plan":                      false,
	"available_commands_update": false,
	"current_mode_update":       false,
	"config_option_update":      false,
	"session_info_update":       false,
	"usage_update":              false,
	// Vendor kinds about the turn and the session.
	"response_completed":        false,
	"turn_completed":            false,
	"session_summary_generated": false,
	"model_changed":             false,
}

// methodsRead are the methods of the cases of readFrame's switch (""
// being a response's): a message of any other method reads as the frame
// with its sign alone (signOfMethod), whatever its params, so quietFrame
// need not decode it. TestMethodsReadAreTheSwitch holds the two together.
var methodsRead = map[string]bool{
	"": true, "session/update": true, "session/request_permission": true,
	"session/new": true, "initialize": true, "session/cancel": true,
	"session/load": true, "session/resume": true, "session/prompt": true,
	MethodTerminalCreate: true, MethodTerminalOutput: true, MethodTerminalWait: true,
	MethodTerminalKill: true, MethodTerminalRelease: true,
}

// strictParams says whether a message with this method has a strict part
// beyond the envelope: a response's result, a permission ask's toolCall
// and options, the cwd of a session/new or session/load. No method also
// covers a message that is not an object at all.
func strictParams(method string) bool {
	return method == "" || method == "session/request_permission" || method == "session/new" || method == "session/load" || method == "session/resume" || method == "session/update"
}

func methodName(m string) string {
	if m == "" {
		return "response"
	}
	return m
}

func readResponse(f *Frame, id *rawID, r *responseResult) {
	if r == nil {
		return // an error response or an empty result: nothing to learn
	}
	info := r.AgentInfo
	if info == nil && r.ProtocolVersion.Present {
		info = r.Info
	}
	if !r.ProtocolVersion.Present && (r.SessionID.Present || r.StopReason != nil) {
		// Not an initialize result (a session/new or session/prompt
		// result): an agentInfo there would rename the session's agent
		// mid-session. One without protocolVersion and without these is
		// still read, as hand-written traces name agents so.
		info = nil
	}
	if info != nil {
		f.AgentName = info.Name
		if v := info.Version; v.Set {
			f.AgentVersion = cutVersion(strings.TrimSpace(v.S))
		}
	}
	if f.AgentName == "" {
		f.Sign = signOfAuth(r.AuthMethods)
		f.Unnamed = r.ProtocolVersion.Present
	}
	if r.StopReason != nil {
		f.TurnEnded = true
		f.Cancelled = *r.StopReason == "cancelled"
	}
	f.Response = r.terminalResult.response(id.Text)
	if r.Outcome != nil {
		f.Answer = &Answer{
			RequestID: id.Text,
			Cancelled: r.Outcome.Outcome == "cancelled",
			OptionID:  r.Outcome.OptionID,
		}
	}
}

// The JSON-RPC layer is strict where the vendor fields are lenient: a
// jsonrpc or method that is not a string, a message that is not an object,
// a response result object, a permission ask's toolCall.toolCallId and
// options, or a session/new cwd of the wrong type fail the frame. The
// single lenient pass notices any type error; only when it may lie in
// that layer (a bad jsonrpc or method, or a method with strict params: a
// session/update whose update has a vendor field of another type, such as
// an agent_message_chunk's content object, never pays) does checkStrict
// decode that layer again, strictly, with the types below, and name the
// problem as encoding/json does.

type envelope struct {
	JSONRPC string   `json:"jsonrpc"`
	ID      rawValue `json:"id"`
	Method  string   `json:"method"`
	Params  rawValue `json:"params"`
	Result  rawValue `json:"result"`
}

// rawValue is a member's value as its bytes in the message, which the
// decoders hand over without copying (as they do to resultMeta): unlike
// a json.RawMessage it is no copy of a params that may be most of a
// 16 MiB frame, and it is valid only while the message is read.
type rawValue []byte

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (r *rawValue) UnmarshalJSON(b []byte) error {
	*r = b
	return nil
}

// permissionEnvelope is the strict layer of a permission ask's params,
// which strictAsk checks without decoding its options into a list.
type permissionEnvelope struct {
	ToolCall struct {
		ToolCallID string `json:"toolCallId"`
	} `json:"toolCall"`
	Options askOptions `json:"options"`
}

// notAnObject is the error of a message that could not be decoded at
// all: not JSON, or nested deeper than encoding/json reads (then it is
// likely a JSON object, and the depth is what to say).
func notAnObject(err error) error {
	if se, ok := errors.AsType[*json.SyntaxError](err); ok && se.Error() == "exceeded max depth" {
		return fmt.Errorf("%w: objects and arrays nested past the maximum depth", ErrBadFrame)
	}
	return fmt.Errorf("%w: not a JSON object: %v", ErrBadFrame, err)
}

// checkStrict returns the error of a message whose JSON-RPC layer has a
// field of the wrong type, and nil when only vendor fields do.
func checkStrict(msg []byte) error {
	var env envelope
	if err := json.Unmarshal(msg, &env); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case !errors.As(err, &te):
			return notAnObject(err)
		case te.Field == "":
			return fmt.Errorf("%w: not a JSON object: the message is a JSON %s", ErrBadFrame, jsonType(te))
		}
		return fmt.Errorf("%w: the JSON-RPC layer: %s", ErrBadFrame, typeProblem(te, ""))
	}
	if env.Method == "" && env.ID == nil {
		return nil // Read names this problem
	}
	var err error
	switch env.Method {
	case "":
		if !isNull(env.Result) && env.Result[0] == '{' {
			err = json.Unmarshal(env.Result, new(responseResult))
		}
	case "session/request_permission":
		if !isNull(env.Params) {
			if te := strictAsk(env.Params); te != nil {
				err = te
			}
		}
	case "session/new", "session/load", "session/resume":
		if !isNull(env.Params) {
			err = json.Unmarshal(env.Params, new(struct {
				Cwd string `json:"cwd"`
			}))
		}
	case "session/update":
		// ACP's own layer of an update; what is under it beside
		// sessionUpdate is the agent's to shape.
		if !isNull(env.Params) {
			err = json.Unmarshal(env.Params, new(struct {
				SessionID string `json:"sessionId"`
				Update    *struct {
					SessionUpdate string `json:"sessionUpdate"`
				} `json:"update"`
			}))
		}
	}
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &te):
		return fmt.Errorf("%w: %s: %v", ErrBadFrame, methodName(env.Method), err)
	}
	top := "params"
	if env.Method == "" {
		top = "result"
	}
	return fmt.Errorf("%w: %s: %s", ErrBadFrame, methodName(env.Method), typeProblem(te, top))
}

// typeProblem words a type error of encoding/json for a FrameError: the
// member by its path in the message (under top, the member the value
// was read from), and JSON's types, not the Go types it was read into.
func typeProblem(te *json.UnmarshalTypeError, top string) string {
	path := strings.Trim(top+"."+te.Field, ".")
	return fmt.Sprintf("%s is a JSON %s, not %s", path, jsonType(te), jsonKind(te.Type))
}

// jsonType is the JSON type of the value a type error met.
func jsonType(te *json.UnmarshalTypeError) string {
	v := te.Value
	if f := strings.Fields(v); len(f) > 0 {
		v = f[0] // "number 300": a number
	}
	if v == "bool" {
		return "boolean"
	}
	return v
}

// jsonKind names the JSON type a Go type is read from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return jsonKind(t.Elem())
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "another type"
}

func isNull(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) == 0 || bytes.Equal(b, []byte("null"))
}

// ToolCall is the ACP shape shared by `tool_call`, `tool_call_update`, the
// `toolCall` of a permission ask, and the ACP v2 `terminal_update` and
// `terminal_output_chunk` updates. Dialects embed it in their own struct
// beside typed RawInput, RawOutput or `_meta` fields for the vendor fields
// they read, so that a frame is decoded in one pass.
type ToolCall struct {
	SessionUpdate string   `json:"sessionUpdate"`
	ToolCallID    string   `json:"toolCallId"`
	Title         *string  `json:"title"`
	Kind          *string  `json:"kind"`
	Status        *string  `json:"status"`
	Content       Contents `json:"content"`
	// rawInput and rawOutput are vendor shapes: dialects that read them
	// add typed RawInput and RawOutput fields beside the embedded ToolCall.

	// ACP v2 draft terminal updates.
	TerminalID string         `json:"terminalId"`
	Command    *string        `json:"command"`
	Cwd        *string        `json:"cwd"`
	Output     TerminalOutput `json:"output"`
	ExitStatus *ExitStatus    `json:"exitStatus"`
	Data       *string        `json:"data"`
}

// TerminalOutput is the `output` of an ACP v2 `terminal_update`: absent
// (unchanged), null (cleared) or an object whose `data` is base64.
type TerminalOutput struct {
	Present bool
	Null    bool
	Data    Str
}

// UnmarshalJSON implements json.Unmarshaler; it never fails. An output of
// another JSON type is present with no data.
func (t *TerminalOutput) UnmarshalJSON(b []byte) error {
	*t = TerminalOutput{Present: true, Null: isNull(b)}
	jsonlit.EachMember(b, func(key string, val []byte) {
		if key == "DATA" {
			t.Data.UnmarshalJSON(val)
		}
	})
	return nil
}

// Contents is the `content` of a tool call. A value that is not an array
// (an agent_message_chunk's content is one object) reads as none, as
// encoding/json leaves a slice on a type error, but without stopping the
// one-pass decode (see decode).
type Contents []Content

// UnmarshalJSONFrom implements the one-pass decoder's streaming
// unmarshaler; encoding/json does not call it.
func (c *Contents) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if dec.PeekKind() != '[' {
		return dec.SkipValue()
	}
	return jsonv2.UnmarshalDecode(dec, (*[]Content)(c))
}

// Content is one ACP tool call content item.
type Content struct {
	Type    string `json:"type"`
	Content *struct {
		Type string `json:"type"`
		// Text is often a whole output, unquoted only when Texts reads
		// it: some agents send the same output again in another field,
		// and a dialect reads one of the two.
		Text rawText `json:"text"`
	} `json:"content"`
	TerminalID string `json:"terminalId"`
}

// ExitStatus is the ACP v2 terminal exit status.
type ExitStatus struct {
	ExitCode Code   `json:"exitCode"`
	Signal   Signal `json:"signal"`
}

// TerminalMeta is the `_meta` terminal convention shared by several agents.
type TerminalMeta struct {
	TerminalInfo *struct {
		TerminalID string `json:"terminal_id"`
		Cwd        string `json:"cwd"`
	} `json:"terminal_info"`
	TerminalOutput      *TerminalData `json:"terminal_output"`
	TerminalOutputDelta *TerminalData `json:"terminal_output_delta"`
	TerminalExit        *struct {
		TerminalID string `json:"terminal_id"`
		ExitCode   Code   `json:"exit_code"`
		Signal     Signal `json:"signal"`
	} `json:"terminal_exit"`
}

// TerminalData is the payload of `_meta.terminal_output(_delta)`.
type TerminalData struct {
	TerminalID string `json:"terminal_id"`
	Data       Str    `json:"data"`
}

// Code is an exit code as agents send it: an int, an integral float or a
// numeric string. Anything else (null, a fraction, a word, an object)
// leaves Known false; it is never turned into 0 and is not an error.
type Code struct {
	Value int32
	Known bool
}

// UnmarshalJSON implements json.Unmarshaler.
func (c *Code) UnmarshalJSON(b []byte) error {
	*c = ParseCode(b)
	return nil
}

// ParseCode reads an exit code from raw JSON.
func ParseCode(b []byte) Code {
	b = bytes.Trim(b, blank)
	if len(b) == 0 {
		return Code{}
	}
	s := string(b)
	if b[0] == '"' {
		var ok bool
		if s, ok = jsonlit.Unquote(b); !ok {
			return Code{}
		}
		s = trimBlank(s)
	}
	return CodeFromString(s)
}

// blank is ASCII's white space. An exit code, a signal or a line that
// holds one is trimmed of it alone (trimBlank): a value padded with other
// white space (U+00A0, U+3000) is not one an agent wrote, and must not
// read as the number inside it.
const blank = " \t\n\r\f\v"

// trimBlank trims ASCII's white space from both ends of s.
func trimBlank(s string) string { return strings.Trim(s, blank) }

// firstKnown returns the first known code, for agents that name the same
// exit code in more than one field.
func firstKnown(codes ...Code) Code {
	for _, c := range codes {
		if c.Known {
			return c
		}
	}
	return Code{}
}

// CodeFromString reads an exit code from text such as "3", "-1", "3.0" or
// "1e2": a decimal number whose value is whole and fits an int32. Whether
// it is whole is read from its digits, not from a float, which would make
// 1e-400 or 3.0000000000000000001 whole by rounding.
func CodeFromString(s string) Code {
	if n, err := strconv.ParseInt(s, 10, 32); err == nil {
		return Code{Value: int32(n), Known: true}
	}
	if n, ok := wholeDecimal(s); ok {
		return Code{Value: n, Known: true}
	}
	return Code{}
}

// leastBytes is the least number of bytes a size an agent rounded can
// stand for: v of unit ("B", "bytes", "KB" or "KiB" of 1,024, "MB",
// "GB"), less half, the most its rounding added (see each dialect's
// caller for how its agent rounds). 0 when that is not above 0; sizes
// from 2^50 bytes up, which no output has, are 0 too.
func leastBytes(v, half float64, unit string) int64 {
	scale := 1.0
	switch strings.TrimSuffix(strings.TrimSuffix(unit, "B"), "i") {
	case "K":
		scale = 1 << 10
	case "M":
		scale = 1 << 20
	case "G":
		scale = 1 << 30
	}
	if n := (v - half) * scale; n > 0 && n < 1<<50 {
		return int64(n)
	}
	return 0
}

// wholeDecimal reads s as a JSON number (a leading + allowed) and returns
// its value when that is a whole number within an int32.
func wholeDecimal(s string) (int32, bool) {
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	digitsAt := func(s string) int { // the length of the run of digits s starts with
		n := 0
		for n < len(s) && '0' <= s[n] && s[n] <= '9' {
			n++
		}
		return n
	}
	n := digitsAt(s)
	if n == 0 {
		return 0, false
	}
	whole, s := s[:n], s[n:]
	frac := ""
	if s != "" && s[0] == '.' {
		if n = digitsAt(s[1:]); n == 0 {
			return 0, false
		}
		frac, s = s[1:1+n], s[1+n:]
	}
	exp := 0
	if s != "" && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		expNeg := s != "" && s[0] == '-'
		if s != "" && (s[0] == '-' || s[0] == '+') {
			s = s[1:]
		}
		if n = digitsAt(s); n == 0 {
			return 0, false
		}
		// An exponent of more than a few digits moves any digit other
		// than 0 out of an int32 or below the units.
		e := 1 << 20
		if ed := strings.TrimLeft(s[:n], "0"); len(ed) <= 6 {
			e, _ = strconv.Atoi("0" + ed)
		}
		if expNeg {
			e = -e
		}
		exp, s = e, s[n:]
	}
	if s != "" {
		return 0, false
	}
	// The value is digits × 10^exp, the digits without leading zeros and
	// with their trailing zeros moved into exp.
	digits := strings.TrimLeft(whole+frac, "0")
	exp -= len(frac)
	for digits != "" && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		exp++
	}
	if digits == "" {
		return 0, true
	}
	if exp < 0 || len(digits)+exp > 10 {
		return 0, false
	}
	v, err := strconv.ParseInt(digits+strings.Repeat("0", exp), 10, 64)
	if neg {
		v = -v
	}
	if err != nil || v < math.MinInt32 || v > math.MaxInt32 {
		return 0, false
	}
	return int32(v), true
}

// Exit turns a known code into exit evidence from source src; it returns nil
// for an unknown code. Values from structured fields and text on a frame
// that does not end the call are placeholders.
func (c Code) Exit(src accum.ExitSource, ended bool) *accum.Exit {
	if !c.Known {
		return nil
	}
	placeholder := !ended && (src == accum.ExitStructured || src == accum.ExitText)
	return &accum.Exit{Code: c.Value, Source: src, Placeholder: placeholder}
}

// ReadStatus maps an ACP status string.
func ReadStatus(s *string) accum.Status {
	if s == nil {
		return accum.StatusNone
	}
	switch *s {
	case "pending":
		return accum.StatusPending
	case "in_progress":
		return accum.StatusRunning
	case "completed":
		return accum.StatusCompleted
	case "failed", "cancelled":
		// ACP v2's `cancelled` ends the call too (Base says it was
		// cancelled).
		return accum.StatusFailed
	}
	return accum.StatusNone
}

// ReadKind maps an ACP tool kind to whether it is a shell command. Kinds
// other than execute say "not a shell" only weakly: dialects whose agents
// run shell commands under other kinds override it.
func ReadKind(k *string) accum.Shell {
	if k == nil {
		return accum.ShellUnknown
	}
	switch *k {
	case "execute":
		return accum.ShellYes
	case "read", "edit", "delete", "move", "search", "think", "fetch", "switch_mode":
		return accum.ShellNo
	}
	return accum.ShellUnknown
}

// Texts returns the text of the `content` text items, joined by newlines,
// and whether there was any.
func (tc *ToolCall) Texts() (string, bool) {
	var parts []string
	for _, c := range tc.Content {
		if c.isText() {
			parts = append(parts, c.Content.Text.Str().S)
		}
	}
	if len(parts) == 0 {
		return "", false
	}
	return strings.Join(parts, "\n"), true
}

// HasTexts says whether Texts would find a text item, without unquoting
// any.
func (tc *ToolCall) HasTexts() bool {
	for _, c := range tc.Content {
		if c.isText() {
			return true
		}
	}
	return false
}

func (c *Content) isText() bool {
	return c.Type == "content" && c.Content != nil && c.Content.Type == "text"
}

// TerminalContent returns the terminalId of the first terminal content item.
func (tc *ToolCall) TerminalContent() string {
	for _, c := range tc.Content {
		if c.Type == "terminal" && c.TerminalID != "" {
			return c.TerminalID
		}
	}
	return ""
}

// Base reads the fields every dialect shares: id, opening, kind, status,
// title and terminal content. It reads nothing vendor-specific.
func (tc *ToolCall) Base() accum.Observation {
	o := accum.Observation{
		ToolCallID: tc.ToolCallID,
		Opens:      tc.SessionUpdate == "tool_call",
		Shell:      ReadKind(tc.Kind),
		Status:     ReadStatus(tc.Status),
		TerminalID: tc.TerminalContent(),
	}
	if o.TerminalID != "" {
		o.Shell = accum.ShellYes
	}
	if tc.Status != nil && *tc.Status == "cancelled" {
		o.Cancelled = true // ACP v2
	}
	return o
}

// takeExit makes e the observation's exit evidence when it is stronger
// than what o holds (see accum.StrongerExit), and src (a field label, see
// accum.Sources) where it came from. A nil e changes nothing.
func takeExit(o *accum.Observation, e *accum.Exit, src string) {
	if e == nil {
		return
	}
	if o.Exit = accum.StrongerExit(o.Exit, e); o.Exit == e {
		o.Src.Exit = src
	}
}

// askBase is Base for the `toolCall` of a permission ask: it never opens
// the call (the session decides whether an ask is the first sight of one)
// and it is marked as an ask.
func (tc *ToolCall) askBase() accum.Observation {
	o := tc.Base()
	o.Opens = false
	o.PermissionAsk = true
	return o
}

// askReason is the text content of a permission ask, trimmed: the agent's
// reason for asking, never output.
func (tc *ToolCall) askReason() string {
	text, _ := tc.Texts()
	return strings.TrimSpace(text)
}

// ApplyTerminalMeta adds what the `_meta` terminal convention says: the
// terminal id and cwd, live deltas and the terminal exit.
func (m *TerminalMeta) ApplyTerminalMeta(o *accum.Observation) {
	if m == nil {
		return
	}
	if ti := m.TerminalInfo; ti != nil {
		o.Shell = accum.ShellYes
		if ti.TerminalID != "" {
			o.TerminalID = ti.TerminalID
		}
		if ti.Cwd != "" {
			o.Cwd, o.Src.Cwd = ti.Cwd, "_meta.terminal_info.cwd"
		}
	}
	for i, td := range []*TerminalData{m.TerminalOutput, m.TerminalOutputDelta} {
		if td == nil {
			continue
		}
		o.Shell = accum.ShellYes
		if td.TerminalID != "" && o.TerminalID == "" {
			o.TerminalID = td.TerminalID
		}
		if td.Data.S != "" {
			o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: accum.Delta, Text: td.Data.S})
			o.Src.Output = [...]string{"_meta.terminal_output.data", "_meta.terminal_output_delta.data"}[i]
		}
	}
	if te := m.TerminalExit; te != nil {
		o.Shell = accum.ShellYes
		takeExit(o, te.ExitCode.Exit(accum.ExitTerminal, true), "_meta.terminal_exit.exit_code")
		if te.Signal.Reported() && o.Src.Exit == "" {
			o.Src.Exit = "_meta.terminal_exit.signal"
		}
		te.Signal.apply(o)
	}
}

// NormalizeSignal writes a signal name as "SIGKILL": it adds the SIG prefix
// to bare names and maps numbers of the common signals.
func NormalizeSignal(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	if n, err := strconv.Atoi(s); err == nil {
		if name, ok := signalNames[n]; ok {
			return name
		}
		return "SIG" + s
	}
	u := strings.ToUpper(s)
	if !strings.HasPrefix(u, "SIG") {
		u = "SIG" + u
	}
	return u
}

var signalNames = map[int]string{
	1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 6: "SIGABRT", 9: "SIGKILL",
	13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM",
}

// StripFence removes one Markdown code fence around s ("```sh\n...\n```"),
// if s is exactly one fenced block (trailing newlines allowed).
func StripFence(s string) (string, bool) {
	t := strings.TrimRight(s, "\n")
	if !strings.HasPrefix(t, "```") || !strings.HasSuffix(t, "```") || len(t) < 6 {
		return s, false
	}
	nl := strings.IndexByte(t, '\n')
	if nl < 0 {
		return s, false
	}
	return t[nl+1 : len(t)-3], true
}

// readPlan is what readFrame reads of its update type U before each
// frame, found with one lookup rather than one for each.
type readPlan struct {
	content bool             // elisionSafe[U]
	members []jsonlit.Member // elidedMembers[U]
	light   bool             // contradictionsReadLight[U]
	known   *knownTree       // knownOf[U]
	// marks are the members noticeUnrecognized walks (rawOutput and
	// _meta) in the objects decoded into U.
	marks *jsonlit.Marks
}

// readPlanOf returns the readPlan of U, made on first use. It is the one
// cache of what the functions below find: each of them works from U's
// type every time it is called.
func readPlanOf[U any]() *readPlan {
	t := reflect.TypeFor[U]()
	if p, ok := readPlans.Load(t); ok {
		return p.(*readPlan)
	}
	p, _ := readPlans.LoadOrStore(t, &readPlan{content: elisionSafe[U](), members: elidedMembers[U](), light: contradictionsReadLight[U](), known: knownOf[U](),
		marks: jsonlit.NewMarks(t, knownMembers[:]...)})
	return p.(*readPlan)
}

var readPlans sync.Map // reflect.Type → *readPlan

// elisionSafe says whether the update type U takes a frame's content texts
// only through ToolCall.Content, so that elided values reach rawText.
func elisionSafe[U any]() bool {
	return contentFieldsOf(reflect.TypeFor[U]()) == 1 && shared.contentOK
}

// elidedMembers returns the members of the update type U, other than its
// content texts, that the elided decode takes out of a big frame: every
// member that reaches a rawText (a lazy text: validated in the walk,
// unquoted only when a dialect reads it; or, where the field's tag says
// elide:"decoded" because its dialect reads it whenever it is there,
// decoded in the walk, one pass instead of two) or a rawBytes (a byte
// array),
// through members that reach structs the decoder fills field by field.
// The big outputs agents send besides the content texts (Codex's
// rawOutput.aggregated_output, stdout and formatted_output, Claude's
// _meta.claudeCode.toolResponse.stdout, OpenCode's rawOutput.output,
// Grok's byte arrays) are such members, so the decoder reads a light
// frame and no big string is scanned twice.
//
// A member is followed only where the decoder cannot send its value
// anywhere else: its name folds to one field only (encoding/json matches
// names without regard to case), and the struct it leads to has no
// unmarshaling method of its own that would see the light frame's bytes,
// unless elideThrough names the struct such a method decodes an object
// into with the same decoder.
func elidedMembers[U any]() []jsonlit.Member {
	t := reflect.TypeFor[U]()
	if decodesItself(t) {
		return nil
	}
	return membersOf(t, 0)
}

// contradictionsReadLight says whether contradictions may read the light
// frame of an elided decode of U instead of the frame: it reads nothing
// but objects and the values of members named signal, outcome, timed_out
// and timedOut, and the light frame differs from the frame only in the
// values of elided members, each a string or an array there and "" or []
// in the light frame. So it reads the same in both unless one of those
// members is elided. Reading the light frame skips the big outputs a
// walk of the frame would go through again.
func contradictionsReadLight[U any]() bool {
	return !elidesAny(elidedMembers[U](), "signal", "outcome", "timed_out", "timedout")
}

// elidesAny says whether ms names, at any depth, a member of one of names
// (lower-case ASCII, as Member.Name is).
func elidesAny(ms []jsonlit.Member, names ...string) bool {
	for _, m := range ms {
		if slices.Contains(names, m.Name) || elidesAny(m.Members, names...) {
			return true
		}
	}
	return false
}

// elideThrough maps a struct whose UnmarshalJSONFrom decodes a JSON
// object into one of its fields, with the decoder it is given, to that
// field's type: the members of that type are followed.
var elideThrough = map[reflect.Type]reflect.Type{
	reflect.TypeFor[codexRawOutput](): reflect.TypeFor[codexOutputFields](),
}

// maxElidedDepth bounds how deep elidedMembers follows structs.
const maxElidedDepth = 8

// membersOf returns the members of struct t to take out (see
// elidedMembers).
func membersOf(t reflect.Type, depth int) []jsonlit.Member {
	if depth > maxElidedDepth {
		return nil
	}
	var out []jsonlit.Member
	for _, f := range jsonFields(t) {
		name := strings.ToLower(f.name)
		if !plainASCII(name) || len(fieldsNamed(t, name)) != 1 {
			continue
		}
		ft := f.typ
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case ft == reflect.TypeFor[rawText]():
			out = append(out, jsonlit.Member{Name: name, Text: true, Lazy: !f.decoded})
		case ft == reflect.TypeFor[rawBytes]():
			out = append(out, jsonlit.Member{Name: name, Bytes: true})
		case ft.Kind() == reflect.Struct:
			if through, ok := elideThrough[ft]; ok {
				ft = through
			} else if decodesItself(ft) {
				continue
			}
			if ms := membersOf(ft, depth+1); len(ms) > 0 {
				out = append(out, jsonlit.Member{Name: name, Members: ms})
			}
		}
	}
	return out
}

// decodesItself says whether the decoder hands values of type t (a
// struct) to a method of t rather than filling its fields.
func decodesItself(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return p.Implements(reflect.TypeFor[json.Unmarshaler]()) ||
		p.Implements(reflect.TypeFor[jsonv2.UnmarshalerFrom]()) ||
		p.Implements(reflect.TypeFor[encoding.TextUnmarshaler]())
}

// jsonField is a field of a struct as encoding/json sees it: its JSON
// name, its tag options and its type.
type jsonField struct {
	name, opts string
	typ        reflect.Type
	// decoded says the field is a rawText its dialect reads whenever the
	// frame has it (the tag `elide:"decoded"`): the elided decode then
	// decodes it as it validates it, in one pass, where a lazy text is
	// validated, then unquoted when it is read.
	decoded bool
}

// allJSONFields returns the fields of struct t that encoding/json sees,
// embedded structs flattened as it flattens them ("-" and unexported
// fields left out).
func allJSONFields(t reflect.Type) []jsonField {
	var out []jsonField
	for i := range t.NumField() {
		f := t.Field(i)
		tag, opts, _ := cutComma(f.Tag.Get("json"))
		if tag == "-" {
			continue
		}
		if f.Anonymous && tag == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				out = append(out, allJSONFields(ft)...)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if tag == "" {
			tag = f.Name
		}
		out = append(out, jsonField{name: tag, opts: opts, typ: f.Type, decoded: f.Tag.Get("elide") == "decoded"})
	}
	return out
}

// jsonFields returns the fields of struct t that encoding/json decodes
// into, embedded structs flattened; a field with tag options (",string")
// is left out.
func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for _, f := range allJSONFields(t) {
		if f.opts == "" {
			out = append(out, f)
		}
	}
	return out
}

// plainASCII says whether s is made of bytes from '!' to '~' only, so
// that the elider's ASCII case folding is the decoder's for it.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return s != ""
}

// fieldsNamed returns the types of the fields of struct t (embedded
// structs included, as encoding/json flattens them) whose JSON name folds
// to name, whose letters are lower-case ASCII.
func fieldsNamed(t reflect.Type, name string) []reflect.Type {
	var out []reflect.Type
	for _, f := range allJSONFields(t) {
		if strings.EqualFold(f.name, name) {
			out = append(out, f.typ)
		}
	}
	return out
}

// contentFieldsOf counts the fields of struct t (embedded structs
// included, as encoding/json flattens them) whose JSON name folds to
// "content", and returns -1 when one of them is not of type Contents.
func contentFieldsOf(t reflect.Type) int {
	n := 0
	for _, typ := range fieldsNamed(t, "content") {
		if typ != reflect.TypeFor[Contents]() {
			return -1
		}
		n++
	}
	return n
}

func cutComma(s string) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == ',' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// shared checks once that the content item shape is what elide assumes:
// Content.Content is a pointer to a struct whose only field named "text"
// is a rawText.
var shared = func() (s struct{ contentOK bool }) {
	ct := reflect.TypeFor[Content]()
	f, ok := ct.FieldByName("Content")
	if !ok || f.Type.Kind() != reflect.Pointer || f.Type.Elem().Kind() != reflect.Struct {
		return s
	}
	inner := f.Type.Elem()
	texts := 0
	for i := range inner.NumField() {
		g := inner.Field(i)
		name, _, _ := cutComma(g.Tag.Get("json"))
		if name == "" {
			name = g.Name
		}
		if strings.EqualFold(name, "text") {
			if g.Type != reflect.TypeFor[rawText]() {
				return s
			}
			texts++
		}
	}
	s.contentOK = texts == 1
	return s
}()

// elidedDecoder holds the options of an elided decode: the unmarshalers
// that put the values of lits back where the decoder meets them. They are
// made once for each pooled elidedDecoder, not for every frame (some 40
// allocations).
type elidedDecoder struct {
	lits []jsonlit.Lit
	opts jsonv2.Options
}

var elidedDecoders = sync.Pool{New: func() any {
	e := new(elidedDecoder)
	e.opts = jsonlit.OnePass(jsonv2.WithUnmarshalers(jsonv2.JoinUnmarshalers(
		jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, r *rawText) error {
			val, err := dec.ReadValue()
			if err != nil {
				return err
			}
			if l := e.elided(dec, val, false); l != nil {
				*r = rawText{lit: l.Raw, text: l.Text, decoded: !l.Lazy}
				return nil
			}
			return r.UnmarshalJSON(val)
		}),
		jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, r *rawBytes) error {
			val, err := dec.ReadValue()
			if err != nil {
				return err
			}
			if l := e.elided(dec, val, true); l != nil {
				*r = rawBytes{B: l.Bytes, Set: true}
				return nil
			}
			return r.UnmarshalJSON(val)
		}))))
	return e
}}

// elided finds the elided value that ends where the decoder is, when the
// value it read (val) is the "" or [] that stands for one.
func (e *elidedDecoder) elided(dec *jsontext.Decoder, val jsontext.Value, array bool) *jsonlit.Lit {
	if end := dec.InputOffset(); len(val) == 2 {
		for i := range e.lits {
			if e.lits[i].End == end && (e.lits[i].Bytes != nil) == array {
				return &e.lits[i]
			}
		}
	}
	return nil
}

// decodeElided decodes msg into *v as jsonlit.Decode does, eliding its
// content texts (when content says so) and the other members named by
// members (elidedMembers: lazy texts and byte arrays) when that pays
// (jsonlit.ElideMembers, whose memo keeps what it learns under scope).
// Each elided value is put back into the rawText or rawBytes the decoder
// reads where its "" or [] stands in the light frame: a content text
// decoded, a lazy text as its literal, validated, unquoted only when a
// dialect reads it: jsonlit.FastDecode hands it over (TakeLit), and where
// that fast pass says no, the one-pass decoder's unmarshalers
// (elidedDecoders) do. Nothing about how a frame reads changes:
// TestElidedDecodeIsEncodingJSON and FuzzElidedDecode hold the elided
// decode to encoding/json's on every recorded frame with every dialect,
// with every such value elided.
//
// The content texts of the shared ToolCall shape are elided only for a
// dialect whose update type maps the member `content` to nothing but
// ToolCall.Content (elisionSafe), and the other members only where they
// reach a rawText or rawBytes (elidedMembers): the elided value must
// reach a field type that resolves it. It returns the light frame it
// decoded and the values it took out of it (the decoded texts each valid
// UTF-8: see markChecked); nil and none when it elided nothing or read
// the frame itself. When jsonlit's fast pass decoded the frame it read
// (fast), marked is where that pass found the members marks names.
func decodeElided[T any](msg []byte, v *T, content bool, members []jsonlit.Member, scope string, marks *jsonlit.Marks) (light []byte, lits []jsonlit.Lit, marked jsonlit.Marked, fast bool, err error) {
	if jsonlit.EncodingJSONOnly() {
		return nil, nil, marked, false, jsonlit.Decode(msg, v)
	}
	light, lits = jsonlit.ElideMembers(msg, content, members, scope)
	if len(lits) == 0 {
		marked, fast, err = jsonlit.DecodeMarked(msg, v, marks)
		return nil, nil, marked, fast, err
	}
	if fast, marked = jsonlit.FastDecodeMarked(light, v, lits, marks); fast {
		return light, lits, marked, true, nil
	}
	var zero T
	*v = zero
	e := elidedDecoders.Get().(*elidedDecoder)
	e.lits = lits
	err = jsonv2.Unmarshal(light, v, e.opts)
	e.lits = nil // let go of the frame
	elidedDecoders.Put(e)
	if err == nil {
		return light, lits, jsonlit.Marked{}, false, nil
	}
	// The one pass stopped (bad JSON, or a type error): what encoding/json
	// makes of the frame itself is the answer, as in decode.
	*v = zero
	return nil, nil, jsonlit.Marked{}, false, jsonlit.Decode(msg, v)
}

// markChecked sets Valid on every text of obs that is part of a text lits
// holds and begins and ends between two of its runes. decodeFrom makes
// every text valid UTF-8 (it writes U+FFFD for what is not), so such a
// text is valid UTF-8 and accum need not read it again to check: for a
// cumulative output that is a whole second pass over every snapshot. A
// text is found by where its bytes are (the string it is, or a part of
// it, as a dialect hands it on); a text built otherwise is left to be
// checked.
func markChecked(obs []accum.Observation, lits []jsonlit.Lit) {
	for i := range obs {
		for j := range obs[i].Texts {
			t := &obs[i].Texts[j]
			if t.Bytes != nil || t.Text == "" || t.Valid {
				continue
			}
			for k := range lits {
				if lits[k].Holds(t.Text) {
					t.Valid = true
					break
				}
			}
		}
	}
}

// readClient reads the clientCapabilities (ACP v2: capabilities) of an
// `initialize` request from the message as sent (not from an elided copy:
// every byte is kept). Once per session, so a second decode costs nothing
// that matters.
func readClient(msg []byte) (Client, error) {
	var m struct {
		Params struct {
			ClientCapabilities json.RawMessage `json:"clientCapabilities"`
			// Capabilities is ACP v2's name for them.
			Capabilities json.RawMessage `json:"capabilities"`
		} `json:"params"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		// A params or a member of another JSON type: no capabilities.
		return Client{}, fmt.Errorf("initialize params: %v; the session reads as if the client declared none", err)
	}
	if m.Params.ClientCapabilities == nil {
		return ParseClient(m.Params.Capabilities)
	}
	return ParseClient(m.Params.ClientCapabilities)
}

// The quiet updates: a scan ahead of the typed decode.

// quietFrame says whether readFrame's typed decode of msg can be skipped,
// and the sign of the frame it would give: msg is either a
// `session/update` notification whose update is of a kind no dialect
// observes (sessionUpdates; the frame is the empty Frame), or a message
// of a method readFrame does not read (methodsRead; the frame has its
// sign alone), in the plain, valid shape for which the typed decode gives
// that frame and no error. Most frames of a session are such updates
// (message and thought chunks, usage, plans, command lists), and some
// agents send as many notifications of their own methods (Grok's
// `_x.ai/...`); this one pass over them (jsonlit.FastDecode into
// quietMessage) decodes only the members that decide, skipping every
// other value without decoding it.
//
// It says true only when the message is one valid JSON object (as
// encoding/json reads it: invalid UTF-8 and repeated names of other
// members are allowed) whose `jsonrpc` is a string, null or absent, and
// whose `method` is a string that is either
//   - not empty and not one methodsRead lists, with no `params.update` or
//     one whose `sessionUpdate` is not a kind sessionUpdates lists as
//     observed (a dialect may read those, see methodUpdates), or
//   - "session/update" with no `id`, `result` or `error` (not even null),
//     and a `params` object with an `update` object whose `sessionUpdate`
//     is a string that sessionUpdates lists as observed by none.
//
// For the first, `params` and `update` must be objects or null, when
// present. A member whose name encoding/json could match to one of those
// case-insensitively but does not spell it exactly, one that comes twice,
// or one of another JSON type makes FastDecode, and so it, say no:
// readFrame then decodes the frame and its checks decide.
// TestQuietUpdateIsTheFullRead and FuzzQuietUpdate hold it to the full
// path on every recorded frame with every dialect.
func quietFrame(msg []byte) (sign string, quiet bool) {
	if noPrescan.Load() || jsonlit.EncodingJSONOnly() {
		return "", false
	}
	// A kind a dialect observes (a tool call) is read in full, whatever
	// the method: no second look for another method's name.
	if quietKind, observed := quietKindIn(msg); observed || !quietKind && !otherMethodIn(msg) {
		return "", false
	}
	m := quietMessages.Get().(*quietMessage)
	*m = quietMessage{}
	if jsonlit.FastDecode(msg, m, nil) && !m.JSONRPC.bad {
		switch {
		case m.Method.other:
			sign, quiet = m.Method.sign, !m.Params.Update.SessionUpdate.observed
		case m.Method.update:
			quiet = !m.ID.set && !m.Result.set && !m.Error.set && m.Params.Update.SessionUpdate.quiet
		}
	}
	quietMessages.Put(m)
	return sign, quiet
}

// quietMessage is what quietFrame reads of a message: the envelope,
// every member of message[U] that is not in params (so that one of them
// present is seen), and the update's kind. Its types read what decides
// without allocating.
type quietMessage struct {
	JSONRPC quietString `json:"jsonrpc"`
	ID      present     `json:"id"`
	Method  quietMethod `json:"method"`
	Params  struct {
		Update struct {
			SessionUpdate quietKind `json:"sessionUpdate"`
		} `json:"update"`
	} `json:"params"`
	Result present `json:"result"`
	Error  present `json:"error"`
}

var quietMessages = sync.Pool{New: func() any { return new(quietMessage) }}

// present says a member is there, even as null.
type present struct{ set bool }

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (p *present) UnmarshalJSON([]byte) error { p.set = true; return nil }

// quietString notes a jsonrpc value that is neither "2.0" nor null.
type quietString struct{ bad bool }

// UnmarshalJSON implements json.Unmarshaler; it never fails. A string
// but "2.0" (spelled plainly) is bad too: the full path names it.
func (q *quietString) UnmarshalJSON(b []byte) error {
	q.bad = !isNull(b) && string(b) != `"2.0"`
	return nil
}

// quietMethod says the method is "session/update", or a method
// readFrame does not read (other) and the sign it reads it as.
type quietMethod struct {
	update, other bool
	sign          string
}

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (q *quietMethod) UnmarshalJSON(b []byte) error {
	*q = quietMethod{}
	if len(b) < 2 || b[0] != '"' {
		return nil // null or another type: the full path decides
	}
	name := b[1 : len(b)-1]
	if bytes.IndexByte(name, '\\') >= 0 || !utf8.Valid(name) {
		s, ok := jsonlit.Unquote(b) // as the full path reads it
		if !ok {
			return nil
		}
		name = []byte(s)
	}
	q.update = string(name) == "session/update"
	if len(name) > 0 && !methodsRead[string(name)] {
		q.other, q.sign = true, signOfMethod(string(name))
	}
	return nil
}

// quietKind says the kind is a string sessionUpdates lists as observed
// by none (quiet) or by some dialect (observed).
type quietKind struct{ quiet, observed bool }

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (q *quietKind) UnmarshalJSON(b []byte) error {
	*q = quietKind{}
	if len(b) < 2 || b[0] != '"' {
		return nil
	}
	kind := b[1 : len(b)-1]
	if bytes.IndexByte(kind, '\\') >= 0 {
		s, ok := jsonlit.Unquote(b)
		if !ok {
			return nil
		}
		kind = []byte(s)
	}
	observed, known := sessionUpdates[string(kind)]
	q.quiet, q.observed = known && !observed, observed
	return nil
}

// quietKindIn is the cheap first look of quietFrame for a quiet update,
// so that a frame it does not skip (a tool call, a response) costs a
// short byte search rather than a second scan: it says whether the first
// `"sessionUpdate":"` in the first quietLookBytes of msg, wherever it
// stands, is followed by a kind declared quiet, or by one a dialect
// observes. It decides nothing else: the pass that follows reads the
// frame's own members, and a frame it sends to the full path (observed)
// is read there as quietFrame would have read it. Only the head is
// searched because a tool call's sessionUpdate may come after its big
// members (claude-code-acp sends _meta and rawOutput first), and a search
// through them cost as much as half a scan; every recorded quiet update
// has its sessionUpdate in its first 130 bytes, and one that has it later
// is read by the full path.
func quietKindIn(msg []byte) (quiet, observed bool) {
	head := msg[:min(len(msg), quietLookBytes)]
	// The search is for the name's tail, `Update":"`, whose first byte
	// is rare in a frame, and then for `"session` before it: a search
	// for the whole name starts at every '"' of the head, which cost
	// 5.8 times as much over the recorded frames.
	for from := len(sessionName); from <= len(head); {
		j := bytes.Index(head[from:], updateName)
		if j < 0 {
			return false, false
		}
		j += from
		if string(head[j-len(sessionName):j]) != sessionName {
			from = j + 1
			continue
		}
		rest := msg[j+len(updateName):]
		k := bytes.IndexByte(rest, '"')
		if k < 0 {
			return false, false
		}
		observed, known := sessionUpdates[string(rest[:k])]
		return known && !observed, observed
	}
	return false, false
}

// otherMethodIn is quietFrame's cheap first look for a message of
// another method: the first `"method":"` in the first quietLookBytes of
// msg is followed by a name without an escape that is not empty and that
// methodsRead does not list. As with quietKindIn, it decides nothing
// else: a member of that name nested before the message's own is read
// as if it were the method, and the pass that follows says no.
func otherMethodIn(msg []byte) bool {
	head := msg[:min(len(msg), quietLookBytes)]
	i := bytes.Index(head, methodMember)
	if i < 0 {
		return false
	}
	rest := msg[i+len(methodMember):]
	k := bytes.IndexByte(rest, '"')
	return k > 0 && !methodsRead[string(rest[:k])] && bytes.IndexByte(rest[:k], '\\') < 0
}

var methodMember = []byte(`"method":"`)

// sessionName and updateName spell `"sessionUpdate":"` as quietKindIn
// looks for it.
var (
	sessionName = `"session`
	updateName  = []byte(`Update":"`)
)

const quietLookBytes = 1024

// noMarks makes noticeUnrecognized find what it walks itself, for tests
// that compare with the marks of the fast decode.
var noMarks atomic.Bool

// noPrescan turns quietFrame off, for tests that compare with the full
// path.
var noPrescan atomic.Bool

func (Code) wantedJSON() wantType { return wantCode }

// updateIDType is the JSON type of a session/update's
// params.update.toolCallId when it is sent and is neither a string nor
// null (which read as no id): "number", "boolean", "object" or "array";
// else "". Only a refused frame asks.
func updateIDType(msg []byte) string {
	id := valueAt(msg, "PARAMS", "UPDATE", "TOOLCALLID")
	if len(id) == 0 || id[0] == '"' || id[0] == 'n' {
		return ""
	}
	if t := jsonTypeOf(id); t != "bool" {
		return t
	}
	return "boolean"
}

// endsWordedFailed is implemented by a dialect's update type (its
// pointer, P of readFrame) when its agent writes its words about how a
// command ended (an exit header or line, a timeout or kill notice) only
// on a call it ends `failed`, and reads words like them under `completed`
// as the command's output. An update with an unknown status word (see
// unknownStatus) is read under `failed` by such a dialect, under
// `completed`, the status of a command that ran whatever its exit, by
// any other: an agent that ends `failed` only a call whose command did not
// run writes its own error there, not output.
type endsWordedFailed interface {
	endsWordedFailed()
}

// unknownStatus says whether update tc, a `tool_call` that opens its
// call as much as an update, has a status that is none of ACP's: a word a build may send for an end
// ACP has no word for ("timed_out", "killed", "errored"), with the
// command's output and exit code beside it. The word ends no call, but
// what the frame carries is read as its dialect reads a final's, then
// made live (notEnded): otherwise the dialect reads it as a live frame,
// and a final's output and exit code (its headers, trailers and notices,
// which a live frame has not) go unread or are read as output.
func unknownStatus(tc *ToolCall) bool {
	return tc.Status != nil && strings.TrimSpace(*tc.Status) != "" && ReadStatus(tc.Status) == accum.StatusNone
}

// notEnded makes the observations of an update with an unknown status
// word (read as a final, see unknownStatus) say what the frame says
// without ending the call: no status, a final aggregate as a snapshot of
// the live text, no proof of success and no sign read from the status
// alone. The exit code the frame states stays the command's, but for a 0
// that live, the observations of the frame read as a live one, hold as
// a placeholder (the frame may be live, and such a 0 what its agent
// fills in while the command runs).
//
// The words about the command a dialect reads only on a `failed` final
// are the agent's only if the call's next known final says failed, or
// none comes (accum.Observation.WordsIfFailed): obs were read under
// `failed` when failed says so, else under `completed`, and other under
// the other. Read under `failed`, a text whose words the dialect removed
// is held so. Read under `completed`, a text the failed reading takes
// words from (a cancel or rejection notice, a timeout, a signal, an exit
// line) is made the same: the rest the failed reading keeps, the text
// whole beside it (accum.Text.Whole), and the evidence it read (Worded).
// A failure read under `failed` with no words to say so (an empty text
// the dialect takes for its agent's message) came from the status, which
// is unknown: it is dropped.
func notEnded(obs, live, other []accum.Observation, failed bool) {
	for i := range obs {
		o := &obs[i]
		o.Status = accum.StatusNone
		o.Succeeded, o.ExitWordsOutput = false, false
		if o.Opens {
			o.Texts = notNamed(o)
		}
		for j := range o.Texts {
			if o.Texts[j].Kind == accum.Final {
				o.Texts[j].Kind = accum.Snapshot
			}
			if failed && o.Texts[j].Whole != "" {
				o.WordsIfFailed = true
			}
		}
		if e := o.Exit; e != nil && e.Code == 0 {
			for _, l := range live {
				if l.ToolCallID == o.ToolCallID && l.Exit != nil && l.Exit.Placeholder && l.Exit.Code == 0 {
					x := *e
					x.Placeholder = true
					o.Exit = &x
				}
			}
		}
		if i < len(other) && other[i].ToolCallID == o.ToolCallID {
			c, f := o, &other[i]
			if failed {
				c, f = &other[i], o
			}
			holdFailedWords(o, c, f, !failed)
			if failed && o.Failed && o.FailNotice == "" && !c.Failed {
				// A failure read from the status alone, which is not
				// `failed` but a word none of ACP's.
				o.Failed = false
			}
		}
	}
}

// notNamed returns the texts of o, an opening read as a final (see
// notEnded), but for a whole text that is the description or the command
// the frame names: agents put those in a live opening's content, which a
// final's reading would take for output.
func notNamed(o *accum.Observation) []accum.Text {
	var kept []accum.Text
	for _, t := range o.Texts {
		if t.Bytes == nil && t.Kind != accum.Delta {
			if s := strings.TrimSpace(t.Text); s != "" && (s == strings.TrimSpace(o.Description) || s == strings.TrimSpace(o.Command)) {
				continue
			}
		}
		kept = append(kept, t)
	}
	return kept
}

// holdFailedWords makes o (an observation of an update with an unknown
// status word, c its reading under `completed`, f under `failed`, o being
// one of them) hold the words f reads as the agent's where c reads them
// as output (see notEnded): only for one whole text of the combined
// stream, which f either leaves a rest of or drops, and words that say a
// cancel, a timeout, a signal or an exit code, which a call can hold
// (accum.Worded): an agent's error message f reads as a failure too
// (Worded.Failed), but not a failure f reads with no words, from its
// status alone (see notEnded). When o was read under
// `completed` (foreign: f is how the dialect reads a final its agent
// sends for a command that did not run, which may misread another
// shape), only a cancel or rejection notice that is the whole text, as f
// quotes it, is held, and only when c states no exit code (a command
// that exited ran: its text is output).
func holdFailedWords(o, c, f *accum.Observation, foreign bool) {
	ct, ok := wholeCombined(c)
	if !ok || ct.Whole != "" {
		return
	}
	ft, ok := wholeCombined(f)
	if !ok && len(f.Texts) > 0 || ft.Whole != "" {
		return // f keeps its own words, or texts of another shape
	}
	var w accum.Worded
	w.Cancelled = f.Cancelled && !c.Cancelled
	w.TimedOut = f.TimedOut && !c.TimedOut
	w.Signal = f.Signal != "" && c.Signal == ""
	w.Exit = f.Exit != nil && f.Exit.Source == accum.ExitText && c.Exit == nil
	w.Failed = f.Failed && !c.Failed
	if w.Failed && f.FailNotice == "" {
		return // a failure f read from nothing but its status
	}
	if w == (accum.Worded{}) || ft.Text == ct.Text {
		return
	}
	if foreign && (w != accum.Worded{Cancelled: true} || ft.Text != "" || strings.TrimSpace(ct.Text) != f.CancelNotice ||
		c.Exit != nil && !c.Exit.Placeholder) {
		return
	}
	t := ct
	t.Kind, t.Text, t.Whole, t.Valid = accum.Snapshot, ft.Text, ct.Text, false
	o.Texts = []accum.Text{t}
	if w.Cancelled {
		o.Cancelled, o.CancelNotice = true, f.CancelNotice
	}
	if w.TimedOut {
		o.TimedOut = true
	}
	if w.Signal {
		o.Signal = f.Signal
	}
	if w.Exit {
		o.Exit = f.Exit
	}
	if w.Failed {
		o.Failed, o.FailNotice = true, f.FailNotice
	}
	o.Worded = w
	o.WordsIfFailed = true
}

// wholeCombined returns o's one text when it has exactly one, a whole
// text (a Snapshot or a Final, not bytes) of the combined stream.
func wholeCombined(o *accum.Observation) (accum.Text, bool) {
	if len(o.Texts) != 1 {
		return accum.Text{}, false
	}
	t := o.Texts[0]
	if t.Stream != accum.Combined || t.Bytes != nil || t.Kind != accum.Snapshot && t.Kind != accum.Final {
		return accum.Text{}, false
	}
	return t, true
}

// A permission ask's options, read in place.

// MaxAskRejects bounds the reject options a permission ask is read with
// (ACP's kinds give an ask two: reject_once and reject_always).
const MaxAskRejects = 16

// askOptions are the `options` of a session/request_permission as Read
// keeps them: the optionIds of the first MaxAskRejects distinct options
// whose kind starts with "reject", and a count of the reject options
// after them. A frame may hold hundreds of thousands of options (up to
// the message limit); they are walked in the bytes the decoder validated,
// never decoded into a list: an optionId is unquoted only when it is
// kept, a kind only when it is escaped.
//
// What is kept is what encoding/json's decode of the options into
// []struct{OptionID, Kind string} gives (member names matched
// case-insensitively, the last of a repeated member winning, null
// leaving a field as it was, a member or an element of another JSON type
// left as it was), filtered and bounded as above; bad is the first type
// error that decode meets, worded as it words it (TestAskOptionsAreEncodingJSON
// and FuzzAskOptions hold it to that). A repeated `options` member reads
// as the last one alone, where encoding/json would merge it into the
// elements of the one before.
type askOptions struct {
	reject []string
	unread int
	// bad is the first type error, its Field relative to params
	// ("options.3.kind"); nil when there is none.
	bad *json.UnmarshalTypeError
}

// askOption is the Go type of one option in encoding/json's decode, for
// the type errors that name it.
type askOption struct {
	OptionID string `json:"optionId"`
	Kind     string `json:"kind"`
}

// UnmarshalJSON implements json.Unmarshaler; it never fails. b is a
// valid JSON value, as every decoder hands it over.
func (a *askOptions) UnmarshalJSON(b []byte) error {
	*a = askOptions{}
	b = bytes.TrimSpace(b)
	switch {
	case isNull(b):
		return nil
	case b[0] != '[':
		a.typeError(b, "options", reflect.TypeFor[[]askOption]())
		return nil
	}
	i := 0
	jsonlit.EachElement(b, func(el []byte) bool {
		a.option(el, i)
		i++
		return true
	})
	return nil
}

// UnmarshalJSONFast implements jsonlit.FastUnmarshaler: UnmarshalJSON
// in the fast decoder's pass, each option's members read where the
// decoder validates them rather than walked again.
func (a *askOptions) UnmarshalJSONFast(d *jsonlit.Dec) bool {
	*a = askOptions{}
	switch d.Kind() {
	case '[':
	case 'n':
		_, ok := d.Value()
		return ok
	default:
		b, ok := d.Value()
		if ok {
			a.typeError(b, "options", reflect.TypeFor[[]askOption]())
		}
		return ok
	}
	next := 0 // the index of the option the decoder is at
	return d.Elements(func() bool {
		i := next
		next++
		if d.Kind() != '{' {
			el, ok := d.Value()
			if ok {
				a.option(el, i)
			}
			return ok
		}
		var o optionLits
		if !d.Members(func(key []byte) bool {
			val, ok := d.Value()
			if ok {
				a.member(&o, key, val, i)
			}
			return ok
		}) {
			return false
		}
		a.keep(o)
		return true
	})
}

// optionLits are the literals of an option's optionId and kind that its
// members last set, nil for none.
type optionLits struct{ id, kind []byte }

// option reads the i-th option, el.
func (a *askOptions) option(el []byte, i int) {
	switch el[0] {
	case 'n':
		return
	case '{':
	default:
		a.typeError(el, "options."+strconv.Itoa(i), reflect.TypeFor[askOption]())
		return
	}
	var o optionLits
	jsonlit.EachMemberLit(el, func(key, val []byte) { a.member(&o, key, val, i) })
	a.keep(o)
}

// member reads one member, key: val, of the i-th option into o.
func (a *askOptions) member(o *optionLits, key, val []byte, i int) {
	var to *[]byte
	switch {
	case jsonlit.KeyIs(key, "OPTIONID"):
		to = &o.id
	case jsonlit.KeyIs(key, "KIND"):
		to = &o.kind
	default:
		return
	}
	switch val[0] {
	case '"':
		*to = val
	case 'n':
	default:
		if a.bad == nil {
			a.typeError(val, "options."+strconv.Itoa(i)+"."+keyText(key), reflect.TypeFor[string]())
		}
	}
}

// keep keeps the optionId of an option read into o when its kind is a
// reject one.
func (a *askOptions) keep(o optionLits) {
	id, kind := o.id, o.kind
	if kind == nil || !hasRejectPrefix(kind) {
		return
	}
	if id == nil {
		id = []byte(`""`)
	}
	// An id without an escape, in valid UTF-8, is its own bytes: it is
	// compared as they are, and copied only to be kept.
	in := id[1 : len(id)-1]
	plain := bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in)
	text := ""
	if !plain {
		text, _ = jsonlit.Unquote(id)
	}
	for _, k := range a.reject {
		if plain && string(in) == k || !plain && text == k {
			return
		}
	}
	if len(a.reject) == MaxAskRejects {
		a.unread++
		return
	}
	if plain {
		text = string(in)
	}
	a.reject = append(a.reject, text)
}

// hasRejectPrefix says whether the string literal lit decodes to a text
// that starts with "reject". Without an escape its bytes say it: an
// invalid byte decodes to U+FFFD, which is no ASCII letter.
func hasRejectPrefix(lit []byte) bool {
	if bytes.IndexByte(lit, '\\') < 0 {
		return bytes.HasPrefix(lit[1:], []byte("reject"))
	}
	s, _ := jsonlit.Unquote(lit)
	return strings.HasPrefix(s, "reject")
}

// typeError notes the first type error: a value val where a Go value of
// type t was expected, at field.
func (a *askOptions) typeError(val []byte, field string, t reflect.Type) {
	if a.bad == nil {
		a.bad = &json.UnmarshalTypeError{Value: jsonTypeOf(val), Type: t, Field: field}
	}
}

// jsonTypeOf names the JSON type of the valid value val as encoding/json's
// type errors do.
func jsonTypeOf(val []byte) string {
	switch val[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	}
	return "number"
}

// strictAsk returns the first type error of a permission ask's strict
// layer in params (not null): params not an object, a toolCall that is
// no object or whose toolCallId is no string, options as askOptions
// reads them. It is nil when there is none.
func strictAsk(params []byte) *json.UnmarshalTypeError {
	params = bytes.TrimSpace(params)
	if params[0] != '{' {
		return &json.UnmarshalTypeError{Value: jsonTypeOf(params), Type: reflect.TypeFor[permissionEnvelope]()}
	}
	var first *json.UnmarshalTypeError
	jsonlit.EachMemberLit(params, func(key, val []byte) {
		if first != nil {
			return
		}
		switch jsonlit.FoldKey(key) {
		case "TOOLCALL":
			var tc struct {
				ToolCallID string `json:"toolCallId"`
			}
			var te *json.UnmarshalTypeError
			if errors.As(json.Unmarshal(val, &tc), &te) {
				te.Field = strings.TrimSuffix(keyText(key)+"."+te.Field, ".")
				first = te
			}
		case "OPTIONS":
			var o askOptions
			o.UnmarshalJSON(val)
			if first = o.bad; first != nil {
				// Named as the frame spells it.
				first.Field = keyText(key) + strings.TrimPrefix(first.Field, "options")
			}
		}
	})
	return first
}
