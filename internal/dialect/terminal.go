package dialect

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/acpnorm/acpnorm/internal/jsonlit"
)

// This file reads the client-owned terminals of ACP v1 (`terminal/*`), the
// same way for every dialect: they are the protocol's own way of running a
// command, not a vendor's. The agent asks the client to run the command
// (`terminal/create`) and to report on it (`terminal/output`,
// `terminal/wait_for_exit`), to kill it (`terminal/kill`) and to forget it
// (`terminal/release`); the client answers each request. Read sees one
// message at a time, so it reports the request (Frame.Terminal) and, for
// every response that could answer one, what the response says
// (Frame.Response); the session matches the two by JSON-RPC id.

// Terminal methods, as TerminalRequest.Method names them.
const (
	MethodTerminalCreate  = "terminal/create"
	MethodTerminalOutput  = "terminal/output"
	MethodTerminalWait    = "terminal/wait_for_exit"
	MethodTerminalKill    = "terminal/kill"
	MethodTerminalRelease = "terminal/release"
)

// TerminalRequest is an agent's request about a client-owned terminal.
type TerminalRequest struct {
	// RequestID is the JSON-RPC id, as raw JSON text ("" for a
	// notification, which nobody answers).
	RequestID string
	// Method is one of the Terminal constants.
	Method string
	// TerminalID names the terminal ("" for terminal/create, whose answer
	// names it).
	TerminalID string
	// Command is, for terminal/create, the command line that runs:
	// `command` alone when there are no `args` (agents send a whole shell
	// line there), else `command` and `args` joined with spaces, each word
	// quoted for a POSIX shell where it needs it.
	Command string
	// Cwd is, for terminal/create, its absolute `cwd` ("" when absent or
	// null: the session's).
	Cwd string
}

// Response is what a JSON-RPC response says that can answer a
// client-terminal request; the session knows which request it answers.
// Read sets Frame.Response only for an error response or a result object
// with one of the members below.
type Response struct {
	// RequestID is the JSON-RPC id, as raw JSON text.
	RequestID string
	// Error says it is an error response: the client could not do what was
	// asked (for terminal/create: the command never started).
	Error bool
	// TerminalID is the `terminalId` of a terminal/create result.
	TerminalID string
	// Output is the `output` of a terminal/output result: everything the
	// client kept so far (a snapshot); HasOutput says it was a string.
	Output    string
	HasOutput bool
	// Truncated is the result's `truncated`: the client cut the output
	// from its beginning.
	Truncated bool
	// ExitStatus is a terminal/output result's `exitStatus`: the command
	// has exited.
	ExitStatus *TerminalExit
	// Exit is a terminal/wait_for_exit result's own `exitCode` and
	// `signal`; HasExit says one of them is a member.
	Exit    TerminalExit
	HasExit bool
}

// TerminalExit is a client terminal's exit status: the exit code (a
// uint32, or null when a signal ended the command) and the signal name.
type TerminalExit struct {
	Code Code
	// Signal is the signal's name ("SIGTERM"); OddSignal says a signal was
	// reported that cannot be named (the command did not succeed).
	Signal    string
	OddSignal bool
}

// Observe adds the exit status to o: a known code as exit evidence of
// the strongest source (accum.ExitClient: the client ran the command and
// saw it end), and the signal.
func (e *TerminalExit) Observe(o *accum.Observation) {
	takeExit(o, e.Code.Exit(accum.ExitClient, true), "client terminal exit status")
	Signal{Name: e.Signal, Odd: e.OddSignal}.apply(o)
}

// terminalParams are the params of a terminal request, read leniently: a
// member of another JSON type reads as absent.
type terminalParams struct {
	TerminalID Str      `json:"terminalId"`
	Command    Str      `json:"command"`
	Args       wordList `json:"args"`
	// cwd is the message's own params.cwd, which session/new shares.
}

// wordList is the `args` of terminal/create: strings only; an element of
// another type is skipped.
type wordList []string

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (w *wordList) UnmarshalJSON(b []byte) error {
	*w = nil
	jsonlit.EachElement(b, func(val []byte) bool {
		var s Str
		if s.UnmarshalJSON(val); s.Set {
			*w = append(*w, s.S)
		}
		return true
	})
	return nil
}

// readTerminalRequest reads a terminal request's params.
func readTerminalRequest(id, method string, p *terminalParams, cwd string) *TerminalRequest {
	t := &TerminalRequest{RequestID: id, Method: method, TerminalID: p.TerminalID.S}
	if method == MethodTerminalCreate {
		t.Command = p.Command.S
		if len(p.Args) > 0 {
			words := make([]string, 0, len(p.Args)+1)
			words = append(words, quoteWord(p.Command.S))
			for _, a := range p.Args {
				words = append(words, quoteWord(a))
			}
			t.Command = strings.Join(words, " ")
		}
		t.Cwd = cwd
	}
	return t
}

// terminalResult are the members of a response's result that terminal
// methods use, embedded in responseResult. Every one is read leniently
// (another JSON type reads as absent), so that none can fail a frame's
// strict check.
type terminalResult struct {
	TerminalID Str          `json:"terminalId"`
	Output     Str          `json:"output"`
	Truncated  lenientBool  `json:"truncated"`
	ExitStatus exitStatusIn `json:"exitStatus"`
	ExitCode   presentCode  `json:"exitCode"`
	Signal     presentSig   `json:"signal"`
}

// response returns what the result says for a terminal request, or nil
// when it has none of the members.
func (t *terminalResult) response(id string) *Response {
	r := &Response{RequestID: id, TerminalID: t.TerminalID.S, Output: t.Output.S, HasOutput: t.Output.Set, Truncated: t.Truncated.True}
	if t.ExitStatus.Set {
		e := t.ExitStatus.E
		r.ExitStatus = &e
	}
	if t.ExitCode.Set || t.Signal.Set {
		r.HasExit = true
		r.Exit = TerminalExit{Code: t.ExitCode.C, Signal: t.Signal.S.Name, OddSignal: t.Signal.S.Odd}
	}
	if r.TerminalID == "" && !r.HasOutput && r.ExitStatus == nil && !r.HasExit {
		return nil
	}
	return r
}

// lenientBool is a boolean member; any other JSON type reads as false.
type lenientBool struct{ True bool }

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (l *lenientBool) UnmarshalJSON(b []byte) error {
	l.True = bytes.Equal(bytes.TrimSpace(b), []byte("true"))
	return nil
}

// presentCode is an exit code member and whether the member was there
// (even as null).
type presentCode struct {
	C   Code
	Set bool
}

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (p *presentCode) UnmarshalJSON(b []byte) error {
	*p = presentCode{C: terminalCode(b), Set: true}
	return nil
}

// presentSig is a signal member and whether the member was there (even as
// null).
type presentSig struct {
	S   Signal
	Set bool
}

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (p *presentSig) UnmarshalJSON(b []byte) error {
	*p = presentSig{S: readSignal(b), Set: true}
	return nil
}

// exitStatusIn is an `exitStatus` member: an object, else absent.
type exitStatusIn struct {
	E   TerminalExit
	Set bool
}

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (x *exitStatusIn) UnmarshalJSON(b []byte) error {
	x.E, x.Set = readTerminalExit(b)
	return nil
}

// terminalCode reads the exit code of a client terminal, which ACP types
// as a uint32: a value past int32's range is its 32 bits read signed, as
// Windows gives a crash status (3221225477, 0xC0000005, is -1073741819).
func terminalCode(b []byte) Code {
	c := ParseCode(b)
	if !c.Known {
		if n, err := strconv.ParseUint(string(bytes.Trim(b, blank)), 10, 32); err == nil {
			c = Code{Value: int32(uint32(n)), Known: true}
		}
	}
	return c
}

// readTerminalExit reads an `exitStatus` object; anything else is absent.
func readTerminalExit(b []byte) (TerminalExit, bool) {
	var e TerminalExit
	ok := false
	jsonlit.EachMember(b, func(key string, val []byte) {
		ok = true
		switch key {
		case "EXITCODE":
			e.Code = terminalCode(val)
		case "SIGNAL":
			sig := readSignal(val)
			e.Signal, e.OddSignal = sig.Name, sig.Odd
		}
	})
	if !ok && bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
		ok = true // {}: exited, saying nothing more
	}
	return e, ok
}
