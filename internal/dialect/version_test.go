package dialect

import (
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseVersion(t *testing.T) {
	for _, c := range []struct {
		in     string
		known  bool
		str    string
		before string // a version in is before
		after  string // a version in is not before
	}{
		{"0.70.1", true, "0.70.1", "0.71.0", "0.70.1"},
		{"1.0.102", true, "1.0.102", "1.0.103", "1.0.9"},
		{"v2.6.0", true, "2.6.0", "2.6.1", "2.5.99"},
		{"V2.6.0", true, "2.6.0", "v3", "2"},
		{" 0.15.6 ", true, "0.15.6", "0.15.7", "0.15.5"},
		{"0.15.6-nightly.20250911.abc", true, "0.15.6-nightly.20250911.abc", "0.15.6", "0.15.5"},
		{"0.15.6-preview.1", true, "0.15.6-preview.1", "0.15.6-preview.2", "0.15.6-nightly.1"},
		{"1.2.3+build.7", true, "1.2.3", "1.2.4", "1.2.3"},
		{"1.2", true, "1.2.0", "1.2.1", "1.1.9"},
		{"", false, "unknown", "", "99.0.0"},
		{"latest", false, "unknown", "", "0.0.1"},
		{"1.2.3.4", false, "unknown", "", "99.0.0"},
		{"1.2.x", false, "unknown", "", "99.0.0"},
		{"01.2.3", false, "unknown", "", "99.0.0"},
		// 0.0.0 is no release: a build from source or a snapshot names
		// itself so, and is read as the newest.
		{"0.0.0", false, "unknown", "", "0.0.1"},
		{"0.0.0-dev-202612051200", false, "unknown", "", "0.0.1"},
		{"v0.0.0-local", false, "unknown", "", "0.0.1"},
		{"0.0.1", true, "0.0.1", "0.0.2", "0.0.0"},
		{strings.Repeat("1", 70), false, "unknown", "", "99.0.0"},
		{"0.85.1+" + strings.Repeat("a", 70), false, "unknown", "", "99.0.0"},
		// A control character is no part of a version (nor of what is
		// kept, which a reader may split on a line break).
		{"0.7.4\n{}", false, "unknown", "", "99.0.0"},
		{"0.7.4\x00", false, "unknown", "", "99.0.0"},
	} {
		v := ParseVersion(c.in)
		assert.Equal(t, c.known, v.Known(), "%q known", c.in)
		// What is kept (and stored) reads as the same build again.
		assert.Equal(t, c.known, ParseVersion(v.Raw()).Known(), "%q Raw read again", c.in)
		assert.Equal(t, c.str, v.String(), "%q String", c.in)
		assert.LessOrEqual(t, len(v.Raw()), MaxVersionBytes, "%q Raw is bounded", c.in)
		assert.False(t, strings.ContainsFunc(v.Raw(), unicode.IsControl), "%q Raw has no control character", c.in)
		if c.before != "" {
			assert.True(t, v.Before(c.before), "%q before %q", c.in, c.before)
		}
		assert.False(t, v.Before(c.after), "%q before %q", c.in, c.after)
		assert.False(t, v.Before("garbage"), "%q before an unknown version", c.in)
	}
	// An unknown build reads as the newest: before nothing, after all.
	assert.Equal(t, 1, Version{}.Compare(ParseVersion("9.9.9")))
	assert.Equal(t, -1, ParseVersion("0.1.0").Compare(ParseVersion("0.2.0")))
	assert.Equal(t, 0, ParseVersion("v1.0.0").Compare(ParseVersion("1.0")))
	assert.Equal(t, ParseVersion("v1.0.0"), ParseVersion("v1.0.0"), "versions compare with ==")
}

// A version may name the program whose build it is: the build an adapter
// names of the agent behind it, never taken for the adapter's own.
func TestParseVersionNamed(t *testing.T) {
	v := ParseVersion("pi v0.84.4")
	assert.True(t, v.Known())
	assert.Equal(t, "pi", v.Name())
	assert.Equal(t, "pi 0.84.4", v.String())
	assert.Equal(t, "pi v0.84.4", v.Raw())
	assert.True(t, v.Before("0.86.1"))
	assert.Equal(t, v, ParseVersion(v.Raw()), "what is kept reads as the same build again")
	assert.NotEqual(t, ParseVersion("0.84.4"), v, "a named build is not the adapter's")
	assert.Empty(t, ParseVersion("0.84.4").Name())
	// A name is a program's: letters, digits, '.', '_', '-' (so that
	// String is plain text, fit for a metric's label).
	for _, s := range []string{"pi vnext", "pi", "pi 0.84.4 beta", " v0.84.4 x", "a b 1.2.3", "日日日 1.0.0", "p\x00i 1.0.0", "p\"i 1.0.0", strings.Repeat("p", 40) + " 1.0.0"} {
		u := ParseVersion(s)
		assert.False(t, u.Known(), "%q", s)
		assert.Empty(t, u.Name(), "%q", s)
	}
}

// probe is a dialect that reads frames differently before build 1.0.0.
type probe struct{ old bool }

func (probe) Info() Info { return Info{Name: "probe-versioned"} }

func (p probe) read(msg []byte, scope string) (Frame, error) {
	f, err := Generic().read(msg, scope)
	if p.old {
		f.Sign = "old build"
	}
	return f, err
}

func (probe) forVersion(v Version) Dialect { return probe{old: v.Before("1.0.0")} }

func TestBind(t *testing.T) {
	register(probe{})
	defer unregister("probe-versioned")
	d, ok := Lookup("probe-versioned")
	require.True(t, ok)
	msg := []byte(`{"jsonrpc":"2.0","method":"session/prompt","id":3,"params":{}}`)

	old := Bind(d, ParseVersion("0.9.1"))
	assert.Equal(t, "probe-versioned", old.Info().Name, "a bound dialect keeps its name")
	assert.Equal(t, "0.9.1", VersionOf(old).String())
	f, err := Read(old, msg)
	require.NoError(t, err)
	assert.Equal(t, "old build", f.Sign, "the bound value reads as that build")

	for _, v := range []string{"1.0.0", "7.0.0", "", "garbage"} {
		b := Bind(old, ParseVersion(v)) // binding a bound dialect binds the registered one
		f, err := Read(b, msg)
		require.NoError(t, err)
		assert.Empty(t, f.Sign, "build %q reads with the newest rules", v)
		assert.Equal(t, d, Unbound(b))
		assert.Equal(t, ParseVersion(v), VersionOf(b))
	}

	// A dialect that does not know versions reads the same, but says its build.
	g := Bind(Generic(), ParseVersion("0.3.0"))
	assert.Equal(t, "0.3.0", VersionOf(g).String())
	assert.Equal(t, Generic(), Unbound(g))
	assert.False(t, VersionOf(Generic()).Known())
}

func TestAgentVersionRead(t *testing.T) {
	for _, c := range []struct{ msg, want string }{
		{`{"jsonrpc":"2.0","id":0,"result":{"agentInfo":{"name":"x","version":"0.70.1"}}}`, "0.70.1"},
		{`{"jsonrpc":"2.0","id":0,"result":{"agentInfo":{"name":"x","version":" v2.6.0 "}}}`, "v2.6.0"},
		{`{"jsonrpc":"2.0","id":0,"result":{"agentInfo":{"name":"x","version":7}}}`, ""},
		{`{"jsonrpc":"2.0","id":0,"result":{"agentInfo":{"name":"x"}}}`, ""},
		{`{"jsonrpc":"2.0","id":0,"result":{"agentInfo":{"name":"x","version":"` + strings.Repeat("9", 100) + `"}}}`, strings.Repeat("9", MaxVersionBytes-len("…")) + "…"},
		{`{"jsonrpc":"2.0","id":0,"result":{"agentInfo":{"name":"x","version":"0.85.1+` + strings.Repeat("a", 70) + `"}}}`, "0.85.1+" + strings.Repeat("a", MaxVersionBytes-len("0.85.1+…")) + "…"},
		// ACP v2 names the agent `info` in its initialize result.
		{`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"info":{"name":"x","version":"0.101.0"}}}`, "0.101.0"},
		{`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"agentInfo":{"name":"x","version":"1.0"},"info":{"name":"y","version":"2.0"}}}`, "1.0"},
	} {
		f, err := Read(Generic(), []byte(c.msg))
		require.NoError(t, err, c.msg)
		assert.Equal(t, "x", f.AgentName)
		assert.Equal(t, c.want, f.AgentVersion, c.msg)
		if len(c.want) == MaxVersionBytes {
			assert.False(t, ParseVersion(f.AgentVersion).Known(), "a version cut is no build: %s", c.msg)
		}
	}
}

// TestV2InfoOnlyInInitialize: `info` names the agent only in an initialize
// result (one with protocolVersion); another result's `info` is no name.
func TestV2InfoOnlyInInitialize(t *testing.T) {
	f, err := Read(Generic(), []byte(`{"jsonrpc":"2.0","id":3,"result":{"info":{"name":"x","version":"1"}}}`))
	require.NoError(t, err)
	assert.Empty(t, f.AgentName)
	assert.Empty(t, f.AgentVersion)
}
