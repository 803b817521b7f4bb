package dialect

import (
	"encoding/json"
	"testing"
)

func TestCommandFromArgv(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{"bash", "-lc", "npm test"}, "npm test"},
		{[]string{"/bin/bash", "-lc", "printf 'a\\nb\\n'; exit 3"}, "printf 'a\\nb\\n'; exit 3"},
		{[]string{"sh", "-c", "ls | wc -l"}, "ls | wc -l"},
		{[]string{"/usr/bin/zsh", "-lc", "echo hi"}, "echo hi"},
		{[]string{"bash", "-l", "-c", "echo hi"}, "echo hi"},
		{[]string{"bash", "script.sh"}, "bash script.sh"},
		{[]string{"bash", "-l", "x"}, "bash -l x"},
		{[]string{"python3", "-c", "print(1)"}, "python3 -c 'print(1)'"},
		{[]string{"git", "commit", "-m", "it's"}, `git commit -m 'it'\''s'`},
		{[]string{"ls"}, "ls"},
	} {
		if got := CommandFromArgv(tc.argv); got != tc.want {
			t.Errorf("CommandFromArgv(%q) = %q, want %q", tc.argv, got, tc.want)
		}
	}
}

func TestUnwrapShellString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/bin/zsh -lc 'echo hello'", "echo hello"},
		{`bash -c "echo \"hi\" there"`, `echo "hi" there`},
		{`/bin/bash -lc 'printf '\''a'\'''`, "printf 'a'"},
		{"echo hello", "echo hello"},
		{"bash -lc echo hello", "bash -lc echo hello"},
		{"bash -lc 'unbalanced", "bash -lc 'unbalanced"},
		{"bash -lc 'x' && rm y", "bash -lc 'x' && rm y"},
		{"", ""},
	} {
		if got := UnwrapShellString(tc.in); got != tc.want {
			t.Errorf("UnwrapShellString(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCommandLineLenient(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`"npm test"`, "npm test"},
		{`["bash","-lc","npm test"]`, "npm test"},
		{`["ls","-la"]`, "ls -la"},
		{`["ls",3]`, ""},
		{`42`, ""},
		{`{"x":1}`, ""},
		{`null`, ""},
	} {
		var v struct {
			Command CommandLine `json:"command"`
		}
		if err := json.Unmarshal([]byte(`{"command":`+tc.in+`}`), &v); err != nil {
			t.Errorf("%s: error %v", tc.in, err)
		}
		if v.Command.Line != tc.want {
			t.Errorf("%s: got %q want %q", tc.in, v.Command.Line, tc.want)
		}
	}
}

func TestDecodeLenientSkipsWrongTypes(t *testing.T) {
	var v struct {
		A string `json:"a"`
		B int    `json:"b"`
		C string `json:"c"`
	}
	if err := decodeLenient([]byte(`{"a":1,"b":"x","c":"ok"}`), &v); err != nil {
		t.Fatal(err)
	}
	if v.C != "ok" || v.A != "" || v.B != 0 {
		t.Errorf("got %+v", v)
	}
	if err := decodeLenient([]byte(`{"a":`), &v); err == nil {
		t.Error("syntax error not reported")
	}
}
