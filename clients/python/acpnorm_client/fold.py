"""Folding ShellExec revisions into the current state of each call.

A revision carries every scalar field of its call, but the three text fields
(output, stdout, stderr) only when they changed: TEXT_MODE_APPEND text is
added to what the client holds, TEXT_MODE_REPLACE text replaces it, and an
absent field leaves it as it was. A final (ENDED) revision folds the same
way. Revisions count 1, 2, 3, ... per (session_id, tool_call_id) with no gap;
a :class:`Folder` checks that and raises :class:`FoldError` for a gap, a
restart or a repeat. A restart, a repeat or a malformed revision is not
applied. A revision after a gap is applied only when it carries no APPEND
text, so that it cannot add to text that missed a part: that is how a client
resynchronises after a reconnect, whose first revision carries the whole text
(REPLACE); the error then has ``applied`` set.

    folder = Folder()
    for r in client.normalize_lines(lines, session_id="s1"):
        if is_shell_exec(r):
            folder.apply(r)
            state = folder.state(key_of(r))   # state.output.text: the whole text so far

The same rules as the Go package ``github.com/acpnorm/acpnorm/fold`` and the
TypeScript ``Folder``, held to the same test vectors.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from acpnorm.v1 import normalizer_pb2 as pb

__all__ = ["Folder", "FoldError", "Key", "key_of"]

Key = Tuple[str, str]
"""(session_id, tool_call_id): the call a revision belongs to."""

_FIELDS = ("output", "stdout", "stderr")
_MODES = (pb.TEXT_MODE_APPEND, pb.TEXT_MODE_REPLACE)


def key_of(x: "pb.ShellExec") -> Key:
    return (x.session_id, x.tool_call_id)


class FoldError(ValueError):
    """A revision out of order or malformed. Unless ``applied``, the call's
    state is unchanged.

    ``kind`` is ``"gap"`` (past the next revision expected; a call first
    seen past revision 1 too), ``"restart"`` (not past the last one applied:
    numbering went back or repeated) or ``"invalid"`` (revision 0, or a text
    field whose mode is neither APPEND nor REPLACE). ``held`` is the last
    revision applied to the call (0 when none), ``got`` the one reported.
    ``applied`` is True for a gap revision that carried no APPEND text: its
    scalars and REPLACE texts were taken (texts it did not carry keep what
    was held) and numbering goes on from it.
    """

    def __init__(self, kind: str, key: Key, held: int, got: int, detail: str = "", applied: bool = False):
        self.kind, self.key, self.held, self.got, self.detail = kind, key, held, got, detail
        self.applied = applied
        session, call = key
        where = f"call {call!r} of session {session!r}"
        if kind == "gap":
            what = ("resynchronised from its whole text" if applied
                    else "not applied: it appends to text that missed a part")
            msg = f"{where}: revision {got} after {held}: {got - held - 1} revision(s) missing; {what}"
        elif kind == "restart":
            msg = f"{where}: revision {got} after {held}: numbering went back or repeated"
        else:
            msg = f"{where}: revision {got}: {detail}"
        super().__init__(f"fold: {msg}")


class _Text:
    __slots__ = ("parts", "bytes", "cut", "truncated", "total_bytes")

    def __init__(self) -> None:
        self.parts: List[str] = []
        self.bytes = 0  # UTF-8 bytes of parts, counted only under a limit
        self.cut = False  # the text lost its head to the limit
        self.truncated = False
        self.total_bytes = 0


def _tail_utf8(s: str, n: int) -> str:
    """The last n UTF-8 bytes of s, from the first character that starts in them."""
    b = s.encode("utf-8")
    if len(b) <= n:
        return s
    i = len(b) - n
    while i < len(b) and (b[i] & 0xC0) == 0x80:
        i += 1
    return b[i:].decode("utf-8")


class _Call:
    __slots__ = ("last", "texts", "state")

    def __init__(self) -> None:
        self.last: Optional[pb.ShellExec] = None  # latest revision, texts cleared
        self.texts: Dict[str, _Text] = {}
        self.state: Optional[pb.ShellExec] = None  # built on demand


class Folder:
    """The folded state of every call it was given revisions for.

    ``limit``, when above 0, bounds each folded text to its last ``limit``
    bytes (UTF-8), from the first character that starts in them, as acpnormd
    cuts (its --text-limit, 256 KiB by default); the state then says
    truncated. APPEND text is never cut by the server, so without a limit a
    long output's folded text holds all of it until a REPLACE.

    Not safe for use from several threads at once.
    """

    def __init__(self, limit: int = 0) -> None:
        self._calls: Dict[Key, _Call] = {}  # dicts keep first-applied order
        self._limit = max(0, int(limit))

    def apply(self, x: "pb.ShellExec") -> None:
        """Folds one revision into its call's state; raises FoldError when it
        is out of order or malformed, having changed nothing unless the
        error's ``applied`` is set. Keeps no reference to ``x``."""
        key = key_of(x)
        c = self._calls.get(key)
        held = c.last.revision if c is not None and c.last is not None else 0
        got = x.revision
        if got == 0:
            raise FoldError("invalid", key, held, got, "revision 0 (revisions count from 1)")
        if got <= held:
            raise FoldError("restart", key, held, got)
        appends = False
        for name in _FIELDS:
            if x.HasField(name):
                mode = getattr(x, name).mode
                if mode not in _MODES:
                    raise FoldError("invalid", key, held, got, f"{name} has mode {mode}")
                appends = appends or mode == pb.TEXT_MODE_APPEND
        gap = None
        if got > held + 1:
            gap = FoldError("gap", key, held, got, applied=not appends)
            if appends:
                raise gap
        if c is None:
            c = self._calls[key] = _Call()
        last = pb.ShellExec()
        last.CopyFrom(x)
        for name in _FIELDS:
            last.ClearField(name)
            if not x.HasField(name):
                continue
            t = getattr(x, name)
            held_text = c.texts.get(name)
            if held_text is None:
                held_text = c.texts[name] = _Text()
            n = len(t.text.encode("utf-8")) if self._limit > 0 else 0
            if t.mode == pb.TEXT_MODE_REPLACE:
                held_text.parts, held_text.bytes, held_text.cut = [t.text], n, False
            else:
                held_text.parts.append(t.text)
                held_text.bytes += n
            if self._limit > 0 and held_text.bytes > 2 * self._limit:
                # Kept to its tail now and then, so that many appends cost
                # O(total text); state() cuts the rest.
                kept = _tail_utf8("".join(held_text.parts), self._limit)
                held_text.parts, held_text.cut = [kept], True
                held_text.bytes = len(kept.encode("utf-8"))
            held_text.truncated = t.truncated
            held_text.total_bytes = t.total_bytes
        c.last = last
        c.state = None
        if gap is not None:
            raise gap

    def state(self, key: Key) -> Optional["pb.ShellExec"]:
        """The folded state of a call, or None when none of its revisions was
        applied: the scalar fields of its latest revision, and each text
        field any revision carried holding the whole text so far (mode
        REPLACE; truncated and total_bytes from the latest revision that
        carried it). The message is shared: read it, do not change it; the
        Folder never changes one it returned."""
        c = self._calls.get(key)
        if c is None:
            return None
        if c.state is None:
            s = pb.ShellExec()
            s.CopyFrom(c.last)
            for name, t in c.texts.items():
                if len(t.parts) > 1:
                    t.parts = ["".join(t.parts)]
                text, cut = (t.parts[0] if t.parts else ""), t.cut
                if self._limit > 0 and t.bytes > self._limit:
                    text, cut = _tail_utf8(text, self._limit), True
                getattr(s, name).CopyFrom(
                    pb.ShellText(
                        text=text,
                        mode=pb.TEXT_MODE_REPLACE,
                        truncated=t.truncated or cut,
                        total_bytes=t.total_bytes,
                    )
                )
            c.state = s
        return c.state

    def revision(self, key: Key) -> Optional[int]:
        """The number of the latest revision applied to a call, or None when
        none was: what state(key).revision says, without building the
        call's texts (a map lookup, cheap to do before each apply)."""
        c = self._calls.get(key)
        return None if c is None or c.last is None else c.last.revision

    def calls(self) -> List[Key]:
        """The keys of every call held, in the order each was first applied."""
        return list(self._calls)

    def delete(self, key: Key) -> None:
        """Forgets a call (for example once its ENDED revision was handled); a
        later revision of it is then a gap unless it is revision 1."""
        self._calls.pop(key, None)
