package dialect

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzRead feeds arbitrary bytes to every dialect. Whatever arrives, Read
// must not panic, every error must be a bad-frame error that names the
// problem, and every observation must name a call or a terminal.
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
			for _, o := range fr.Observations {
				if o.ToolCallID == "" && o.TerminalID == "" && !o.PermissionAsk {
					t.Fatalf("%s: observation names neither a call nor a terminal: %+v", d.Info().Name, o)
				}
			}
		}
	})
}
