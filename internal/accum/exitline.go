package accum

import (
	"bytes"
	"regexp"
	"strconv"
)

// An exit line is a short line that reads like a tool's words about how a
// command ended rather than like the command's output: "Exit code 3",
// "exit status 3", "[Command exited with status 3]", "Return code: 3",
// "<shellId: 1 completed with exit status 3>". Dialects take their
// agent's exit lines out of output and read the exit from them; one left
// in a call's output (or in a notice) is the sign that a build reworded
// it, so the exit it gave is lost or the words are now output. It is a
// report only (UnrecognizedResult): nothing of the call changes.

// exitLinePattern is an exit line, trimmed: at most a few words before it
// (a bracket, "Command", "shellId: 1 completed with"), exit, exited,
// return or returned, then code, status or value (optionally "with"; as
// one word too: "ExitCode", "exit_code", "exit-status"), a colon or an
// equals sign, a number, a closing bracket or two ("<shellId: 1 completed
// with [exit: 3]>"); or "rc" with its colon or equals sign ("rc=3"). A
// plain "exit status N" is told apart (plainExitStatus).
var exitLinePattern = regexp.MustCompile(`(?i)^[\[<(]?.{0,40}?\b(?:(?:exit(?:ed)?|return(?:ed)?)(?:[\s_-]*(?:with\s+)?(?:code|status|value))?\s*[:=]?|rc\s*[:=])\s*(-?\d{1,10})\s*[\]>)]{0,2}\.?$`)

// plainExitStatus is "exit status N" alone: Go's os/exec words a failed
// program so, and go run, go test and every Go program that shells out
// print it at the end of their own output.
var plainExitStatus = regexp.MustCompile(`(?i)^exit status:?\s*-?\d{1,10}$`)

// maxExitLine bounds the line looked at: an exit line is short.
const maxExitLine = 96

// ExitLineIn says whether text's first or last line (not counting blank
// ones at its ends) is an exit line. head says the text is whole from its
// start (a text whose head was dropped has no first line to look at);
// exit is the call's exit code, nil when it has none. With an exit code,
// a line that names another code is the command's own output (an agent
// restates the code it reports, and a command may well print "Exit code
// 3" and exit 0), and a plain "exit status N" counts only as the first of
// several lines (where a tool puts its header), never as the last (where
// a Go program prints it). It matches two lines; finding them reads up
// to the first newline and back to the last one.
func ExitLineIn(text []byte, head bool, exit *int32) bool {
	exitKnown := exit != nil
	text = bytes.TrimRight(text, " \t\r\n")
	if head {
		text = bytes.TrimLeft(text, " \t\r\n")
	}
	if len(text) == 0 {
		return false
	}
	first, last := text, text
	several := false
	if i := bytes.IndexByte(text, '\n'); i >= 0 {
		first, several = text[:i], true
		last = text[bytes.LastIndexByte(text, '\n')+1:]
	}
	if head && exitLine(first, !exitKnown || several, exit) {
		return true
	}
	return (several || !head) && exitLine(last, !exitKnown, exit)
}

// exitLine says whether line is an exit line; plain says whether a plain
// "exit status N" counts, exit is the call's exit code (nil: none), which
// the line must name when there is one.
func exitLine(line []byte, plain bool, exit *int32) bool {
	line = bytes.TrimSpace(line)
	if len(line) < 4 || len(line) > maxExitLine || !endsAsExitLine(line) || !bytes.ContainsAny(line, "tTcC") {
		return false
	}
	m := exitLinePattern.FindSubmatch(line)
	if m == nil {
		return false
	}
	if exit != nil {
		if n, err := strconv.ParseInt(string(m[1]), 10, 64); err != nil || n != int64(*exit) {
			return false
		}
	}
	return plain || !plainExitStatus.Match(line)
}

// endsAsExitLine says whether line ends as every match of
// exitLinePattern does (`\d\s*[\]>)]{0,2}\.?$`): a digit, then spaces,
// at most two closing brackets and a period, each optional. The three
// sets are disjoint, so reading them back from the end is the pattern's
// only reading. Most lines of output end otherwise, and the regexp (about
// a µs a line) is not run on them.
func endsAsExitLine(line []byte) bool {
	i := len(line)
	if i > 0 && line[i-1] == '.' {
		i--
	}
	for n := 0; n < 2 && i > 0 && (line[i-1] == ']' || line[i-1] == '>' || line[i-1] == ')'); n++ {
		i--
	}
	for i > 0 && (line[i-1] == ' ' || line[i-1] == '\t' || line[i-1] == '\n' || line[i-1] == '\f' || line[i-1] == '\r') {
		i-- // the regexp's \s
	}
	return i > 0 && '0' <= line[i-1] && line[i-1] <= '9'
}

// ExitLineHeld says whether a text the call holds has an exit line as its
// first or last line (ExitLineIn). It is meant for a call that has just
// ended: it looks at the first and last line of each stream it holds.
func (c *Call) ExitLineHeld() bool {
	var code *int32
	if c.exit != nil {
		code = &c.exit.Code
	}
	for _, b := range c.streams {
		if b == nil || !b.seen {
			continue
		}
		held := b.held()
		if ExitLineIn(held, b.total == int64(len(held)), code) {
			return true
		}
	}
	return false
}
