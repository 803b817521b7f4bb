// Package fold turns the ShellExec revisions that acpnormd streams back into
// the current state of each shell tool call, as every client has to.
//
// A revision carries every scalar field of the call, but its three text
// fields (output, stdout, stderr) only when they changed: TEXT_MODE_APPEND
// text is added to what the client holds, TEXT_MODE_REPLACE text replaces it,
// and an absent field leaves it as it was. A final (ENDED) revision is folded
// the same way. Revisions are numbered 1, 2, 3, ... per (session_id,
// tool_call_id) with no gap; a Folder checks that and reports a gap, a
// restart or a repeat as an *Error, without applying that revision.
//
//	var f fold.Folder
//	for {
//		res, err := stream.Recv()
//		...
//		if x := res.GetShellExec(); x != nil {
//			if err := f.Apply(x); err != nil {
//				log.Print(err) // a gap after a reconnect, resynchronised or not
//			}
//			cur := f.State(fold.KeyOf(x)) // whole text so far in cur.Output.Text
//		}
//	}
//
// The zero Folder is ready to use. A Folder is not safe for concurrent use.
package fold

import (
	"fmt"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"google.golang.org/protobuf/proto"
)

// Key names one shell tool call.
type Key struct {
	SessionID  string
	ToolCallID string
}

// KeyOf returns the key of the call a revision belongs to.
func KeyOf(x *pb.ShellExec) Key {
	return Key{SessionID: x.GetSessionId(), ToolCallID: x.GetToolCallId()}
}

// ErrorKind says what was wrong with a revision.
type ErrorKind int

const (
	// Gap: the revision is past the next one expected (revisions were
	// missed; a call first seen at a revision other than 1 is a gap too).
	// Error.Applied says whether the Folder resynchronised from it.
	Gap ErrorKind = iota + 1
	// Restart: the revision is not past the last one applied (numbering
	// went back, or a revision came twice).
	Restart
	// Invalid: the revision is malformed (revision 0, or a text field whose
	// mode is neither APPEND nor REPLACE).
	Invalid
)

// String returns "gap", "restart" or "invalid".
func (k ErrorKind) String() string {
	switch k {
	case Gap:
		return "gap"
	case Restart:
		return "restart"
	case Invalid:
		return "invalid"
	}
	return fmt.Sprintf("ErrorKind(%d)", int(k))
}

// Error reports a revision out of order or malformed. Unless Applied, the
// call's state is what it was before that revision.
type Error struct {
	Kind ErrorKind
	Key  Key
	// Applied is true for a Gap revision that carried no APPEND text: its
	// scalars and REPLACE texts were taken (texts it did not carry keep what
	// was held) and numbering goes on from it.
	Applied bool
	// Held is the last revision applied to the call (0 when none was).
	Held uint32
	// Got is the revision number that was refused.
	Got uint32
	// Detail says more for Invalid.
	Detail string
}

func (e *Error) Error() string {
	switch e.Kind {
	case Gap:
		what := "not applied: it appends to text that missed a part"
		if e.Applied {
			what = "resynchronised from its whole text"
		}
		return fmt.Sprintf("fold: call %q of session %q: revision %d after %d: %d revision(s) missing; %s", e.Key.ToolCallID, e.Key.SessionID, e.Got, e.Held, e.Got-e.Held-1, what)
	case Restart:
		return fmt.Sprintf("fold: call %q of session %q: revision %d after %d: numbering went back or repeated", e.Key.ToolCallID, e.Key.SessionID, e.Got, e.Held)
	}
	return fmt.Sprintf("fold: call %q of session %q: revision %d: %s", e.Key.ToolCallID, e.Key.SessionID, e.Got, e.Detail)
}

// Folder holds the folded state of every call it was given revisions for.
type Folder struct {
	// Limit, when above 0, bounds each folded text to its last Limit
	// bytes, cut on a character boundary as acpnormd cuts (its
	// --text-limit, 256 KiB by default); the state then says truncated.
	// APPEND text is never cut by the server, so without a Limit a long
	// output's folded text holds all of it until a REPLACE.
	Limit int

	calls map[Key]*call
	order []Key
}

type call struct {
	state *pb.ShellExec // scalar fields of the latest revision; texts below
	texts [3]*text      // output, stdout, stderr
	dirty bool          // texts changed since state's text fields were set
}

// text is one folded ShellText; buf grows amortised so that many appends
// cost O(total text), not O(text²).
type text struct {
	buf        []byte
	cut        bool // buf lost its head to the Folder's Limit
	truncated  bool
	totalBytes int64
}

// Apply folds one revision into the state of its call. It returns an *Error
// when the revision is out of order or malformed; then it changes nothing,
// unless the error is a Gap with Applied set (see Error). Apply keeps no
// reference to x.
func (f *Folder) Apply(x *pb.ShellExec) error {
	if x == nil {
		return &Error{Kind: Invalid, Detail: "nil revision"}
	}
	k := KeyOf(x)
	c := f.calls[k]
	var held uint32
	if c != nil {
		held = c.state.GetRevision()
	}
	got := x.GetRevision()
	switch {
	case got == 0:
		return &Error{Kind: Invalid, Key: k, Held: held, Got: got, Detail: "revision 0 (revisions count from 1)"}
	case got <= held:
		return &Error{Kind: Restart, Key: k, Held: held, Got: got}
	}
	in := [3]*pb.ShellText{x.GetOutput(), x.GetStdout(), x.GetStderr()}
	appends := false
	for i, t := range in {
		if t == nil {
			continue
		}
		m := t.GetMode()
		if m != pb.TextMode_TEXT_MODE_APPEND && m != pb.TextMode_TEXT_MODE_REPLACE {
			return &Error{Kind: Invalid, Key: k, Held: held, Got: got, Detail: fmt.Sprintf("%s has mode %v", fieldNames[i], m)}
		}
		appends = appends || m == pb.TextMode_TEXT_MODE_APPEND
	}
	var gap *Error
	if got > held+1 {
		gap = &Error{Kind: Gap, Key: k, Held: held, Got: got, Applied: !appends}
		if appends {
			return gap
		}
	}
	if c == nil {
		if f.calls == nil {
			f.calls = map[Key]*call{}
		}
		c = &call{}
		f.calls[k] = c
		f.order = append(f.order, k)
	}
	st := proto.Clone(x).(*pb.ShellExec)
	st.Output, st.Stdout, st.Stderr = nil, nil, nil
	c.state = st
	for i, t := range in {
		if t == nil {
			continue
		}
		held := c.texts[i]
		if held == nil {
			held = &text{}
			c.texts[i] = held
		}
		if t.GetMode() == pb.TextMode_TEXT_MODE_REPLACE {
			held.buf, held.cut = append(held.buf[:0], t.GetText()...), false
		} else {
			held.buf = append(held.buf, t.GetText()...)
		}
		if f.Limit > 0 && len(held.buf)-f.Limit > f.Limit {
			// Kept to its tail now and then, so that many appends cost
			// O(total text), not O(text × appends); State cuts the rest.
			held.buf, held.cut = append(held.buf[:0], tail(held.buf, f.Limit)...), true
		}
		held.truncated = t.GetTruncated()
		held.totalBytes = t.GetTotalBytes()
	}
	c.dirty = true
	if gap != nil {
		return gap
	}
	return nil
}

var fieldNames = [3]string{"output", "stdout", "stderr"}

// State returns the folded state of a call, or nil when no revision of it
// was applied: the scalar fields of its latest revision, and each text field
// that any revision carried holding the whole text so far (mode REPLACE,
// truncated and total_bytes from the latest revision that carried it).
//
// The message is shared: read it, do not change it. The Folder never
// changes a message it returned; a later Apply makes a new one. Building it
// costs O(text of the call) after each Apply, nothing on a repeated State.
func (f *Folder) State(k Key) *pb.ShellExec {
	c := f.calls[k]
	if c == nil {
		return nil
	}
	if c.dirty {
		c.state.Output = c.texts[0].message(f.Limit)
		c.state.Stdout = c.texts[1].message(f.Limit)
		c.state.Stderr = c.texts[2].message(f.Limit)
		c.dirty = false
	}
	return c.state
}

// Revision returns the number of the latest revision applied to a call,
// and false when none was: what State(k).GetRevision() says, without
// building the call's texts (a map lookup, cheap to do before each Apply).
func (f *Folder) Revision(k Key) (uint32, bool) {
	c := f.calls[k]
	if c == nil {
		return 0, false
	}
	return c.state.GetRevision(), true
}

func (t *text) message(limit int) *pb.ShellText {
	if t == nil {
		return nil
	}
	b, cut := t.buf, t.cut
	if limit > 0 && len(b) > limit {
		b, cut = tail(b, limit), true
	}
	return &pb.ShellText{Text: string(b), Mode: pb.TextMode_TEXT_MODE_REPLACE, Truncated: t.truncated || cut, TotalBytes: t.totalBytes}
}

// tail is the last n bytes of b, from the first character that starts
// in them.
func tail(b []byte, n int) []byte {
	if n >= len(b) {
		return b
	}
	i := len(b) - n
	for i < len(b) && b[i]&0xC0 == 0x80 {
		i++
	}
	return b[i:]
}

// Calls returns the keys of every call held, in the order each was first
// applied.
func (f *Folder) Calls() []Key {
	return append([]Key(nil), f.order...)
}

// Delete forgets a call, for example once its ENDED revision was handled. A
// later revision of it is then a Gap (unless it is revision 1).
func (f *Folder) Delete(k Key) {
	if _, ok := f.calls[k]; !ok {
		return
	}
	delete(f.calls, k)
	for i, o := range f.order {
		if o == k {
			f.order = append(f.order[:i], f.order[i+1:]...)
			break
		}
	}
}
