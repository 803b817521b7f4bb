package dialect

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/mod/semver"
)

// This file is the agent's build: the `agentInfo.version` of its
// `initialize` result, parsed once per session, and the binding of a
// dialect to it. Older builds of one agent often send other wires; a
// dialect that reads them differently implements versioned, and the
// session reads every frame with the dialect value Bind returned.

// MaxVersionBytes bounds the version text kept from an agent: a longer
// `agentInfo.version` is cut and ends with "…", so that it does not parse,
// neither now nor when it is read again (from the store).
const MaxVersionBytes = 64

// cutVersion is s as kept: at most MaxVersionBytes, and a text cut ends
// with "…", which no version has. A control character (a line break, a
// NUL), which no version has either, is kept as U+FFFD, so that what is
// kept is one line of text.
func cutVersion(s string) string {
	if strings.ContainsFunc(s, unicode.IsControl) {
		s = strings.Map(func(r rune) rune {
			if unicode.IsControl(r) {
				return utf8.RuneError
			}
			return r
		}, s)
	}
	if len(s) <= MaxVersionBytes {
		return s
	}
	return capText(s, MaxVersionBytes-len("…")) + "…"
}

// Version is an agent's build as its `agentInfo.version` says it: a
// semver-like string ("0.70.1", "1.0.102", "v2.6.0", "0.15.6-nightly.20250911.abc"),
// or, for an agent behind an adapter whose `agentInfo.version` is the
// adapter's own, the agent's build as the adapter names it elsewhere,
// with the agent's name before it ("pi v0.84.4"; see agentBuilds).
// A version that does not parse (empty, garbage, too long), or that is
// 0.0.0 (a build from source or a snapshot), is unknown.
// The zero Version is unknown. Versions are comparable with ==.
type Version struct {
	raw   string // as sent, trimmed and cut (cutVersion)
	name  string // the program named before the version ("pi"); "" when none
	canon string // semver canonical form with a leading "v"; "" when unknown
}

// ParseVersion reads an agent's version text. A leading "v" or "V" is
// optional; "1.2" stands for "1.2.0"; a prerelease ("-nightly.2025...")
// sorts before its release; build metadata ("+abc") is ignored. The text
// may name, before one space, the program whose build it is ("pi
// v0.84.4"): Name says it.
func ParseVersion(s string) Version {
	s = strings.TrimSpace(s)
	v := Version{raw: cutVersion(s)}
	if len(s) > MaxVersionBytes || s == "" {
		return v
	}
	t, name := s, ""
	if i := strings.IndexByte(s, ' '); i >= 0 {
		name, t = s[:i], s[i+1:]
	}
	if t == "" || !programName(name) {
		return v
	}
	if t[0] == 'V' {
		t = "v" + t[1:]
	} else if t[0] != 'v' {
		t = "v" + t
	}
	if c := semver.Canonical(t); c != "" && !strings.HasPrefix(c, noRelease) {
		v.canon, v.name = c, name
	}
	return v
}

// programName says whether s can be the name of the program a version
// text names before its version: empty (none named), or up to 32 ASCII
// letters, digits, '.', '_' and '-'. So String is plain ASCII, whatever
// an agent sends.
func programName(s string) bool {
	if len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// noRelease starts the version a build from source or a development
// snapshot gives itself ("0.0.0", "0.0.0-dev-..."): no release, so no
// older build, and read as unknown, that is as the newest.
const noRelease = "v0.0.0"

// capText cuts s to at most n bytes without splitting a UTF-8 sequence.
func capText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// Known says whether the version parsed.
func (v Version) Known() bool { return v.canon != "" }

// Name is the program a known version names as its own ("pi" of "pi
// v0.84.4"); "" when it names none: then it is the build of whatever
// answered `initialize`, which may be an adapter. A dialect whose agent
// speaks through an adapter tells the two builds apart by it.
func (v Version) Name() string { return v.name }

// Raw is the version text as the agent sent it (trimmed, cut to
// MaxVersionBytes); "" when the agent sent none.
func (v Version) Raw() string { return v.raw }

// String is the parsed version without the "v" and without build
// metadata ("0.70.1", "0.15.6-nightly.20250911"), after the program it
// names ("pi 0.84.4"), or "unknown".
func (v Version) String() string {
	if v.canon == "" {
		return "unknown"
	}
	if v.name != "" {
		return v.name + " " + v.canon[1:]
	}
	return v.canon[1:]
}

// Before says whether v is a known version older than the version w (as
// ParseVersion reads it). It is false when either is unknown, so that an
// agent whose build is unknown, like one newer than any studied, is read
// with the newest rules: write dialect rules for old builds as
// `v.Before("0.71.0")`, never as "at least".
func (v Version) Before(w string) bool {
	o := ParseVersion(w)
	return v.Known() && o.Known() && semver.Compare(v.canon, o.canon) < 0
}

// Compare orders two known versions as semver does (-1, 0, +1); an
// unknown version sorts after every known one, as the newest.
func (v Version) Compare(w Version) int {
	switch {
	case v.Known() && w.Known():
		return semver.Compare(v.canon, w.canon)
	case v.Known():
		return -1
	case w.Known():
		return 1
	}
	return 0
}

// versioned is implemented by a dialect whose reading depends on the
// agent's build. forVersion returns the dialect value that reads frames of
// build v (with the same Info); it is called once per session and
// whenever the session learns the version, never per frame, so it should
// decide there everything a frame's reading needs (e.g. keep
// `old: v.Before("0.71.0")` in the returned value). It must accept an
// unknown v and read it as the newest build.
type versioned interface {
	forVersion(v Version) Dialect
}

// bound is a dialect bound to a build (and a client) by Bind or
// BindPeers.
type bound struct {
	Dialect         // the value that reads frames (forPeers', forVersion's, or the dialect itself)
	base    Dialect // the registered dialect
	version Version
	client  Client
}

// Bind returns d bound to the agent build v: BindPeers with a client that
// declared nothing.
func Bind(d Dialect, v Version) Dialect { return BindPeers(d, v, Client{}) }

// BindPeers returns d bound to the agent build v and the client c: what
// d's forPeers returns for them when d implements it, else what its
// forVersion returns for v when it implements that, else d itself; either
// way, VersionOf and ClientOf tell them afterwards. Binding a bound
// dialect binds its registered dialect again. BindPeers allocates: call
// it once per session (and when the version or the client changes), and
// keep the result.
func BindPeers(d Dialect, v Version, c Client) Dialect {
	if d == nil {
		return nil
	}
	if b, ok := d.(bound); ok {
		d = b.base
	}
	reader := d
	switch vd := d.(type) {
	case clientBound:
		reader = vd.forPeers(v, c)
	case versioned:
		reader = vd.forVersion(v)
	}
	return bound{Dialect: reader, base: d, version: v, client: c}
}

// ClientOf returns the client d was bound to (the zero Client when d was
// never bound to one).
func ClientOf(d Dialect) Client {
	if b, ok := d.(bound); ok {
		return b.client
	}
	return Client{}
}

// VersionOf returns the build d was bound to (unknown when d was never
// bound).
func VersionOf(d Dialect) Version {
	if b, ok := d.(bound); ok {
		return b.version
	}
	return Version{}
}

// Unbound returns the registered dialect a bound dialect came from (d
// itself when it was not bound).
func Unbound(d Dialect) Dialect {
	if b, ok := d.(bound); ok {
		return b.base
	}
	return d
}
