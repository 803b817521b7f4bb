package normalize

import (
	"testing"

	"github.com/acpnorm/acpnorm/internal/dialect"
)

// A frame read ahead is used only when it was read with the dialect the
// session reads it with; otherwise it is read again.
func TestReadAheadUsedOnlyWithTheSameDialect(t *testing.T) {
	claude, ok := dialect.Lookup("claude")
	if !ok {
		t.Fatal("no claude dialect")
	}
	msg := []byte(`{"jsonrpc":"2.0","id":0,"result":{"agentInfo":{"name":"real"}}}`)
	marked := &Prepared{with: claude, name: "claude", frame: dialect.Frame{AgentName: "read ahead"}}

	r := &reply{ahead: marked}
	if fr, err := r.readWith(claude, "claude", msg); err != nil || fr.AgentName != "read ahead" {
		t.Fatalf("same dialect: got %q, %v; want the frame read ahead", fr.AgentName, err)
	}
	if r.ahead != nil {
		t.Fatal("a read ahead is used once")
	}
	if fr, _ := r.readWith(claude, "claude", msg); fr.AgentName != "real" {
		t.Fatalf("second read: got %q, want a fresh read", fr.AgentName)
	}

	r = &reply{ahead: marked}
	if fr, _ := r.readWith(dialect.Generic(), dialect.GenericName, msg); fr.AgentName != "real" {
		t.Fatalf("other dialect: got %q, want the frame read again", fr.AgentName)
	}
}

// Prepare reads with the dialect named, else the one expected, else the
// generic one, and reads nothing for an unknown name.
func TestPrepareChoosesTheDialect(t *testing.T) {
	msg := []byte(`{"jsonrpc":"2.0","method":"session/cancel","params":{}}`)
	for _, c := range []struct{ named, expected, want string }{
		{"", "", dialect.GenericName},
		{"auto", "claude", "claude"},
		{"", "claude", "claude"},
		{"codex", "claude", "codex"},
	} {
		p := Prepare(msg, c.named, c.expected)
		if p == nil || p.Dialect() != c.want || p.err != nil || !p.frame.Cancelled {
			t.Errorf("Prepare(%q, %q) = %+v, want a read with %s", c.named, c.expected, p, c.want)
		}
	}
	if Prepare(msg, "nope", "") != nil || Prepare(nil, "", "") != nil {
		t.Error("read ahead with an unknown dialect, or nothing")
	}
}

// A frame read ahead for one build of the agent is used only by a session
// that reads for that build; WithNextReader's report names it.
func TestReadAheadUsedOnlyForTheSameBuild(t *testing.T) {
	msg := []byte(`{"jsonrpc":"2.0","method":"session/cancel","params":{}}`)
	p := Prepare(msg, "", "opencode\n1.2.3")
	if p == nil || p.Dialect() != "opencode" || dialect.VersionOf(p.with).String() != "1.2.3" {
		t.Fatalf("Prepare for a build: %+v", p)
	}
	if q := Prepare(msg, "opencode", "opencode\n1.2.3"); dialect.VersionOf(q.with).String() != "1.2.3" {
		t.Fatal("a dialect named as expected is read for the expected build")
	}
	if q := Prepare(msg, "codex", "opencode\n1.2.3"); q.Dialect() != "codex" || dialect.VersionOf(q.with).Known() {
		t.Fatal("a dialect named other than expected is read unbound")
	}
	opencode, _ := dialect.Lookup("opencode")
	marked := func() *reply {
		return &reply{ahead: &Prepared{with: p.with, name: p.name, frame: dialect.Frame{AgentName: "read ahead"}}}
	}
	if fr, _ := marked().readWith(dialect.Bind(opencode, dialect.ParseVersion("1.2.3")), "opencode", msg); fr.AgentName != "read ahead" {
		t.Error("the same build: want the frame read ahead")
	}
	if fr, _ := marked().readWith(dialect.Bind(opencode, dialect.ParseVersion("1.2.4")), "opencode", msg); fr.AgentName == "read ahead" {
		t.Error("another build: want the frame read again")
	}

	n := New()
	var reader string
	_, err := n.Feed("s", []byte(`{"jsonrpc":"2.0","id":0,"result":{"agentInfo":{"name":"opencode","version":"1.2.3"}}}`), WithNextReader(func(r string) { reader = r }))
	if err != nil || reader != "opencode\n1.2.3" {
		t.Fatalf("WithNextReader reported %q, %v", reader, err)
	}
}
