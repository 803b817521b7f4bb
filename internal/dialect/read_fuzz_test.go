package dialect

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/internal/accum"
)

// FuzzRead feeds arbitrary bytes to every dialect. Whatever arrives, Read
// must not panic, every error must be a bad-frame error that names the
// problem, and every observation must name a call or a terminal. And no
// dialect may make a success of a frame that itself reports a signal or an
// outcome of failure: folded into a call, such a frame never gives
// SUCCEEDED (reportsFailure is the independent judge).
func FuzzRead(f *testing.F) {
	// Seeds: every distinct tool-call frame shape of the real recordings,
	// kept small, plus a few broken ones.
	files, _ := filepath.Glob("../../test/testdata/recordings/*.ndjson")
	for _, file := range files {
		fh, err := os.Open(file)
		if err != nil {
			f.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 8<<20)
		for n := 0; sc.Scan() && n < 40; n++ {
			var line struct {
				Msg json.RawMessage `json:"msg"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && len(line.Msg) < 4096 {
				f.Add([]byte(line.Msg))
			}
		}
		fh.Close()
	}
	for _, s := range []string{
		``, `null`, `[]`, `{}`, `{"method":"session/update"}`,
		`{"method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"x","rawOutput":[1,2],"content":"nope","_meta":{"terminal_exit":{"exit_code":"1e3"}}}}}`,
		`{"method":"session/update","params":{"update":{"sessionUpdate":"terminal_update","terminalId":"t","output":{"data":"%%%"},"exitStatus":{"exitCode":1.5}}}}`,
		`{"id":1,"result":{"agentInfo":{"name":7}}}`,
		`{"method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"q","status":"failed","rawOutput":{"type":"shell_result","output":"x","exitCode":0,"signal":9,"outcome":"failed"}}}}`,
		`{"method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","rawOutput":{"exitCode":0,"stdout":"","stderr":"","signal":"TERM"}}}}`,
		`{"method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"t","status":"completed","_meta":{"terminal_exit":{"terminal_id":"t","exit_code":0,"signal":15}}}}}`,
		`{"method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"o","status":"completed","rawOutput":{"output":"","metadata":{"exit":0,"signal":"SIGKILL","outcome":"timed_out"}}}}}`,
	} {
		f.Add([]byte(s))
	}
	dialects := All()
	f.Fuzz(func(t *testing.T, msg []byte) {
		for _, d := range dialects {
			fr, err := Read(d, msg)
			if err != nil {
				if !errors.Is(err, ErrBadFrame) || len(err.Error()) < len("bad frame: x") {
					t.Fatalf("%s: error %q is not a named bad-frame error", d.Info().Name, err)
				}
				continue
			}
			against := reportsFailure(msg)
			for _, o := range fr.Observations {
				if o.ToolCallID == "" && o.TerminalID == "" && !o.PermissionAsk {
					t.Fatalf("%s: observation names neither a call nor a terminal: %+v", d.Info().Name, o)
				}
				if against == "" {
					continue
				}
				c := accum.NewCall("c", 1<<10)
				c.Apply(&o)
				c.End(false, "ended")
				if r, _ := c.Revision(); r.Outcome == accum.Succeeded {
					t.Fatalf("%s: SUCCEEDED (%s) from a frame that reports %s", d.Info().Name, r.OutcomeReason, against)
				}
			}
		}
	})
}

// reportsFailure judges, with encoding/json and nothing of this package,
// whether a session/update frame's structured result reports a signal
// (`signal` in rawOutput, rawOutput.metadata, _meta.terminal_exit or
// exitStatus: a nonzero number, or a text that is not empty, "none", null
// or a zero), an outcome of "failed", "timed_out" or "cancelled", or
// `timed_out: true`. It returns what it found, or "".
func reportsFailure(msg []byte) string {
	var m struct {
		Method string `json:"method"`
		Params struct {
			Update map[string]any `json:"update"`
		} `json:"params"`
	}
	d := json.NewDecoder(bytes.NewReader(msg))
	d.UseNumber()
	if d.Decode(&m) != nil || m.Method != "session/update" {
		return ""
	}
	obj := func(v any) map[string]any { o, _ := v.(map[string]any); return o }
	u := m.Params.Update
	out := obj(u["rawOutput"])
	meta := obj(u["_meta"])
	for _, holder := range []map[string]any{out, obj(out["metadata"]), obj(meta["terminal_exit"]), obj(u["exitStatus"])} {
		if v, ok := holder["signal"]; ok && isSignal(v) {
			return "signal " + strings.TrimSpace(jsonText(v))
		}
	}
	for _, holder := range []map[string]any{out, obj(out["metadata"])} {
		if w, _ := holder["outcome"].(string); w == "failed" || w == "timed_out" || w == "cancelled" {
			return "outcome " + w
		}
		if b, _ := holder["timed_out"].(bool); b {
			return "timed_out"
		}
	}
	return ""
}

func isSignal(v any) bool {
	switch v := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		return err != nil || f != 0
	case string:
		s := strings.ToLower(strings.TrimSpace(v))
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return f != 0
		}
		switch s {
		case "", "none", "(none)", "null", "nil", "n/a", "false":
			return false
		}
		return true
	}
	return false
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
