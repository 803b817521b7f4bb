package dialect

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

// objectDecoded is Client.object without its shortcut: every level decoded.
func objectDecoded(c Client, path ...string) bool {
	if c.caps == "" {
		return false
	}
	v := json.RawMessage(c.caps)
	for _, k := range path {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(v, &m); err != nil {
			return false
		}
		var ok bool
		if v, ok = m[k]; !ok {
			return false
		}
	}
	v = bytes.TrimSpace(v)
	return len(v) > 0 && v[0] == '{'
}

var clientObjectCaps = []string{
	``, `{}`, `{"terminal":true}`, `{"_meta":{"jetbrains":{"air":{}}}}`, `{"_meta":{"jetbrains":{"air":{"commandTitle":true}}}}`,
	`{"_meta":{"jetbrains":{"air":true}}}`, `{"_meta":{"jetbrains":{"\u0061ir":{}}}}`, `{"_meta":{"jetbrains":{"ai\u0072":{}}},"x":"\n"}`,
	`{"_meta":{"jetbrains":{"Air":{}}}}`, `{"_meta":{"jetbrains":{"AIR":{}}}}`, `{"air":{}}`, `{"_meta":{"air":{}}}`,
	`{"_meta":{"jetbrains":{"air":{}},"jetbrains":{}}}`, `{"_meta":{"jetbrains":{},"jetbrains":{"air":{}}}}`,
	`{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true,"_meta":{"terminal_output":true}}`,
	`{"_meta":{"jetbrains":{"air":{}}},"note":"\"air\""}`, `{"note":"\"air\""}`, `{"_meta":{"jetbrains":{"air" : {} }}}`,
	`{"_meta":{"jetbrains":{"air":{}}}}`, `{"_Meta":{"JetBrains":{"air":{}}}}`,
}

func TestClientObjectIsTheDecode(t *testing.T) {
	for _, caps := range clientObjectCaps {
		c := Client{caps: caps}
		for _, path := range [][]string{{"_meta", "jetbrains", "air"}, {"_meta"}, {"terminal"}, {"fs"}} {
			assert.Equal(t, objectDecoded(c, path...), c.object(path...), "%s at %v", caps, path)
		}
	}
	assert.True(t, Client{caps: `{"_meta":{"jetbrains":{"\u0061ir":{}}}}`}.object("_meta", "jetbrains", "air"), "an escaped name")
}

func FuzzClientObject(f *testing.F) {
	for _, caps := range clientObjectCaps {
		f.Add(caps)
	}
	f.Fuzz(func(t *testing.T, caps string) {
		c := Client{caps: caps}
		for _, path := range [][]string{{"_meta", "jetbrains", "air"}, {"air"}} {
			if got, want := c.object(path...), objectDecoded(c, path...); got != want {
				t.Fatalf("object(%q, %v) = %v, decoded %v", caps, path, got, want)
			}
		}
	})
}

// BenchmarkClientObject asks a client that declares no AIR, as a session
// binding claude-agent-acp's dialect does, with and without the shortcut.
//
//	go test ./internal/dialect -run '^$' -bench BenchmarkClientObject
func BenchmarkClientObject(b *testing.B) {
	c := Client{caps: `{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true,"_meta":{"terminal_output":true}}`}
	b.Run("decoded", func(b *testing.B) {
		for b.Loop() {
			if objectDecoded(c, "_meta", "jetbrains", "air") {
				b.Fatal()
			}
		}
	})
	b.Run("object", func(b *testing.B) {
		for b.Loop() {
			if c.object("_meta", "jetbrains", "air") {
				b.Fatal()
			}
		}
	})
}
