package dialect

import (
	"bytes"
	"io"
	"sync"
	"sync/atomic"

	"github.com/acpnorm/acpnorm/internal/jsonlit"
	"github.com/go-json-experiment/json/jsontext"
)

// quietUpdate says whether msg is a `session/update` notification whose
// update is of a kind no dialect observes (sessionUpdates), in the plain,
// valid shape for which readFrame's typed decode gives the empty Frame and
// no error: so it need not be decoded. Most frames of a session are such
// updates (message and thought chunks, usage, plans, command lists), and
// this one jsontext pass over them finds only the members that decide,
// skipping every other value without decoding it.
//
// It says true only when the message is one valid JSON object (as
// encoding/json reads it: invalid UTF-8 and repeated names of other
// members are allowed) whose `jsonrpc` is a string or absent, whose
// `method` is exactly "session/update", which has no `id`, `result` or
// `error`, whose `params` is an object with one `update`, an object with
// one `sessionUpdate`, a string without escapes that sessionUpdates lists
// as observed by none. A member whose name encoding/json could match to
// one of those case-insensitively (or with underscores or dashes, or
// escapes or non-ASCII letters) but does not spell it exactly, or that
// comes twice, makes it say false: readFrame then decodes the frame and
// its checks decide. TestQuietUpdateIsTheFullRead and FuzzQuietUpdate
// hold it to the full path on every recorded frame with every dialect.
func quietUpdate(msg []byte) bool {
	if noPrescan.Load() || jsonlit.EncodingJSONOnly() || !quietKindIn(msg) {
		return false
	}
	p := prescanners.Get().(*prescanner)
	p.rd = *bytes.NewBuffer(msg)
	p.dec.Reset(&p.rd, prescanOptions...)
	quiet := p.envelope()
	p.rd = bytes.Buffer{}
	p.dec.Reset(&p.rd) // let go of msg
	prescanners.Put(p)
	return quiet
}

// quietKindIn is the cheap first look of quietUpdate, so that a frame it
// does not skip (a tool call, a response) costs a short byte search
// rather than a second scan: it says whether the first
// `"sessionUpdate":"` in the first quietLookBytes of msg, wherever it
// stands, is followed by a kind declared quiet. It decides nothing else:
// the pass that follows reads the frame's own members. Only the head is
// searched because a tool call's sessionUpdate may come after its big
// members (claude-code-acp sends _meta and rawOutput first), and a search
// through them cost as much as half a scan; every recorded quiet update
// has its sessionUpdate in its first 130 bytes, and one that has it later
// is read by the full path.
func quietKindIn(msg []byte) bool {
	head := msg[:min(len(msg), quietLookBytes)]
	i := bytes.Index(head, sessionUpdateName)
	if i < 0 {
		return false
	}
	rest := msg[i+len(sessionUpdateName):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return false
	}
	observed, known := sessionUpdates[string(rest[:j])]
	return known && !observed
}

var sessionUpdateName = []byte(`"sessionUpdate":"`)

const quietLookBytes = 1024

// noPrescan turns quietUpdate off, for tests that compare with the full
// path.
var noPrescan atomic.Bool

// prescanOptions read JSON as encoding/json does: it neither refuses a
// repeated name (quietUpdate watches those it reads) nor invalid UTF-8.
var prescanOptions = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

type prescanner struct {
	rd  bytes.Buffer // the decoder reads msg in place from a bytes.Buffer
	dec jsontext.Decoder
}

var prescanners = sync.Pool{New: func() any { return new(prescanner) }}

// envelope reads the whole message.
func (p *prescanner) envelope() bool {
	d := &p.dec
	var jsonrpc, method, params, quiet bool
	ok := p.object(func(name []byte) bool {
		switch string(name) {
		case `"jsonrpc"`:
			v, err := d.ReadValue()
			if jsonrpc || err != nil || v.Kind() != '"' {
				return false
			}
			jsonrpc = true
		case `"method"`:
			v, err := d.ReadValue()
			if method || err != nil || string(v) != `"session/update"` {
				return false
			}
			method = true
		case `"params"`:
			if params || d.PeekKind() != '{' {
				return false
			}
			params = true
			quiet = p.params()
			return quiet
		default:
			return !nameLike(name, "jsonrpc", "id", "method", "params", "result", "error") && p.skip()
		}
		return true
	})
	if !ok || !method || !params || !quiet {
		return false
	}
	_, err := d.ReadToken()
	return err == io.EOF // one value and nothing after it
}

// params reads the params object, which it requires to have an update.
func (p *prescanner) params() bool {
	d := &p.dec
	var update, quiet bool
	ok := p.object(func(name []byte) bool {
		if string(name) == `"update"` {
			if update || d.PeekKind() != '{' {
				return false
			}
			update = true
			quiet = p.update()
			return quiet
		}
		return !nameLike(name, "update") && p.skip()
	})
	return ok && update && quiet
}

// update reads the update object, which it requires to have a
// sessionUpdate of a kind no dialect observes.
func (p *prescanner) update() bool {
	d := &p.dec
	var kind, quiet bool
	ok := p.object(func(name []byte) bool {
		if string(name) == `"sessionUpdate"` {
			v, err := d.ReadValue()
			if kind || err != nil || v.Kind() != '"' || bytes.IndexByte(v, '\\') >= 0 {
				return false
			}
			kind = true
			observed, known := sessionUpdates[string(v[1:len(v)-1])]
			quiet = known && !observed
			return quiet
		}
		return !nameLike(name, "sessionupdate") && p.skip()
	})
	return ok && kind && quiet
}

// object reads an object from its '{' to its '}', calling member with
// the raw name of each member, before its value, which member must read.
// It stops at the first false.
func (p *prescanner) object(member func(name []byte) bool) bool {
	d := &p.dec
	if t, err := d.ReadToken(); err != nil || t.Kind() != '{' {
		return false
	}
	for d.PeekKind() == '"' {
		name, err := d.ReadValue()
		if err != nil || !member(name) {
			return false
		}
	}
	t, err := d.ReadToken()
	return err == nil && t.Kind() == '}'
}

// skip reads a value whole, validating it without decoding it.
func (p *prescanner) skip() bool {
	_, err := p.dec.ReadValue()
	return err == nil
}

// nameLike says whether the raw (quoted) member name could be taken by
// encoding/json, or by the one-pass decode, for a field named one of
// names (lower-case ASCII letters): it equals one ignoring ASCII case,
// underscores and dashes, or it has an escape or a byte that is not ASCII
// (which Unicode case folding could turn into one).
func nameLike(raw []byte, names ...string) bool {
	in := raw[1 : len(raw)-1]
	for _, c := range in {
		if c == '\\' || c >= 0x80 {
			return true
		}
	}
	for _, n := range names {
		if foldsTo(in, n) {
			return true
		}
	}
	return false
}

// foldsTo says whether b is name ignoring ASCII case, '_' and '-'.
func foldsTo(b []byte, name string) bool {
	j := 0
	for _, c := range b {
		if c == '_' || c == '-' {
			continue
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if j == len(name) || c != name[j] {
			return false
		}
		j++
	}
	return j == len(name)
}
