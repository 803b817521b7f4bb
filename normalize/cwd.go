package normalize

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/acpnorm/acpnorm/internal/accum"
)

// The working directories a session names are paths on the client's
// host, which need not be this one's: a client on Windows names a drive
// path (C:\w, C:/w) or a UNC path (\\server\share), absolute there though
// filepath here reads it as relative. Such a path is kept as written and
// joined with a backslash; this host's own paths are cleaned and joined
// by filepath.

// windowsAbs says whether p is an absolute Windows path.
func windowsAbs(p string) bool {
	if strings.HasPrefix(p, `\\`) {
		return true
	}
	return len(p) >= 3 && ('a' <= p[0]|0x20 && p[0]|0x20 <= 'z') && p[1] == ':' && (p[2] == '\\' || p[2] == '/')
}

// absDir says whether dir is absolute on this host or on Windows.
func absDir(dir string) bool { return filepath.IsAbs(dir) || windowsAbs(dir) }

// controlChar names the first control character (C0 or DEL) in dir, or
// says "" when it has none. No such byte belongs in a directory a client
// means: a NUL ends a path in every system call, and a newline or an
// escape in one is a forged or garbled path, which would be handed on as
// the call's cwd.
func controlChar(dir string) string {
	for i := 0; i < len(dir); i++ {
		switch c := dir[i]; {
		case c == 0:
			return "NUL"
		case c < 0x20 || c == 0x7f:
			return fmt.Sprintf("0x%02x", c)
		}
	}
	return ""
}

// cleanDir is dir cleaned when it is a path of this host's kind.
func cleanDir(dir string) string {
	if windowsAbs(dir) {
		return dir
	}
	return filepath.Clean(dir)
}

// joinDir is the relative directory rel under base.
func joinDir(base, rel string) string {
	if windowsAbs(base) {
		return strings.TrimRight(base, `\/`) + `\` + rel
	}
	return filepath.Join(base, rel)
}

// resolveCwd makes o's relative cwd the session's joined with it. A
// joined cwd over the text limit is left out, with a FrameError, as an
// over-long cwd the agent names is (boundObservation).
func (ss *sessions) resolveCwd(s *session, o *accum.Observation, r *reply) {
	if o.Cwd == "" || absDir(o.Cwd) || s.cwd == "" {
		return
	}
	o.Cwd = joinDir(s.cwd, o.Cwd)
	if n := len(o.Cwd); n > ss.cfg.TextLimit {
		o.Cwd = ""
		ss.refused(r, LimitTextBytes)
		r.fail(InvalidArgument, o.ToolCallID, "frame %d of session %q gives tool call %q a cwd that is %d bytes once joined with the session's cwd, over the text limit of %d bytes (WithTextLimit, acpnormd --text-limit); it is left out and the rest of the update applies", r.seq, s.id, o.ToolCallID, n, ss.cfg.TextLimit)
	}
}
