package dialect

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/acpnorm/acpnorm/internal/jsonlit"
)

// This file reads what a structured result says about HOW a command ended
// beside its exit code: a signal (a name or a number), an outcome word and
// a timed-out flag. Dialects use Signal and applyVerdict for the fields
// they know; readFrame runs contradictions over every dialect's frames as
// a safety net, so that no agent, known or not, gets a made-up success
// from an exit code of 0 that its own result contradicts.

// Signal is a signal as agents send it: a name ("SIGKILL", "KILL", "9")
// or a number (9). Null, "", "none", "(none)" and 0 read as no signal.
// Name is the normalized name ("SIGKILL"); Odd says a value was present
// that names no signal this package can spell (an object, a fraction, a
// long text): a signal was reported, but which is not known.
type Signal struct {
	Name string
	Odd  bool
}

// UnmarshalJSON implements json.Unmarshaler; it never fails. Like
// encoding/json for other fields, null leaves the value unchanged.
func (s *Signal) UnmarshalJSON(b []byte) error {
	if isNull(b) {
		return nil
	}
	*s = readSignal(b)
	return nil
}

// Reported says whether a signal was reported at all.
func (s Signal) Reported() bool { return s.Name != "" || s.Odd }

// signalToken is a signal written as a name or a number.
var signalToken = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_+-]{0,31}$|^[0-9]{1,3}$`)

// readSignal reads a signal from raw JSON.
func readSignal(b []byte) Signal {
	b = bytes.Trim(b, blank)
	if len(b) == 0 || isNull(b) {
		return Signal{}
	}
	var s string
	switch c := b[0]; {
	case c == '"':
		var ok bool
		if s, ok = jsonlit.Unquote(b); !ok {
			return Signal{Odd: true}
		}
		s = trimBlank(s)
	case c == '-' || ('0' <= c && c <= '9'):
		s = string(b)
	case c == 't' || c == 'f':
		return Signal{} // a boolean says nothing about which signal
	default:
		return Signal{Odd: true}
	}
	switch strings.ToLower(s) {
	case "", "none", "(none)", "null", "nil", "n/a", "0", "-0", "false":
		return Signal{}
	}
	// A number is a signal only when its digits say a whole number of 1
	// to 255 (see wholeDecimal); any other number (9.5, 1e-400, NaN) is
	// no signal's name.
	if n, whole := wholeDecimal(s); whole {
		switch {
		case n == 0:
			return Signal{}
		case n < 0 || n > 255:
			return Signal{Odd: true}
		}
		return Signal{Name: NormalizeSignal(strconv.Itoa(int(n)))}
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return Signal{Odd: true}
	}
	if !signalToken.MatchString(s) {
		return Signal{Odd: true}
	}
	return Signal{Name: NormalizeSignal(s)}
}

// apply records the signal in o: its name, or, for a signal that cannot
// be named, a failed verdict (a signal ended the command, so it did not
// succeed).
func (s Signal) apply(o *accum.Observation) {
	switch {
	case s.Name != "":
		o.Signal = s.Name
	case s.Odd && o.Verdict == accum.VerdictNone:
		o.Verdict = accum.VerdictFailed
	}
}

// verdictSpelling folds the separators of a verdict word to "_"; a
// Replacer is safe for concurrent use, so one serves every frame.
var verdictSpelling = strings.NewReplacer("-", "_", " ", "_")

// applyVerdict records in o an agent's word for how a command ended, in
// its common spellings: "failed" (and "error", "killed", ...) as a failed
// Verdict, "timed_out" as TimedOut, "cancelled" (and "aborted", ...) as
// Cancelled. Words of success and unknown words change nothing. It
// reports whether the word was one of those.
func applyVerdict(o *accum.Observation, word string) bool {
	if word == "" {
		return false
	}
	w := verdictSpelling.Replace(strings.ToLower(strings.TrimSpace(word)))
	switch w {
	case "failed", "failure", "fail", "error", "errored", "killed", "signaled", "signalled", "crashed":
		o.Verdict = accum.VerdictFailed
	case "timed_out", "timedout", "timeout":
		o.TimedOut = true
	case "cancelled", "canceled", "aborted", "interrupted":
		o.Cancelled = true
	default:
		return false
	}
	return true
}

// claimsSuccess reports whether o, alone, would let its call succeed: a
// real exit code of 0 or a success proof, with nothing in o against it.
func claimsSuccess(o *accum.Observation) bool {
	zero := o.Exit != nil && !o.Exit.Placeholder && o.Exit.Code == 0
	return (zero || o.Succeeded) && o.Signal == "" && !o.TimedOut && !o.Cancelled && o.Verdict == accum.VerdictNone
}

// contradictions is the safety net readFrame runs over a `session/update`
// whose observations claim success. It looks, whatever the dialect, at
// the places where agents put how a command ended: `rawOutput`,
// `rawOutput.metadata` and the result items in an array under or as
// `rawOutput` (`signal`, `outcome`, `timed_out`/`timedOut`),
// `_meta.terminal_exit.signal` and the v2 `exitStatus.signal`. What it
// finds is added to those observations, so that the core never turns
// their exit code of 0 into SUCCEEDED. msg has already been parsed
// without a syntax error, as jsonlit.EachMember requires.
func contradictions(msg []byte, obs []accum.Observation) {
	claim := false
	for i := range obs {
		claim = claim || claimsSuccess(&obs[i])
	}
	if !claim {
		return
	}
	var found accum.Observation
	worded := false // the first outcome word found is the one used
	membersAt(msg, 0, func(key []byte, b []byte, i int) int {
		if !foldsTo(key, "PARAMS") {
			return jsonlit.ValueEnd(b, i)
		}
		return membersAt(b, i, func(key []byte, b []byte, i int) int {
			if !foldsTo(key, "UPDATE") {
				return jsonlit.ValueEnd(b, i)
			}
			return membersAt(b, i, func(key []byte, b []byte, i int) int {
				e := jsonlit.ValueEnd(b, i)
				switch {
				case foldsTo(key, "RAWOUTPUT"):
					resultWords(&found, &worded, b[i:e], 0)
				case foldsTo(key, "_META"):
					jsonlit.EachMember(b[i:e], func(key string, val []byte) {
						if key == "TERMINAL_EXIT" {
							resultWords(&found, &worded, val, 1)
						}
					})
				case foldsTo(key, "EXITSTATUS"):
					resultWords(&found, &worded, b[i:e], 1)
				}
				return e
			})
		})
	})
	for i := range obs {
		if o := &obs[i]; claimsSuccess(o) {
			if found.Signal != "" {
				o.Signal = found.Signal
			}
			o.TimedOut = o.TimedOut || found.TimedOut
			o.Cancelled = o.Cancelled || found.Cancelled
			if o.Verdict == accum.VerdictNone {
				o.Verdict = found.Verdict
			}
		}
	}
}

// membersAt is jsonlit.EachMember over the object at b[i:] without
// finding each value's end before it is read: fn is handed the key
// literal and the value at b[i:] and returns the index just past the
// value, having read into it or skipped it, and membersAt returns the
// index just past the object (len(b) at most). So a walk that descends
// into a member reads its bytes once, where EachMember's ValueEnd reads
// them once more at each level. On valid JSON (the frames contradictions
// reads) it calls fn with the members EachMember would, in order.
func membersAt(b []byte, i int, fn func(key, b []byte, i int) int) int {
	i = jsonlit.SkipSpace(b, i)
	if i >= len(b) || b[i] != '{' {
		return jsonlit.ValueEnd(b, i)
	}
	i = jsonlit.SkipSpace(b, i+1)
	for i < len(b) && b[i] == '"' {
		ke := jsonlit.StringEnd(b, i)
		key := b[i:ke]
		if i = jsonlit.SkipSpace(b, ke); i >= len(b) || b[i] != ':' {
			return len(b)
		}
		i = jsonlit.SkipSpace(b, fn(key, b, jsonlit.SkipSpace(b, i+1)))
		if i >= len(b) || b[i] != ',' {
			break
		}
		i = jsonlit.SkipSpace(b, i+1)
	}
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	return len(b)
}

// foldsTo says whether jsonlit.FoldKey(lit) is name (in upper case),
// without folding a plain ASCII key through FoldKey.
func foldsTo(lit []byte, name string) bool {
	k := lit
	if len(k) >= 2 {
		k = k[1 : len(k)-1]
	}
	for _, c := range k {
		if c >= utf8.RuneSelf || c == '\\' {
			return jsonlit.FoldKey(lit) == name
		}
	}
	return upperIs(k, name)
}

// upperIs says whether the plain ASCII name k, folded to upper case, is
// upper.
func upperIs(k []byte, upper string) bool {
	if len(k) != len(upper) {
		return false
	}
	for j, c := range k {
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != upper[j] {
			return false
		}
	}
	return true
}

// resultWords reads the signal, outcome and timed-out members of one
// result object into o; depth bounds the nested objects read: the
// `metadata` object of the result, and the objects in an array that is
// the result or one of its members (an agent's result items, such as
// Copilot's `contents`; the first maxResultItems). Only the first outcome
// word counts, and none after a signal that could not be named (which
// reads as failed): *worded says one was applied.
func resultWords(o *accum.Observation, worded *bool, b []byte, depth int) {
	if depth == 0 && firstByte(b) == '[' {
		resultItems(o, worded, b)
		return
	}
	jsonlit.EachMember(b, func(key string, val []byte) {
		switch key {
		case "SIGNAL":
			readSignal(val).apply(o)
		case "OUTCOME":
			var s Str
			s.UnmarshalJSON(val)
			if !*worded && o.Verdict == accum.VerdictNone {
				*worded = applyVerdict(o, s.S)
			}
		case "TIMED_OUT", "TIMEDOUT":
			if string(bytes.TrimSpace(val)) == "true" {
				o.TimedOut = true
			}
		case "METADATA":
			if depth == 0 {
				resultWords(o, worded, val, depth+1)
			}
		default:
			if depth == 0 && firstByte(val) == '[' {
				resultItems(o, worded, val)
			}
		}
	})
}

// maxResultItems bounds the items of an array resultWords reads.
const maxResultItems = 16

// resultItems reads the result words of the objects in the array b, as
// one result's (depth 1).
func resultItems(o *accum.Observation, worded *bool, b []byte) {
	n := 0
	jsonlit.EachElement(b, func(item []byte) bool {
		if firstByte(item) == '{' {
			resultWords(o, worded, item, 1)
		}
		n++
		return n < maxResultItems
	})
}
