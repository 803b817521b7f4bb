package dialect

import (
	"bytes"
	"reflect"
	"regexp"
	"strings"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/acpnorm/acpnorm/internal/jsonlit"
)

// This file says a wire change aloud: what a shell call's frame carries
// that its dialect does not read but that looks like a result (an exit
// code, output, a result block) becomes an accum.Unrecognized on the
// call's observation, which the session counts and explain prints. It
// never changes what the call says: an exit code in a field the dialect
// has not seen its agent fill truthfully stays unknown.
//
// What a dialect reads is derived once per update type from its json
// tags (knownOf): the members typed under `rawOutput` and `_meta` are
// known, and a typed value whose Go type has no tagged members (Str, Code,
// a map, json.RawMessage) is read whole, so nothing under it counts; a
// type that decodes itself says what it reads with ownFields. A member
// known but deliberately not read is declared with unreadFields. A known
// member keeps the JSON type its Go type reads (wantOf; a type that
// decodes itself reads any, unless it says otherwise with jsonTyped): one
// sent with another type is read as absent, and said when it is an exit
// code or output, or holds one (typed).
//
// The cost: a frame whose observations are all about tools that are not
// shells pays nothing; in any other `session/update`, the update's
// `rawOutput` and `_meta` are walked once more, without decoding their
// strings (long strings are skipped at memchr speed; the content texts
// and byte arrays the elided decode took out are not there to skip, since
// the walk reads its light frame), and their members are matched against
// the known tree without allocating. The typed decode marks where they
// are (jsonlit.FastDecodeMarked); only a frame it did not read is walked
// from its start to find them. A frame that opens a tool call none of
// whose observations is a shell has its kind, terminal content and id
// looked at too, and only when those say nothing the names of its
// rawInput's members, their values skipped (noticeShellUnread). The exit
// lines a dialect leaves in output are looked for by the session, once
// per shell call when it ends: a short pattern on the first and last line
// of each text the call holds, at most 96 bytes each
// (accum.Call.ExitLineHeld); finding them reads up to the text's first
// newline and back from its end to its last one, nothing else.

// unreadFields is implemented by a dialect's update type (the U its read
// passes to readFrame) when it knows members under `rawOutput` or `_meta`
// that it deliberately does not read (a restatement of what it reads
// elsewhere, a field a build fills with a made-up value): each is a path
// such as "rawOutput.metadata.preview" or "_meta.claudeCode.toolResponse",
// and covers everything under it. Such members are never reported as
// unrecognized. Members typed in the update struct (by their json tags)
// need no declaration: they are known.
type unreadFields interface {
	unreadFields() []string
}

// ownFields is implemented by a type under `rawOutput` or `_meta` that
// decodes itself (its own UnmarshalJSON) rather than by json tags: the
// paths it reads, from its own value ("message", "contents[].exitCode";
// "[].result" for the elements of the value itself, when it reads an
// array), each read whole. Without it such a type is read whole, so a
// wire change under it would go unsaid.
type ownFields interface {
	ownFields() []string
}

var ownFieldsType = reflect.TypeFor[ownFields]()

// ownNode is the node of a type that says what it reads (ownFields), and
// whether it does.
func ownNode(t reflect.Type) (*knownNode, bool) {
	var of ownFields
	switch {
	case t.Implements(ownFieldsType):
		of = reflect.Zero(t).Interface().(ownFields)
	case reflect.PointerTo(t).Implements(ownFieldsType):
		of = reflect.New(t).Interface().(ownFields)
	default:
		return nil, false
	}
	n := none()
	for _, p := range of.ownFields() {
		if parts := strings.Split(p, "."); strings.HasPrefix(p, "[]") {
			n = mark(n, parts)
		} else {
			n = markMember(n, parts)
		}
	}
	return n, true
}

// knownNode is what a dialect reads of one JSON value: the members of an
// object, by folded name, each with what is read under it, or the
// elements of an array. A leaf is read whole by the dialect's own code:
// nothing under it is unrecognized.
type knownNode struct {
	members map[string]*knownNode // an object's
	elems   *knownNode            // an array's
	whole   bool                  // a leaf
	// want is the JSON type the dialect's Go type reads (wantAny: any,
	// or the type decodes itself); what is the finding a value of
	// another type makes ("": none), from the member's name and what is
	// read under it (see typed).
	want wantType
	what string
	// list is members as a list, for a node of a few members (see
	// member), made by index once the tree is built.
	list []knownMember
}

// knownMember is one of a knownNode's members: its folded name and node.
type knownMember struct {
	folded string
	node   *knownNode
}

// maxListed is the most members a node lists: member compares a name with
// each of them, which for a few costs less than hashing it.
const maxListed = 16

// index makes the lists of n and every node under it.
func (n *knownNode) index(depth int) {
	if n == nil || depth > 2*maxKnownDepth+4 {
		return
	}
	n.list = nil
	if len(n.members) <= maxListed {
		for k, c := range n.members {
			n.list = append(n.list, knownMember{k, c})
		}
	}
	for _, c := range n.members {
		c.index(depth + 1)
	}
	n.elems.index(depth + 1)
}

func (n *knownNode) leaf() bool { return n != nil && n.whole }

// wantType is the JSON type a known member is read as.
type wantType uint8

const (
	wantAny    wantType = iota
	wantString          // a string
	wantNumber          // a number
	wantBool            // true or false
	wantObject          // an object
	wantArray           // an array
	wantCode            // an exit code: a number or a numeric string (Code)
)

// jsonTyped is implemented by a type that decodes itself (its own
// UnmarshalJSON) and reads one JSON type: a value of another is read as
// absent, which unrecognized says.
type jsonTyped interface {
	wantedJSON() wantType
}

var jsonTypedType = reflect.TypeFor[jsonTyped]()

// wantOf is the JSON type Go type t (not a pointer) reads.
func wantOf(t reflect.Type) wantType {
	switch {
	case t.Implements(jsonTypedType):
		return reflect.Zero(t).Interface().(jsonTyped).wantedJSON()
	case reflect.PointerTo(t).Implements(jsonTypedType):
		return reflect.New(t).Interface().(jsonTyped).wantedJSON()
	case decodesItself(t):
		return wantAny
	}
	switch t.Kind() {
	case reflect.String:
		return wantString
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return wantNumber
	case reflect.Bool:
		return wantBool
	case reflect.Struct, reflect.Map:
		return wantObject
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() != reflect.Uint8 {
			return wantArray
		}
	}
	return wantAny
}

// typed sets what a value of another JSON type than n reads says, n
// being the member named name: an exit code's (an exit code's type, or a
// number named as one) is an exit field, an object or array under which
// an exit code is read is too, else one under which output is read, or
// a string named as output, is an output field. It returns n.
func typed(n *knownNode, name string) *knownNode {
	if n == nil || n.whole && n.want == wantAny && n.members == nil {
		return n
	}
	k := nameKinds([]byte(name))
	switch {
	case n.want == wantCode || k.exit && n.want == wantNumber:
		n.what = accum.UnrecognizedExit
	case n.members != nil || n.elems != nil:
		for _, c := range n.members {
			if c.what == accum.UnrecognizedExit || n.what == "" && c.what != "" {
				n.what = c.what
			}
		}
		if n.elems != nil && n.what != accum.UnrecognizedExit && n.elems.what != "" {
			n.what = n.elems.what
		}
		if n.what == "" && k.output && !k.place {
			n.what = accum.UnrecognizedOutput
		}
	case n.want == wantString && k.output && !k.place:
		n.what = accum.UnrecognizedOutput
	}
	return n
}

// takes says whether the JSON value starting with byte c is of the type n
// reads (null always is: the member reads as absent, as sent).
func (n *knownNode) takes(c byte) bool {
	switch n.want {
	case wantString:
		return c == '"'
	case wantNumber:
		return c == '-' || '0' <= c && c <= '9'
	case wantCode:
		return c == '"' || c == '-' || '0' <= c && c <= '9'
	case wantBool:
		return c == 't' || c == 'f'
	case wantObject:
		return c == '{'
	case wantArray:
		return c == '['
	}
	return true
}

// codeLiteral says whether the JSON number or string v reads as an exit
// code (ParseCode); digits alone, as most are, need no parse.
func codeLiteral(v []byte) bool {
	if len(v) > 0 && len(v) <= 9 {
		digits := true
		for _, c := range v {
			digits = digits && '0' <= c && c <= '9'
		}
		if digits {
			return true
		}
	}
	return ParseCode(v).Known
}

// none is a node of which nothing is read.
func none() *knownNode { return &knownNode{members: map[string]*knownNode{}} }

// leafNode is a node read whole.
func leafNode() *knownNode { return &knownNode{whole: true} }

// knownTree is what a dialect reads under an update's `rawOutput` and
// `_meta`; a member the update type does not have is a node with no
// members (nothing under it is read).
type knownTree struct {
	rawOutput, meta *knownNode
}

// knownOf builds the known tree of update type U (readPlanOf keeps it).
func knownOf[U any]() *knownTree {
	var unread []string
	var u U
	if d, ok := any(u).(unreadFields); ok {
		unread = d.unreadFields()
	} else if d, ok := any(&u).(unreadFields); ok {
		unread = d.unreadFields()
	}
	return buildKnown(reflect.TypeFor[U](), unread)
}

// buildKnown reads the json tags of update type t.
func buildKnown(t reflect.Type, unread []string) *knownTree {
	root := nodeOf(t, 0)
	member := func(name string) *knownNode {
		if n := root.members[foldName(name)]; n != nil {
			return n
		}
		return none()
	}
	k := &knownTree{rawOutput: member("rawOutput"), meta: member("_meta")}
	for _, p := range unread {
		markUnread(k, p)
	}
	typed(k.rawOutput, "rawOutput")
	typed(k.meta, "_meta")
	k.rawOutput.index(0)
	k.meta.index(0)
	return k
}

// markUnread makes the member at path p (see unreadFields; a segment
// ending in "[]" is the elements of an array) a leaf.
func markUnread(k *knownTree, p string) {
	parts := strings.Split(p, ".")
	switch strings.TrimSuffix(parts[0], "[]") {
	case "rawOutput":
		k.rawOutput = mark(k.rawOutput, parts)
	case "_meta":
		k.meta = mark(k.meta, parts)
	default:
		panic("dialect: unreadFields path outside rawOutput and _meta: " + p)
	}
}

// mark returns n, the node parts[0] names, with the path below it made a
// leaf.
func mark(n *knownNode, parts []string) *knownNode {
	if n.leaf() {
		return n
	}
	if n == nil {
		n = none()
	}
	if strings.HasSuffix(parts[0], "[]") {
		if len(parts) == 1 {
			n.elems = leafNode()
		} else {
			if n.elems == nil {
				n.elems = none()
			}
			n.elems = markMember(n.elems, parts[1:])
		}
		return n
	}
	if len(parts) == 1 {
		return leafNode()
	}
	return markMember(n, parts[1:])
}

// markMember marks the path parts of which parts[0] is a member of n.
func markMember(n *knownNode, parts []string) *knownNode {
	if n.leaf() {
		return n
	}
	key := foldName(strings.TrimSuffix(parts[0], "[]"))
	if n.members == nil {
		n.members = map[string]*knownNode{}
	}
	n.members[key] = mark(n.members[key], parts)
	return n
}

// maxKnownDepth bounds the types nodeOf follows (and a recursive type).
const maxKnownDepth = 8

// nodeOf is what a value of Go type t reads: the members of a struct by
// their json tags (embedded structs and untagged struct fields merged, as
// a decoder of a union such as ShellOutput reads them), an element's for
// a slice; what a type that decodes itself says it reads (ownFields); a
// leaf for anything else, and for a struct with no tagged member (Str,
// Code: read whole).
func nodeOf(t reflect.Type, depth int) *knownNode {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if depth > maxKnownDepth {
		return leafNode()
	}
	if n, ok := ownNode(t); ok {
		return n
	}
	want := wantOf(t)
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return leafNode()
		}
		return &knownNode{elems: typed(nodeOf(t.Elem(), depth+1), ""), want: want}
	case reflect.Struct:
		m := map[string]*knownNode{}
		addFields(m, t, depth)
		if len(m) == 0 {
			return &knownNode{whole: true, want: want}
		}
		return &knownNode{members: m, want: want}
	}
	return &knownNode{whole: true, want: want}
}

func addFields(m map[string]*knownNode, t reflect.Type, depth int) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := cutComma(f.Tag.Get("json"))
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if name == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && depth <= maxKnownDepth {
				addFields(m, ft, depth+1)
			}
			continue
		}
		key := foldName(name)
		if old := m[key]; old != nil && !old.leaf() {
			continue // the shallower field wins, as in encoding/json
		}
		m[key] = typed(nodeOf(f.Type, depth+1), name)
	}
}

// foldName folds a member name as jsonlit.EachMember does (ASCII upper case).
func foldName(s string) string { return strings.ToUpper(s) }

// noticeUnrecognized adds to the observations of a `session/update` what
// its update carries that the dialect whose known tree is k (knownOf of
// its update type) does not read. The first observation that may be
// about a shell gets it; a frame about other tools is not looked at. msg
// is walked to the update's rawOutput and _meta, unless marked (the fast
// decode's marks of msg, nil when it did not decode msg) says where they
// are: the update is then the one object of the update type it decoded.
func noticeUnrecognized(msg []byte, marked *jsonlit.Marked, k *knownTree, tc *ToolCall, obs []accum.Observation, toolKnown bool) {
	if tc.SessionUpdate == "tool_call" && !toolKnown {
		noticeShellUnread(msg, "UPDATE", tc, obs)
	}
	at := -1
	for i := range obs {
		if obs[i].Shell != accum.ShellNo {
			at = i
			break
		}
	}
	if at < 0 {
		return
	}
	o := &obs[at]
	if tc.Status != nil && ReadStatus(tc.Status) == accum.StatusNone {
		addUnrecognized(&o.Unrecognized, accum.UnrecognizedStatus, "status")
	}
	for i := range tc.Content {
		if !knownContent(&tc.Content[i]) {
			addUnrecognized(&o.Unrecognized, accum.UnrecognizedContent, "content[].type")
			break
		}
	}
	for i := range tc.Content {
		// A text block whose text is not a string under `text` (a build
		// that moved it to `value`): every dialect reads a text block's
		// text there, so its output would go unsaid.
		if c := &tc.Content[i]; c.isText() && c.Content.Text.lit == nil {
			addUnrecognized(&o.Unrecognized, accum.UnrecognizedContent, "content[].content.text")
			break
		}
	}
	ended := o.Status.Ended() && o.Exit == nil && o.Signal == "" && !o.Cancelled
	nodes := [len(knownMembers)]*knownNode{k.rawOutput, k.meta}
	if marked != nil && marked.Objects == 1 && marked.N <= jsonlit.MaxMarked {
		// The decode found the members in the one update it decoded.
		s := scan{out: &o.Unrecognized, resultText: ended}
		for _, m := range marked.Marks[:marked.N] {
			s.path[0] = msg[m.Key[0]:m.Key[1]]
			s.value(msg, m.Value, nodes[m.Name], 0)
		}
	} else if update := valueAt(msg, "PARAMS", "UPDATE"); update != nil {
		s := scan{out: &o.Unrecognized, resultText: ended}
		s.members(update, 0, true, func(key []byte) (*knownNode, bool) {
			for i, name := range knownMembers {
				if foldsTo(key, name) {
					return nodes[i], true
				}
			}
			return nil, false
		})
	}
	if ended && o.FailNotice != "" && accum.ExitLineIn([]byte(o.FailNotice), true, nil) {
		// The agent's words about a failure read like an exit line: a
		// reworded one its dialect no longer reads the exit from.
		addUnrecognized(&o.Unrecognized, accum.UnrecognizedResult, "failure notice")
	}
	if ended {
		for i := range tc.Content {
			if c := &tc.Content[i]; c.isText() && resultBlock(c.Content.Text.lit) {
				addUnrecognized(&o.Unrecognized, accum.UnrecognizedResult, "content text")
				break
			}
		}
	}
}

// knownTools is implemented by a dialect's update type (its pointer) when
// its agent names the tool of a call: knownTool says the frame names a
// tool the dialect knows that is no shell, though it may look like one
// (the kind execute of a tool that reads a background shell's output),
// so noticeShellUnread says nothing of it.
type knownTools interface {
	knownTool() bool
}

// knowsTool is u's knownTool, false when its type names no tools.
func knowsTool(u any) bool {
	k, ok := u.(knownTools)
	return ok && k.knownTool()
}

// noticeShellUnread says when a frame that opens a tool call carries
// what ACP or its agents use for a shell call, but the dialect took none
// of its observations for one: a build that renamed its shell tool, or
// moved it to another kind, would otherwise make its calls vanish
// unsaid. The signs, each vendor-neutral: the ACP kind `execute`, a
// terminal content item, a string `rawInput.command` or `rawInput.cmd`,
// a tool call id whose words name a shell ("run_shell_command_1", see
// shellID). Only a frame that may open a call is looked at (a
// `tool_call`, whose tc is params.update, or a permission ask, whose tc is
// params.toolCall: member names it), so a call costs it at most twice:
// the kind and content are decoded already, and rawInput is found by a
// walk of tc's members that skips their values.
func noticeShellUnread(msg []byte, member string, tc *ToolCall, obs []accum.Observation) {
	if len(obs) == 0 {
		return
	}
	at := 0
	for i := range obs {
		if obs[i].Shell == accum.ShellYes {
			return
		}
		if obs[i].ToolCallID == tc.ToolCallID {
			at = i
		}
	}
	field := ""
	switch {
	case tc.Kind != nil && *tc.Kind == "execute":
		field = "kind"
	case tc.TerminalContent() != "":
		field = "content[].terminalId"
	case shellID(tc.ToolCallID):
		field = "toolCallId"
	default:
		if field = shellInput(msg, member); field == "" {
			return
		}
	}
	addUnrecognized(&obs[at].Unrecognized, accum.UnrecognizedShell, field)
}

// shellInput is "rawInput.command" or "rawInput.cmd" when the tool call
// params.<member> (folded: "UPDATE", "TOOLCALL") of msg has such a member
// with a string, else "".
func shellInput(msg []byte, member string) string {
	in := valueAt(msg, "PARAMS", member, "RAWINPUT")
	if in == nil {
		return ""
	}
	found := ""
	membersAt(in, 0, func(key, b []byte, i int) int {
		if found == "" && i < len(b) && b[i] == '"' {
			switch {
			case foldsTo(key, "COMMAND"):
				found = "rawInput.command"
			case foldsTo(key, "CMD"):
				found = "rawInput.cmd"
			}
		}
		return jsonlit.ValueEnd(b, i)
	})
	return found
}

// shellID says whether a tool call id has a word that names a shell
// ("shell", "bash"), cut at '_', '-', '.', ':' and digits: some agents
// name the tool in the id ("run_shell_command__run_shell_command_17_0"),
// which is then the only sign of a shell left when a build changes the
// call's kind.
func shellID(id string) bool {
	if len(id) > 256 {
		return false
	}
	start := 0
	for i := 0; i <= len(id); i++ {
		if i < len(id) {
			if c := id[i]; c != '_' && c != '-' && c != '.' && c != ':' && (c < '0' || c > '9') {
				continue
			}
		}
		if w := id[start:i]; strings.EqualFold(w, "shell") || strings.EqualFold(w, "bash") {
			return true
		}
		start = i + 1
	}
	return false
}

// knownContent says whether a tool call's content item is of a type ACP
// defines: a content block (text, image, audio, a resource or a link to
// one), a diff or a terminal.
func knownContent(c *Content) bool {
	switch c.Type {
	case "diff", "terminal":
		return true
	case "content":
		if c.Content == nil {
			return true
		}
		switch c.Content.Type {
		case "text", "image", "audio", "resource", "resource_link":
			return true
		}
	}
	return false
}

// knownMembers are the members of an update noticeUnrecognized walks
// (folded: see foldsTo), in the order of knownTree's nodes. They are what
// the fast decode marks for it (readPlan.marks): it matches names as
// encoding/json does (Unicode's simple folding), and foldsTo as FoldKey
// does, which differ only for a name with an I in it (İ and ı fold to I
// for FoldKey alone), which these have not.
var knownMembers = [...]string{"RAWOUTPUT", "_META"}

// valueAt returns the bytes of msg from the value at path (a member of
// a member of ..., each name folded as jsonlit.FoldKey folds, so upper
// case) to the end of msg, or nil when there is none: the value
// is where they start, and scan.members reads no further than its end. The
// first member of each name is taken (encoding/json takes the last: a
// frame that repeats "params" or "update" is not one an agent sends), and
// only the members before it are skipped, so msg is walked at most once.
func valueAt(msg []byte, path ...string) []byte {
	b := msg
	for _, name := range path {
		var at []byte
		membersAt(b, 0, func(key, b []byte, i int) int {
			if foldsTo(key, name) {
				at = b[i:]
				return len(b) // the walk ends here
			}
			return jsonlit.ValueEnd(b, i)
		})
		if at == nil {
			return nil
		}
		b = at
	}
	return b
}

// spell spells a path of key literals ("[]" for an array's elements):
// "rawOutput.metadata.exit_status", "rawOutput[].text".
func spell(path [][]byte) string {
	var b strings.Builder
	for _, k := range path {
		if string(k) == "[]" {
			b.WriteString("[]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(keyText(k))
	}
	return b.String()
}

// addUnrecognized appends one finding, once per kind and field.
func addUnrecognized(out *[]accum.Unrecognized, what, field string) {
	if len(field) > accum.MaxFieldPath {
		field = capText(field, accum.MaxFieldPath)
	}
	for _, u := range *out {
		if u.What == what && u.Field == field {
			return
		}
	}
	if len(*out) < maxUnrecognized {
		*out = append(*out, accum.Unrecognized{What: what, Field: field})
	}
}

// maxUnrecognized bounds the findings of one observation.
const maxUnrecognized = 8

// maxScanDepth bounds how deep a member the dialect does not read is
// looked into; maxScanElements how many elements of an array.
const (
	maxScanDepth    = 6
	maxScanElements = 16
)

// scan walks the members of one value.
type scan struct {
	out        *[]accum.Unrecognized
	resultText bool // the frame ends the call without exit evidence
	// path is the key literals down to the value at depth.
	path [maxScanDepth + 2][]byte
}

// elemsKey stands for an array's elements in a path.
var elemsKey = []byte("[]")

// value walks the JSON value at b[i:], at s.path[:depth+1], which the
// dialect reads as n (nil: not at all), and returns the index just past
// it. Each byte is looked at once: a member the dialect reads whole is
// skipped, one it reads in part is walked, one it does not read is
// classified (resultLike) and, when it is an object or an array, walked.
func (s *scan) value(b []byte, i int, n *knownNode, depth int) int {
	i = jsonlit.SkipSpace(b, i)
	if i >= len(b) {
		return len(b)
	}
	if n != nil && !n.takes(b[i]) && b[i] != 'n' {
		// Read as absent: another type than the dialect reads.
		e := skipMember(b, i)
		if n.what != "" {
			addUnrecognized(s.out, n.what, spell(s.path[:depth+1]))
		}
		return e
	}
	if n.leaf() || depth >= maxScanDepth {
		e := skipMember(b, i)
		if n != nil && n.want == wantCode && b[i] != 'n' && !codeLiteral(b[i:e]) {
			addUnrecognized(s.out, n.what, spell(s.path[:depth+1]))
		}
		return e
	}
	switch b[i] {
	case '{':
		return s.members(b[i:], depth, false, func(key []byte) (*knownNode, bool) {
			if child := n.member(key); child != nil {
				return child, true
			}
			return nil, false
		}) + i
	case '[':
		var elems *knownNode // an array where the dialect reads none: nothing of it is read
		if n != nil {
			elems = n.elems
		}
		s.path[depth+1] = elemsKey
		i = jsonlit.SkipSpace(b, i+1)
		for k := 0; i < len(b) && b[i] != ']'; k++ {
			if k < maxScanElements {
				i = s.value(b, i, elems, depth+1)
			} else {
				i = skipMember(b, i)
			}
			if i = jsonlit.SkipSpace(b, i); i >= len(b) || b[i] != ',' {
				break
			}
			i = jsonlit.SkipSpace(b, i+1)
		}
		if i < len(b) && b[i] == ']' {
			return i + 1
		}
		return len(b)
	case '"':
		e := jsonlit.StringEnd(b, i)
		if s.resultText && resultBlock(b[i:e]) {
			addUnrecognized(s.out, accum.UnrecognizedResult, spell(s.path[:depth+1]))
		}
		return e
	}
	return jsonlit.ValueEnd(b, i)
}

// members walks the members of the object b starting at its first byte,
// at depth, and returns the index just past it. known says what the
// dialect reads under a member (ok false: nothing, so it is classified);
// in the update itself (top) a member known says nothing of is skipped
// unread, and rawOutput and _meta are walked at depth 0.
func (s *scan) members(b []byte, depth int, top bool, known func(key []byte) (*knownNode, bool)) int {
	if i := jsonlit.SkipSpace(b, 0); i >= len(b) || b[i] != '{' {
		return skipMember(b, i)
	}
	return membersAt(b, 0, func(key, b []byte, i int) int {
		child, ok := known(key)
		switch {
		case top && !ok:
			return skipMember(b, i)
		case top:
			s.path[0] = key
			return s.value(b, i, child, 0)
		case ok:
			s.path[depth+1] = key
			return s.value(b, i, child, depth+1)
		}
		s.path[depth+1] = key
		e := skipMember(b, i)
		if what := resultLike(key, b[i:e]); what != "" {
			addUnrecognized(s.out, what, spell(s.path[:depth+2]))
		} else if c := b[i]; c == '{' || c == '[' {
			s.value(b, i, nil, depth+1)
		}
		return e
	})
}

func firstByte(b []byte) byte {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// skipMember is valueEnd, with a fast way past an array of scalars without
// strings (a byte array of output: tens of kilobytes of digits, which
// valueEnd steps through one byte at a time): its end is the first ']',
// when no string, array or object starts before it.
func skipMember(b []byte, i int) int {
	if i < len(b) && b[i] == '[' {
		if j := bytes.IndexByte(b[i+1:], ']'); j >= 0 {
			in := b[i+1 : i+1+j]
			if bytes.IndexByte(in, '"') < 0 && bytes.IndexByte(in, '[') < 0 && bytes.IndexByte(in, '{') < 0 {
				return i + 1 + j + 1
			}
		}
	}
	return jsonlit.ValueEnd(b, i)
}

// member is what n reads under the member of key literal lit (nil:
// nothing, or n is nil), matched as encoding/json matches names; a plain
// ASCII key is folded without allocating.
func (n *knownNode) member(lit []byte) *knownNode {
	if n == nil || n.members == nil {
		return nil
	}
	k := lit
	if len(k) >= 2 {
		k = k[1 : len(k)-1]
	}
	var buf [64]byte
	if len(k) > len(buf) || bytes.IndexByte(k, '\\') >= 0 {
		return n.members[jsonlit.FoldKey(lit)]
	}
	for _, c := range k {
		if c >= 0x80 {
			return n.members[jsonlit.FoldKey(lit)]
		}
	}
	if n.list == nil && len(n.members) > 0 {
		out := buf[:len(k)]
		for i, c := range k {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			out[i] = c
		}
		return n.members[string(out)]
	}
	// A few members: the name folded to ASCII upper case is compared with
	// each folded name in turn, which finds what the map lookup would
	// without hashing it.
	for _, m := range n.list {
		if upperIs(k, m.folded) {
			return m.node
		}
	}
	return nil
}

// keyText is a member's name as sent, unquoted.
func keyText(lit []byte) string {
	if s, ok := jsonlit.Unquote(lit); ok {
		return s
	}
	return string(lit)
}

// nameKinds reads the words of a member name: it is cut at '_', '-',
// '.', ' ' and lower-to-upper case changes ("exitCode" → exit, code), and
// each word, in lower case, is read by wordKind. It allocates nothing; a
// word over 32 bytes is skipped.
func nameKinds(name []byte) (k wordKinds) {
	var buf [32]byte
	start := 0
	for i := 0; i <= len(name); i++ {
		end, next := -1, 0
		switch {
		case i == len(name) || name[i] == '_' || name[i] == '-' || name[i] == '.' || name[i] == ' ':
			end, next = i, i+1
		case i > start && 'A' <= name[i] && name[i] <= 'Z' && 'a' <= name[i-1] && name[i-1] <= 'z':
			end, next = i, i
		}
		if end < 0 {
			continue
		}
		if w := name[start:end]; len(w) > 0 && len(w) <= len(buf) {
			for j, c := range w {
				if 'A' <= c && c <= 'Z' {
					c += 'a' - 'A'
				}
				buf[j] = c
			}
			k = k.with(wordKind(buf[:len(w)]))
		}
		start = next
	}
	return k
}

// wordKinds says what the words of a member name say.
type wordKinds struct{ exit, output, signal, place bool }

func (k wordKinds) with(o wordKinds) wordKinds {
	return wordKinds{k.exit || o.exit, k.output || o.output, k.signal || o.signal, k.place || o.place}
}

// wordKind says what one word of a member name (in lower case) says:
// words that say exit (and "signal", which says both), output, or the
// place where output is rather than the output ("path", "file", ...). It
// is a switch rather than a set of maps because it runs for every word of
// every member a dialect does not read (TestWordKinds holds the lists).
func wordKind(w []byte) wordKinds {
	switch string(w) {
	case "exit", "code", "status", "exitcode", "exitstatus", "returncode", "rc":
		return wordKinds{exit: true}
	case "signal":
		return wordKinds{exit: true, signal: true}
	case "output", "stdout", "stderr", "data", "text",
		// Words an agent may move output under: a build that renames
		// rawOutput.output to result or a terminal's data to chunk would
		// otherwise lose its output unsaid.
		"out", "result", "chunk", "body", "log", "content":
		return wordKinds{output: true}
	case "path", "file", "filename", "dir", "url", "uri", "id":
		return wordKinds{place: true}
	}
	return wordKinds{}
}

// minOutputBytes is the size of a string (as sent, escaped) from which a
// member named like output counts as output; a shorter one counts when it
// holds a line break.
const minOutputBytes = 16

// resultLike classifies a member the dialect does not read by its name
// and value: UnrecognizedExit, UnrecognizedOutput or "".
func resultLike(key, val []byte) string {
	val = bytes.TrimSpace(val)
	if len(val) == 0 || len(key) > 66 {
		return ""
	}
	name := key
	if len(name) >= 2 {
		name = name[1 : len(name)-1]
	}
	if bytes.IndexByte(name, '\\') >= 0 {
		name = []byte(keyText(key))
	}
	kinds := nameKinds(name)
	exit, output, signal := kinds.exit, kinds.output && !kinds.place, kinds.signal
	if exit {
		switch c := val[0]; {
		case c == '-' || ('0' <= c && c <= '9'):
			if CodeFromString(string(val)).Known {
				return accum.UnrecognizedExit
			}
		case c == '"':
			if s, ok := jsonlit.Unquote(val); ok {
				s = strings.TrimSpace(s)
				if CodeFromString(s).Known || (signal && len(s) > 3 && strings.EqualFold(s[:3], "SIG")) {
					return accum.UnrecognizedExit
				}
			}
		}
	}
	if output {
		switch val[0] {
		case '"':
			if len(val)-2 >= minOutputBytes || bytes.Contains(val, []byte(`\n`)) {
				return accum.UnrecognizedOutput
			}
		case '[':
			n := 0
			jsonlit.EachElement(val, func(el []byte) bool {
				if c := firstByte(el); c == '"' || ('0' <= c && c <= '9') {
					n++
				}
				return false
			})
			if n > 0 {
				return accum.UnrecognizedOutput
			}
		}
	}
	return ""
}

// resultLines are the lines of a result block a shell tool writes for the
// model, as they appear in a JSON string literal (a line starts after the
// opening quote or a \n escape; a bracket may open it, as in
// `[Process exited with code 3]`; "with status" is read as "with code",
// and `[exit: 3]` too, as a build may reword them so). `exit status N` counts only as a text's
// first line: it is also what Go's os/exec prints for a program that
// failed (`go run`, `go test`), so a command's own output often holds it,
// at its end or a few lines before.
var resultLines = regexp.MustCompile(`(?:^"|\\n)\s*[\[<(]?(?:(?:Exit (?:Code|code|status|Status)|exit (?:Code|code|Status)|[Ee]xit\s*[:=])\s*[:=]?\s*-?\d+\s*[\]>)]?\s*(?:\\[nr]|"$)|(?:Process exited|Command exited|Exited) with (?:code|status) -?\d+)|^"\s*exit status\s*[:=]?\s*-?\d+\s*(?:\\[nr]|"$)`)

// resultBlockWindow is how much of a literal's head and of its tail is
// searched for result lines: result blocks are at either end.
const resultBlockWindow = 4 << 10

// resultBlock says whether the JSON string literal lit holds a line of a
// result block near its start or end. The pattern runs only on the few
// bytes around each "xit" (of Exit, exit, exited): most outputs have none.
func resultBlock(lit []byte) bool {
	if len(lit) <= 2*resultBlockWindow {
		return resultIn(lit, true)
	}
	return resultIn(lit[:resultBlockWindow], true) || resultIn(lit[len(lit)-resultBlockWindow:], false)
}

// resultIn looks for result lines in w, a piece of a literal (whole when
// it starts the literal).
func resultIn(w []byte, head bool) bool {
	for off := 0; ; {
		i := bytes.Index(w[off:], []byte("xit"))
		if i < 0 {
			return false
		}
		i += off
		// The line starts at most a few bytes before: "Process exited" is
		// the longest lead.
		from := max(0, i-12)
		if from > 0 || !head {
			if j := bytes.LastIndex(w[from:i], []byte(`\n`)); j >= 0 {
				from += j
			} else {
				off = i + 3
				continue
			}
		}
		if resultLines.Match(w[from:min(len(w), i+48)]) {
			return true
		}
		off = i + 3
	}
}
