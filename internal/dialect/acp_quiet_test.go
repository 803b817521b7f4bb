package dialect

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/internal/jsonlit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// quietSeeds are session/update frames of a kind no dialect observes,
// plain ones that quietFrame skips (quiet true) and ones it must leave to
// the full path (quiet false): every shape in which the typed decode and
// its JSON-RPC checks could say something else than the empty frame.
var quietSeeds = []struct {
	msg   string
	quiet bool
}{
	{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}`, true},
	{` {"method":"session/update","params":{"update":{"content":[1,{"a":null}],"sessionUpdate":"usage_update","used":5}},"other":[true]} `, true},
	{`{"params":{"update":{"sessionUpdate":"current_mode_update","currentModeId":"x"},"sessionId":"s"},"method":"session/update","jsonrpc":"2.0"}`, true},
	// The first look finds a nested member naming a tool call first: not
	// skipped (a text cannot hold the quotes it looks for unescaped).
	{`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"content":{"text":"\"sessionUpdate\":\"tool_call\""},"sessionUpdate":"agent_message_chunk"}}}`, true},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"_meta":{"sessionUpdate":"tool_call"},"sessionUpdate":"agent_message_chunk"}}}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"_meta":{"sessionUpdate":"plan"},"sessionUpdate":"tool_call","toolCallId":"a","kind":"execute"}}}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate" : "plan"}}}`, false},
	{"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"update\":{\"sessionUpdate\":\"plan\",\"entries\":[{\"content\":\"\xff\xfe bad utf-8\"}]}}}", true},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"plan","entries":[],"entries":{}},"sessionId":1,"sessionId":"x"}}`, true},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"agent_thought_chunk","toolCallId":"a","kind":"execute","rawInput":{"command":"ls"},"rawOutput":{"exit_code":1},"_meta":{"terminal_exit":{"exit_code":2}}}}}`, true},

	// Kinds observed, unknown, or not a plain string.
	{`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call","toolCallId":"a","kind":"execute"}}}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","status":"completed"}}}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"terminal_output_chunk","terminalId":"t","data":"x"}}}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"some_new_kind","toolCallId":"a"}}}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"agent_message\u005fchunk"}}}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool\u005fcall","toolCallId":"a","kind":"execute"}}}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":7}}}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":null}}}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"content":{}}}}`, false},
	// The kind given twice, or by a name encoding/json folds to it.
	{`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"plan","sessionUpdate":"tool_call","toolCallId":"a","kind":"execute"}}}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"plan","SessionUpdate":"tool_call","toolCallId":"a","kind":"execute"}}}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"plan","\u0073essionUpdate":"tool_call","toolCallId":"a","kind":"execute"}}}`, false},
	{"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"update\":{\"sessionUpdate\":\"plan\",\"\xc5\xbfessionUpdate\":\"tool_call\",\"toolCallId\":\"a\",\"kind\":\"execute\"}}}", false},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"plan"},"Update":{"sessionUpdate":"tool_call","toolCallId":"a","kind":"execute"}}}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"plan"},"update":{"sessionUpdate":"tool_call","toolCallId":"a","kind":"execute"}}}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"plan"}},"Params":null}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"plan"}},"params":{"update":{"sessionUpdate":"tool_call","toolCallId":"a"}}}`, false},
	// The JSON-RPC layer: types, members of another kind of message.
	{`{"jsonrpc":2,"method":"session/update","params":{"update":{"sessionUpdate":"plan"}}}`, false},
	// A null jsonrpc and an escaped method read as the full path reads
	// them (the empty frame): skipped.
	{`{"jsonrpc":null,"method":"session/update","params":{"update":{"sessionUpdate":"plan"}}}`, true},
	{`{"jsonrpc":"2.0","jsonrpc":3,"method":"session/update","params":{"update":{"sessionUpdate":"plan"}}}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","method":5,"params":{"update":{"sessionUpdate":"plan"}}}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","Method":"session/new","params":{"update":{"sessionUpdate":"plan"}}}`, false},
	{`{"jsonrpc":"2.0","method":"session\/update","params":{"update":{"sessionUpdate":"plan"}}}`, true},
	// A method readFrame does not read: skipped whatever the params,
	// unless the envelope is wrong.
	{`{"jsonrpc":"2.0","method":"_x.ai/session/update","params":{"update":{"sessionUpdate":"plan"}}}`, true},
	{`{"jsonrpc":"2.0","method":"_x.ai/session_notification","params":{"update":{"sessionUpdate":"pending_interaction","tool_call_id":"a","kind":"permission"}}}`, true},
	// ... but for an update of a kind some dialect observes (see
	// methodUpdates).
	{`{"jsonrpc":"2.0","method":"_x.ai/session_notification","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"a","status":"completed","rawOutput":{"exit_code":1}}}}`, false},
	{`{"jsonrpc":"2.0","method":"_x.ai/task_completed","params":{"update":{"sessionUpdate":"task_completed","task_snapshot":{"task_id":"a","exit_code":3,"output":"x"}}}}`, false},
	{`{"jsonrpc":"2.0","method":"_x.ai/task_completed","params":{"update":{"sessionUpdate":"task\u005fcompleted","task_snapshot":{"task_id":"a","exit_code":3,"output":"x"}}}}`, false},
	{`{"jsonrpc":"2.0","method":"_x.ai/task_completed","params":{"update":{"sessionUpdate":"task_completed","sessionUpdate":"plan"}}}`, false},
	{`{"jsonrpc":"2.0","method":"_x.ai/task_completed","params":{"update":{"sessionUpdate":["task_completed"],"task_snapshot":{"task_id":"a"}}}}`, true},
	{`{"jsonrpc":"2.0","id":7,"method":"_x.ai/queue/changed","params":{"queue":[1,"a",{}]},"result":{"stopReason":"cancelled"},"error":null}`, true},
	{`{"jsonrpc":"2.0","method":"cursor/update_todos","params":{"todos":[{"content":"x"}]}}`, true},
	{`{"method":"some/vendor","params":null}`, true},
	{`{"method":"_x.ai/a","params":{"sessionId":5,"update":{"sessionUpdate":7}}}`, true},
	// An escape in the name is left to the full path by the first look.
	{`{"method":"_x.ai\/escaped","params":{}}`, false},
	{"{\"method\":\"_x.ai/\xff\",\"params\":{}}", true},
	{`{"method":"session/prompt","params":{"sessionId":"s","prompt":[]},"jsonrpc":"2.0","id":2}`, false},
	{`{"method":"initialize","id":0,"params":{"protocolVersion":1}}`, false},
	{`{"method":"terminal/create","id":3,"params":{"command":"ls"}}`, false},
	{`{"method":"session/cancel","params":{"sessionId":"s"}}`, false},
	{`{"method":"session\/cancel","params":{"sessionId":"s"}}`, false},
	{`{"method":"","id":1,"result":{}}`, false},
	{`{"params":{"method":"_x.ai/a"},"method":"session/prompt","id":1}`, false},
	{`{"params":{"method":"_x.ai/a"},"id":1,"result":{"stopReason":"end_turn"}}`, false},
	{`{"method":"_x.ai/a","params":[1]}`, false},
	{`{"method":"_x.ai/a","params":{"update":"x"}}`, false},
	{`{"method":"_x.ai/a","params":{"update":{"sessionUpdate":"plan"},"Update":{}}}`, false},
	{`{"jsonrpc":1,"method":"_x.ai/a"}`, false},
	{`{"method":"_x.ai/a","method":"session/cancel"}`, false},
	{`{"method":"_x.ai/a","Method":"session/cancel"}`, false},
	{`{"method":"_x.ai/a","params":{}} {}`, false},
	{`{"method":"_x.ai/a","params":{"a":"\q"}}`, false},
	{`{"jsonrpc":"2.0","id":1,"method":"session/update","params":{"update":{"sessionUpdate":"plan"}}}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"plan"}},"result":{"stopReason":"cancelled"}}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"plan"}},"error":{"code":1}}`, false},
	{`{"jsonrpc":"2.0","params":{"update":{"sessionUpdate":"plan"}}}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":null}`, false},
	{`{"jsonrpc":"2.0","method":"session/update"}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":[{"update":{"sessionUpdate":"plan"}}]}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"update":null}}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"update":[]}}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":{}}`, false},
	// Not one valid JSON object.
	{`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"plan"}}} x`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"plan"}}}{}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"plan","entries":[}}}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"plan","entries":"bad \q"}}}`, false},
	{`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"plan"}}`, false},
	{`[{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"plan"}}}]`, false},
	{"\ufeff{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"update\":{\"sessionUpdate\":\"plan\"}}}", false},
	{``, false}, {`null`, false},
}

// skipped says whether quietFrame skips msg.
func skipped(msg []byte) bool {
	_, quiet := quietFrame(msg)
	return quiet
}

// readFull is Read without quietFrame.
func readFull(d Dialect, msg []byte) (Frame, error) {
	noPrescan.Store(true)
	defer noPrescan.Store(false)
	return Read(d, msg)
}

// readSame fails when Read gives another frame or error than the full
// path, and says whether quietFrame skipped the frame.
func readSame(t *testing.T, dialects []Dialect, msg []byte) bool {
	t.Helper()
	sign, quiet := quietFrame(msg)
	for _, d := range dialects {
		got, gotErr := Read(d, msg)
		want, wantErr := readFull(d, msg)
		if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Fatalf("%s: %q (quiet %v)\nread:      error %v\nfull path: error %v", d.Info().Name, msg, quiet, gotErr, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: %q (quiet %v)\nread:      %+v\nfull path: %+v", d.Info().Name, msg, quiet, got, want)
		}
		if quiet && (wantErr != nil || !reflect.DeepEqual(want, Frame{Sign: sign})) {
			t.Fatalf("%s: %q is skipped as %q, and the full path reads %+v, %v", d.Info().Name, msg, sign, want, wantErr)
		}
	}
	return quiet
}

func TestQuietUpdateSeeds(t *testing.T) {
	// A kind past the head quietFrame looks in is read by the full path.
	late := `{"jsonrpc":"2.0","method":"session/update","params":{"update":{"content":{"text":"` + strings.Repeat("x", quietLookBytes) + `"},"sessionUpdate":"agent_message_chunk"}}}`
	for _, s := range append(quietSeeds, struct {
		msg   string
		quiet bool
	}{late, false}) {
		assert.Equal(t, s.quiet, skipped([]byte(s.msg)), "%s", s.msg)
		readSame(t, All(), []byte(s.msg))
	}
}

// TestQuietUpdateIsTheFullRead: every frame of every recording reads the
// same with and without quietFrame, with every dialect.
func TestQuietUpdateIsTheFullRead(t *testing.T) {
	frames := recordingFrames(t, 16<<20, true)
	require.Greater(t, len(frames), 10000)
	dialects := All()
	quiet := 0
	for _, m := range frames {
		if readSame(t, dialects, m) {
			quiet++
		}
	}
	t.Logf("%d of %d recorded frames skipped", quiet, len(frames))
	require.Greater(t, quiet, len(frames)/5, "the recordings are full of updates about everything but tool calls")
}

// FuzzQuietUpdate looks for a frame that Read reads differently with and
// without quietFrame.
//
//	go test ./internal/dialect -run '^$' -fuzz FuzzQuietUpdate -fuzztime 20000x
func FuzzQuietUpdate(f *testing.F) {
	var seeds []string
	for _, s := range quietSeeds {
		seeds = append(seeds, s.msg)
	}
	seedFrames(f, seeds...)
	dialects := All()
	f.Fuzz(func(t *testing.T, msg []byte) {
		readSame(t, dialects, msg)
		// And with encoding/json alone, as the full path is held to it.
		if sign, quiet := quietFrame(msg); quiet {
			jsonlit.SetEncodingJSONOnly(true)
			defer jsonlit.SetEncodingJSONOnly(false)
			for _, d := range dialects {
				fr, err := Read(d, msg)
				if err != nil || !reflect.DeepEqual(fr, Frame{Sign: sign}) {
					t.Fatalf("%s: %q is skipped as %q, and encoding/json reads %+v, %v", d.Info().Name, msg, sign, fr, err)
				}
			}
		}
	})
}

// toolLike is an update of kind k with every member some dialect reads
// for a tool call or a terminal.
func toolLike(method, k string) []byte {
	return []byte(`{"jsonrpc":"2.0","method":"` + method + `","params":{"sessionId":"s","update":{"sessionUpdate":"` + k + `",` +
		`"toolCallId":"c1","terminalId":"t1","kind":"execute","status":"completed","title":"ls -la","command":"ls","cwd":"/tmp",` +
		`"content":[{"type":"content","content":{"type":"text","text":"out"}},{"type":"terminal","terminalId":"t1"}],` +
		`"rawInput":{"command":"ls","cmd":["ls"],"commands":["ls"],"cwd":"/tmp"},` +
		`"rawOutput":{"output":"out","stdout":"out","exit_code":1,"exitCode":1,"metadata":{"exit":1,"output":"out"}},` +
		`"output":{"data":"b3V0"},"exitStatus":{"exitCode":1},"data":"out",` +
		`"_meta":{"terminal_info":{"terminal_id":"t1"},"terminal_output":{"terminal_id":"t1","data":"out"},"terminal_exit":{"terminal_id":"t1","exit_code":1}},` +
		`"task_snapshot":{"task_id":"c1","exit_code":1,"output":"out","completed":true}}}}`)
}

// TestQuietUpdatesObserveNothing holds sessionUpdates to the dialects: no
// dialect observes anything in an update of a kind declared quiet, however
// much of a tool call it carries, and each kind declared observed is
// observed by some dialect.
func TestQuietUpdatesObserveNothing(t *testing.T) {
	for k, observed := range sessionUpdates {
		method := "session/update"
		if k == "task_completed" {
			method = "_x.ai/session/update" // Grok's
		}
		msg := toolLike(method, k)
		seen := false
		for _, d := range All() {
			fr, err := readFull(d, msg)
			require.NoError(t, err, "%s: %s", d.Info().Name, k)
			if !observed {
				require.Equal(t, Frame{}, fr, "%s reads a %s update", d.Info().Name, k)
			}
			seen = seen || len(fr.Observations) > 0
		}
		assert.Equal(t, observed, seen, "%s: declared observed %v", k, observed)
		assert.Equal(t, !observed, skipped(msg), "%s", k)
		// Under a method of an agent's own, an update of a kind declared
		// quiet, or of a kind not declared, is not observed either.
		for _, method := range []string{"_x.ai/session/update", "_x.ai/session_notification", "vendor/update"} {
			for _, k := range []string{k, "some_new_kind"} {
				if sessionUpdates[k] {
					continue
				}
				msg := toolLike(method, k)
				assert.True(t, skipped(msg), "%s %s", method, k)
				for _, d := range All() {
					fr, err := readFull(d, msg)
					require.NoError(t, err, "%s: %s %s", d.Info().Name, method, k)
					require.Empty(t, fr.Observations, "%s reads a %s update under %s", d.Info().Name, k, method)
				}
			}
		}
	}
}

// quietKindInByName is quietKindIn as its comment says it: the first
// `"sessionUpdate":"` wholly in the first quietLookBytes, found by a
// search for the whole name.
func quietKindInByName(msg []byte) (quiet, observed bool) {
	head := msg[:min(len(msg), quietLookBytes)]
	i := bytes.Index(head, []byte(`"sessionUpdate":"`))
	if i < 0 {
		return false, false
	}
	rest := msg[i+len(`"sessionUpdate":"`):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return false, false
	}
	observed, known := sessionUpdates[string(rest[:j])]
	return known && !observed, observed
}

// kindLook is what quietKindIn (or quietKindInByName) says, as one value.
type kindLook struct{ quiet, observed bool }

func lookOf(quiet, observed bool) kindLook { return kindLook{quiet, observed} }

// quietKindIn searches for the tail of the name and then its head; it
// finds what a search for the whole name finds, on every recorded frame
// and where the two could part: the name at the head's edge, tails
// without the head, a head without the tail, frames shorter than either.
func TestQuietKindInIsTheNameSearch(t *testing.T) {
	pad := func(n int) string { return strings.Repeat("x", n) }
	name := `"sessionUpdate":"`
	cases := []string{"", `"`, `Update":"`, `"session`, `sionUpdate":"plan"`,
		name + `plan"`, name + `plan`, name, `Update":"plan"` + name + `plan"`,
		`"sessionXUpdate":"plan"` + name + `tool_call"`, `"SessionUpdate":"plan"`,
		`sessionUpdate":"plan"`, `""sessionUpdate":"plan"`, name + name + `plan"`,
		`Update":"Update":"` + name + `plan"`, `"session"sessionUpdate":"plan"`}
	for n := quietLookBytes - len(name) - 2; n <= quietLookBytes+1; n++ {
		cases = append(cases, `{"a":"`+pad(n)+name+`plan"}`, pad(n)+`"session`+`Update":"plan"`, pad(n)+name+`tool_call"`)
	}
	for _, c := range cases {
		assert.Equal(t, lookOf(quietKindInByName([]byte(c))), lookOf(quietKindIn([]byte(c))), "%q", c)
	}
	frames := recordingFrames(t, 16<<20, true)
	quiet, observed := 0, 0
	for _, m := range frames {
		got := lookOf(quietKindIn(m))
		require.Equal(t, lookOf(quietKindInByName(m)), got, "%s", m)
		if got.quiet {
			quiet++
		}
		if got.observed {
			observed++
		}
	}
	require.Greater(t, quiet, len(frames)/5)
	require.Greater(t, observed, len(frames)/5)
}

// TestMethodsReadAreTheSwitch holds methodsRead to the cases of
// readFrame's switch on the method, as the source spells them (a string
// or a constant of this package), so that a case added to the one is not
// missing from the other: quietFrame would skip its messages.
func TestMethodsReadAreTheSwitch(t *testing.T) {
	fset := token.NewFileSet()
	consts := map[string]string{}
	var cases []ast.Expr
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				for i, id := range n.Names {
					if i >= len(n.Values) {
						break
					}
					if lit, ok := n.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						consts[id.Name], _ = strconv.Unquote(lit.Value)
					}
				}
			case *ast.FuncDecl:
				if n.Name.Name != "readFrame" {
					return false
				}
				ast.Inspect(n.Body, func(n ast.Node) bool {
					if s, ok := n.(*ast.SwitchStmt); ok {
						if id, ok := s.Tag.(*ast.Ident); ok && id.Name == "method" {
							for _, c := range s.Body.List {
								cases = append(cases, c.(*ast.CaseClause).List...)
							}
						}
					}
					return true
				})
			}
			return true
		})
	}
	var inSwitch []string
	for _, c := range cases {
		switch c := c.(type) {
		case *ast.BasicLit:
			s, err := strconv.Unquote(c.Value)
			require.NoError(t, err)
			inSwitch = append(inSwitch, s)
		case *ast.Ident:
			s, ok := consts[c.Name]
			require.True(t, ok, "case %s: not a string constant of this package", c.Name)
			inSwitch = append(inSwitch, s)
		default:
			t.Fatalf("a case of readFrame's switch that is neither a string nor a constant: %T", c)
		}
	}
	require.Len(t, inSwitch, 14, "the cases of readFrame's switch on the method")
	assert.ElementsMatch(t, slices.Collect(maps.Keys(methodsRead)), inSwitch)
}
