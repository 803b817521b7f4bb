package dialect

import (
	"slices"
	"strings"
	"sync/atomic"

	"github.com/acpnorm/acpnorm/internal/jsonlit"
)

// This file is AUTO detection: which dialect reads an agent, from its
// `agentInfo.name` (Detect) or, for an agent that gives no name, from the
// signs it sends (Frame.Sign). DetectionOrder says it in words; the
// service and ListDialects use exactly this.

// prefixSeparators are the characters that may follow an agent name used
// as a prefix.
const prefixSeparators = "-_ @"

// Detect returns the dialect for an agent's `agentInfo.name`, falling back
// to the generic dialect. It never fails. The name is compared lowercase
// and trimmed: first with every dialect's AgentNames exactly; then, when
// none is equal, with each of them as a prefix followed by one of
// prefixSeparators, and the longest such prefix wins (so a dialect that
// lists a longer, more specific name beats one that lists a shorter one,
// whatever their alphabetical order). A name that starts with an agent
// name and a separator is taken for a build or variant of that agent
// ("codex-acp-nightly", "gemini-cli@0.61"); a name that merely starts with
// the same letters ("codexish", "geminiX") is not.
func Detect(agentName string) Dialect {
	agent := strings.ToLower(strings.TrimSpace(agentName))
	if agent == "" {
		return Generic()
	}
	var best Dialect
	bestLen := 0
	for _, e := range ordered() {
		for _, n := range e.info.AgentNames {
			switch {
			case agent == n:
				return e.d
			case len(n) > bestLen && len(agent) > len(n) && strings.HasPrefix(agent, n) && strings.IndexByte(prefixSeparators, agent[len(n)]) >= 0:
				best, bestLen = e.d, len(n)
			}
		}
	}
	if best != nil {
		return best
	}
	return Generic()
}

// shapeMatcher is implemented by dialects whose agents can be recognised
// from the shape of an opening `tool_call` (see Info.ShapeRule): u as the
// generic reading decoded it, msg the frame, for members of its own that
// the generic reading does not decode (see metaHas).
type shapeMatcher interface {
	matchesShape(u *shellUpdate, msg []byte) bool
}

// updateString is the string value of the member name (folded, as in
// metaHas) of the tool call update of msg (params.update), and whether
// there is one: for a shape rule's member the generic reading does not
// decode.
func updateString(msg []byte, name string) (string, bool) {
	v := valueAt(msg, "PARAMS", "UPDATE", name)
	if len(v) == 0 || v[0] != '"' {
		return "", false
	}
	return jsonlit.Unquote(v[:jsonlit.ValueEnd(v, 0)])
}

// metaHas says whether the tool call update of msg (params.update) has a
// `_meta` with every one of names (as jsonlit.FoldKey folds them, so upper
// case), none null: a sign only a shape rule reads, so the generic
// reading needs no field for it. It walks only the frames it is asked of.
func metaHas(msg []byte, names ...string) bool {
	meta := valueAt(msg, "PARAMS", "UPDATE", "_META")
	if len(meta) == 0 || meta[0] != '{' {
		return false
	}
	for _, name := range names {
		if v := valueAt(meta, name); len(v) == 0 || v[0] == 'n' {
			return false
		}
	}
	return true
}

// DetectionOrder says, in words, how AUTO detection chooses a dialect. It
// is what Detect, Frame.Sign and the session's use of them do.
const DetectionOrder = "A session's dialect is chosen once and kept: by name when the client names one; " +
	"else by the agent's `agentInfo.name` in the `initialize` result: an exact (case-insensitive) match with a dialect's agent_names first, " +
	"then the longest agent name that the agent's name starts with followed by '-', '_', ' ' or '@'; a name that matches none reads as generic and no sign can change that. " +
	"Only an agent that gives no name (no initialize result seen, or one without agentInfo.name) is detected by what it sends: " +
	"an `authMethods[].id` of its initialize result listed in auth_method_ids, a request or notification whose method starts with one of method_prefixes, " +
	"or an opening tool_call of the documented shape; the first such sign wins. Until then, and when nothing matches, the generic dialect reads the frames; " +
	"a session whose initialize result named no agent and that reads a shell call so says it (an agent_name unrecognized report, field \"agentInfo.name (absent)\")."

// entry is a registered dialect with its Info, read once.
type entry struct {
	d    Dialect
	info Info
}

// orderedCache is All() with each Info, built once per registry
// generation: detection by sign runs on every unhandled-method frame and
// every generic tool_call, and rebuilding and sorting the list (with each
// Info's slices) there cost about 5.6 µs and 60 allocations a frame.
type orderedCache struct {
	gen     uint64
	entries []entry
}

var (
	// registryGen counts changes to the registry (register, unregister);
	// a cache built under another generation is stale.
	registryGen atomic.Uint64
	orderedList atomic.Pointer[orderedCache]
)

// ordered returns every dialect in All's order, with its Info. The
// registry changes only at init and in tests, so the list is rebuilt only
// then; a list built while the registry changed carries the old
// generation and is rebuilt on the next call.
func ordered() []entry {
	gen := registryGen.Load()
	if c := orderedList.Load(); c != nil && c.gen == gen {
		return c.entries
	}
	all := All()
	es := make([]entry, len(all))
	for i, d := range all {
		es[i] = entry{d, d.Info()}
	}
	orderedList.Store(&orderedCache{gen, es})
	return es
}

// dialectBySign returns the name of the first dialect whose Info matches
// ("" for none).
func dialectBySign(match func(*Info) bool) string {
	es := ordered()
	for i := range es {
		if match(&es[i].info) {
			return es[i].info.Name
		}
	}
	return ""
}

// signOfAuth returns the dialect whose agent offers one of these auth
// method ids ("" for none).
func signOfAuth(ids []string) string {
	for _, id := range ids {
		if n := dialectBySign(func(i *Info) bool { return slices.Contains(i.AuthMethodIDs, id) }); n != "" {
			return n
		}
	}
	return ""
}

// signOfMethod returns the dialect whose agent sends this vendor method
// ("" for none).
func signOfMethod(method string) string {
	return dialectBySign(func(i *Info) bool {
		return slices.ContainsFunc(i.MethodPrefixes, func(p string) bool { return strings.HasPrefix(method, p) })
	})
}

// signOfShape returns the dialect whose agent sends a tool call of this
// shape ("" for none).
func signOfShape(u *shellUpdate, msg []byte) string {
	for _, e := range ordered() {
		if m, ok := e.d.(shapeMatcher); ok && m.matchesShape(u, msg) {
			return e.info.Name
		}
	}
	return ""
}

// authMethodIDs are the ids of an `initialize` result's `authMethods`;
// members of other JSON types are skipped, never an error.
type authMethodIDs []string

// maxAuthMethodIDs bounds the ids read: no more methods are read once
// they are reached.
const maxAuthMethodIDs = 64

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (a *authMethodIDs) UnmarshalJSON(b []byte) error {
	*a = nil
	jsonlit.EachElement(b, func(val []byte) bool {
		jsonlit.EachMemberLit(val, a.member)
		return len(*a) < maxAuthMethodIDs
	})
	return nil
}

// UnmarshalJSONFast implements jsonlit.FastUnmarshaler: UnmarshalJSON in
// the fast decoder's pass, each method's members read where the decoder
// validates them.
func (a *authMethodIDs) UnmarshalJSONFast(d *jsonlit.Dec) bool {
	*a = nil
	if d.Kind() != '[' {
		_, ok := d.Value()
		return ok
	}
	return d.Elements(func() bool {
		if len(*a) >= maxAuthMethodIDs || d.Kind() != '{' {
			_, ok := d.Value()
			return ok
		}
		return d.Members(func(key []byte) bool {
			val, ok := d.Value()
			if ok {
				a.member(key, val)
			}
			return ok
		})
	})
}

// member reads one member of a method: its id when key names it.
func (a *authMethodIDs) member(key, val []byte) {
	var id Str
	if jsonlit.KeyIs(key, "ID") {
		if id.UnmarshalJSON(val); id.Set && id.S != "" {
			*a = append(*a, id.S)
		}
	}
}

// DetectionRules returns every rule AUTO detection uses to pick d, one
// sentence each, in the order they are tried (see DetectionOrder). The
// generic dialect has none: it is the fallback.
func DetectionRules(d Dialect) []string {
	info := d.Info()
	var out []string
	if names := info.AgentNames; len(names) > 0 {
		q := quoteAll(names)
		out = append(out,
			"agentInfo.name equals one of "+q+", ignoring case",
			"agentInfo.name starts with one of "+q+" followed by '-', '_', ' ' or '@', ignoring case, and no dialect lists a longer such name")
	}
	for _, id := range info.AuthMethodIDs {
		out = append(out, "no agentInfo.name, and the initialize result offers the auth method id "+quote(id))
	}
	for _, p := range info.MethodPrefixes {
		out = append(out, "no agentInfo.name, and the agent sends a request or notification whose method starts with "+quote(p))
	}
	if info.ShapeRule != "" {
		out = append(out, "no agentInfo.name, and the agent sends "+info.ShapeRule)
	}
	return out
}

func quote(s string) string { return `"` + s + `"` }

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = quote(s)
	}
	return strings.Join(q, ", ")
}
