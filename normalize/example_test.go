package normalize_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/acpnorm/acpnorm/normalize"
)

// frames reads the JSON-RPC messages of a recording (one
// {"dir": ..., "msg": {...}} object a line).
func frames(path string) [][]byte {
	f, err := os.Open(path)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var line struct{ Msg json.RawMessage }
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			panic(err)
		}
		out = append(out, line.Msg)
	}
	return out
}

// Feed every frame of a recorded opencode session (the user rejects one
// command, cancels the next while it prints, then a third exits 4) and fold
// the revisions into the state of each shell call, as a consumer does.
func Example() {
	n := normalize.New()
	type call struct {
		last      *normalize.ShellExec
		output    string
		revisions int
	}
	calls := map[string]*call{}
	var order []string
	for _, frame := range frames("testdata/opencode-1.18.33_bash-ask_scenario-dev.ndjson") {
		execs, err := n.Feed("s1", frame)
		if err != nil {
			fmt.Println("frame error:", err)
		}
		for _, x := range execs {
			c := calls[x.ToolCallID]
			if c == nil {
				c = &call{}
				calls[x.ToolCallID] = c
				order = append(order, x.ToolCallID)
			}
			c.last, c.revisions = x, c.revisions+1
			c.output = x.Output.Apply(c.output)
		}
	}
	for _, id := range order {
		c := calls[id]
		exit := "unknown"
		if c.last.ExitCode != nil {
			exit = fmt.Sprint(*c.last.ExitCode)
		}
		fmt.Printf("%s: %q in %s\n", c.last.Dialect, c.last.Command, c.last.Cwd)
		fmt.Printf("  %d revisions, %s %s, exit %s\n", c.revisions, c.last.State, c.last.Outcome, exit)
		fmt.Printf("  output: %q\n", strings.TrimSpace(c.output))
	}
	// Output:
	// opencode: "rm -f notes.txt && echo removed" in /home/dev/work/proj-CKGs84
	//   5 revisions, ENDED CANCELLED, exit unknown
	//   output: ""
	// opencode: "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do echo tick$i; sleep 0.25; done" in /home/dev/work/proj-CKGs84
	//   16 revisions, ENDED CANCELLED, exit unknown
	//   output: "tick1\ntick2\ntick3\ntick4\ntick5\ntick6\ntick7\ntick8\ntick9\ntick10\ntick11"
	// opencode: "echo after-cancel; exit 4" in /home/dev/work/proj-CKGs84
	//   6 revisions, ENDED FAILED, exit 4
	//   output: "after-cancel"
}

// A frame that cannot be used gives a *FrameError; the session goes on.
func ExampleNormalizer_Feed_frameError() {
	n := normalize.New()
	_, err := n.Feed("s1", []byte(`{"jsonrpc":"2.0","method":"session/update","params":`))
	var fe *normalize.FrameError
	if errors.As(err, &fe) {
		fmt.Println(fe.Code)
	}
	// Output:
	// InvalidArgument
}

// The text fields of a revision apply to what the consumer holds: Append
// adds, Replace replaces, nil keeps.
func ExampleText_Apply() {
	held := ""
	for _, t := range []*normalize.Text{
		{Text: "build", Mode: normalize.Append},
		{Text: "ing...\n", Mode: normalize.Append},
		nil,
		{Text: "building...\ndone\n", Mode: normalize.Replace},
	} {
		held = t.Apply(held)
	}
	fmt.Printf("%q\n", held)
	// Output:
	// "building...\ndone\n"
}
