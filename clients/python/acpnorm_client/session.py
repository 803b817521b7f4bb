"""A session that survives failures: the resend protocol of docs/contract.md,
the same behaviour as the Go package ``github.com/acpnorm/acpnorm/client``.

A :class:`Session` numbers the requests of one ACP session (frames,
TurnEnded, SessionClosed) 1, 2, 3, ... and streams them with
``StreamOptions.skip_applied_sequences``, so that anything sent again is
applied once. When a stream breaks or a request is refused (FrameError
UNAVAILABLE: not applied, or with an outcome the store did not know, which the
resend settles), it waits (exponential backoff with jitter,
bounded), moves to the next address and sends again every request it has no
answer for. The first frame on each new stream states what it holds
(``AcpFrame.held_revisions``), so a server whose store lost commits answers
DATA_LOSS; the Session then sends the session's frames again from the first,
and ends with the same finals. Revisions are folded with :class:`Folder`; one
received twice is folded once.

    with SessionClient(["10.0.0.1:50051", "10.0.0.2:50051"]) as client:
        s = client.session("s1", on_revision=lambda x: print(x.tool_call_id, x.revision))
        for line in recording:
            acp = parse_acp_line(line)
            if acp:
                s.send(acp.direction, acp.message)
        s.close(timeout=60)
        for call in s.calls():
            print(call.command, call.outcome)
"""

from __future__ import annotations

import dataclasses
import random
import re
import threading
import time
import weakref
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import grpc

from acpnorm.v1 import normalizer_pb2 as pb

from .fold import FoldError, Folder, key_of

__all__ = [
    "SessionClient",
    "Session",
    "SessionStats",
    "SessionError",
    "SessionFullError",
    "CannotRebuildError",
    "SessionClosedError",
]

_TRAILER_APPLIED = "acpnorm-requests-applied"
_ALREADY_EXISTS, _RESOURCE_EXHAUSTED, _UNAVAILABLE, _DATA_LOSS = 6, 8, 14, 15
_MAX_REBUILDS = 8
# Bounds the calls held_revisions names: acpnormd checks up to 2 x
# --max-calls-per-session of them (2048 by default), the calls the session
# has first, and applies the frame for a claim of up to 64 x
# --max-calls-per-session calls (a build before that bound took any
# number; one older still refused a claim of more than it checks).
_MAX_HELD = 1024
# Bounds how far back _held_from looks for a frame.
_MAX_HELD_BACK = 64
# How gRPC words the end of a stream whose message was over the server's
# limit; _TOO_LARGE reads the message's size and the limit, in bytes, after
# them.
_TOO_LARGE_WORDS = "larger than max"
_TOO_LARGE = re.compile(re.escape(_TOO_LARGE_WORDS) + r" \((\d+) vs\. (\d+)\)")
# The message sent in place of a frame over the server's limit: a
# notification of a method no agent sends, which acpnormd reads as nothing
# (every method it does not know is skipped without an error).
_LEFT_OUT = b'{"jsonrpc":"2.0","method":"$/acpnorm/left_out"}'


class SessionError(Exception):
    """The Session gave up. ``code`` is the grpc.StatusCode of a server that
    refused the call (UNAUTHENTICATED, ...), else None; ``__cause__`` says
    more."""

    def __init__(self, message: str, code: Optional[grpc.StatusCode] = None):
        super().__init__(message)
        self.code = code


class SessionFullError(SessionError):
    """send() or turn_ended() refused: the Session holds as many requests, or
    bytes, not answered yet as its bound allows. The request was not taken."""


class CannotRebuildError(SessionError):
    """The server lost the session (DATA_LOSS) after the Session had dropped
    its first requests to stay within its bound (``max_requests``,
    ``max_bytes``), so it could not send them again to rebuild it: the
    Session gave up. What it folded before stays readable."""


class SessionClosedError(SessionError):
    """The Session (or its SessionClient) was closed."""


class InvalidSessionError(SessionError):
    """The Session's id, dialect or working directory cannot go in a
    request: it holds a lone surrogate (as ``os.fsdecode`` gives for a path
    that is not UTF-8), which has no UTF-8 form, as a protobuf string must
    have. The Session gives up with it at once, sending nothing: send(),
    turn_ended() and close() raise it."""


def _invalid_field(session_id: str, dialect: str, cwd: str) -> Optional[InvalidSessionError]:
    """Says which of the fields every request of a session carries cannot be
    encoded as UTF-8, as the Go and TypeScript clients do."""
    for what, v in (("session id", session_id), ("dialect", dialect), ("working directory", cwd)):
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:
            return InvalidSessionError(
                f"acpnorm client: invalid session: the {what} {v!r} is not well-formed Unicode "
                "(a lone surrogate has no UTF-8 form), so no request of it can be sent"
            )
    return None


@dataclasses.dataclass
class SessionStats:
    """What a Session went through."""

    streams: int = 0  # streams opened
    reconnects: int = 0  # streams that followed one that broke (or failed to open)
    resent: int = 0  # requests sent again on a new stream
    not_applied: int = 0  # requests refused with UNAVAILABLE (not applied, or with an unknown outcome)
    # DATA_LOSS answers, each followed by a rebuild from the first request,
    # or, once dropped is above 0, by the Session giving up (CannotRebuildError)
    losses: int = 0
    duplicates: int = 0  # revisions received again and folded once
    # Requests no longer kept: answered ones, dropped oldest first so that a
    # new request fits within max_requests and max_bytes. Once it is above 0
    # the session can no longer be rebuilt from its first request after a loss.
    dropped: int = 0


class SessionClient:
    """Connections to one acpnormd fleet, and the Sessions streamed over them.

    ``addrs`` are gRPC targets: ``host:port``, or one name that resolves to
    several (``dns:///acpnorm.example:50051``, with ``options=[
    ("grpc.lb_policy_name", "round_robin")]`` to balance it). ``backoff``
    is (min, max) seconds: the wait before reconnecting is min after the
    first failure, doubling with each failure in a row up to max, each drawn
    at random between half and all of it (default 0.05 and 2).
    ``max_requests`` and ``max_bytes`` bound what each open Session keeps to
    rebuild its session (default 10 000 requests, 64 MiB of messages). A
    request that would pass either makes the Session drop its oldest
    answered requests first (``stats.dropped``), after which a loss cannot
    be rebuilt (CannotRebuildError); send() raises SessionFullError when the
    requests not answered yet fill it. The Session also ends its stream once
    half of either is unanswered, so that the server's trailer answers
    frames that made no revision.
    Other keyword arguments (TLS files, token, channel options) are those of
    :class:`acpnorm_client.NormalizerClient`, for every address.
    """

    def __init__(
        self,
        addrs: Sequence[str],
        *,
        backoff: Tuple[float, float] = (0.05, 2.0),
        max_requests: int = 10_000,
        max_bytes: int = 64 << 20,
        **connect_kwargs: Any,
    ):
        from . import NormalizerClient  # the package imports this module

        if isinstance(addrs, str) or not addrs:
            raise ValueError("SessionClient: give a list of one or more addresses")
        lo, hi = backoff
        if not (0 < lo <= hi):
            raise ValueError(f"SessionClient: backoff {lo} s to {hi} s: want 0 < min <= max")
        if max_requests <= 0 or max_bytes <= 0:
            raise ValueError(f"SessionClient: bounds {max_requests} requests, {max_bytes} bytes: want both above 0")
        self.min_wait, self.max_wait = lo, hi
        self.max_requests, self.max_bytes = max_requests, max_bytes
        # A server that stops answering without closing the connection is
        # found out by pings (10 s without a read, 5 s for the answer); a
        # channel whose server went away tries again within the backoff.
        options = [
            ("grpc.keepalive_time_ms", 10_000),
            ("grpc.keepalive_timeout_ms", 5_000),
            ("grpc.http2.max_pings_without_data", 0),
            ("grpc.initial_reconnect_backoff_ms", max(1, int(lo * 1000))),
            ("grpc.min_reconnect_backoff_ms", max(1, int(lo * 1000))),
            ("grpc.max_reconnect_backoff_ms", max(1, int(hi * 1000))),
        ] + list(connect_kwargs.pop("options", None) or [])
        self._conns: List[Any] = []
        try:
            for a in addrs:
                self._conns.append(NormalizerClient(a, options=options, **connect_kwargs))
        except BaseException:
            self.close()
            raise
        self._sessions: "weakref.WeakSet[Session]" = weakref.WeakSet()
        self._closed = False

    def session(
        self,
        session_id: str,
        *,
        dialect: str = "auto",
        cwd: str = "",
        on_revision: Optional[Callable[["pb.ShellExec"], None]] = None,
        on_frame_error: Optional[Callable[["pb.FrameError"], None]] = None,
    ) -> "Session":
        """Starts a session with this id; nothing is sent until send().

        ``on_revision`` is called with each revision folded in, in the
        server's order, never twice; ``on_frame_error`` once with each
        FrameError about a request of the session, except those the Session
        handles itself (ALREADY_EXISTS for a request sent again, UNAVAILABLE,
        DATA_LOSS). Both run on the Session's thread: do not block there.
        """
        if not session_id:
            raise ValueError("SessionClient.session: the session id is empty")
        if self._closed:
            raise SessionClosedError("acpnorm client: closed")
        s = Session(self, session_id, dialect, cwd, on_revision, on_frame_error)
        self._sessions.add(s)
        return s

    def close(self) -> None:
        """Ends every Session's streams and closes the connections."""
        self._closed = True
        for s in list(getattr(self, "_sessions", ())):
            s._give_up(SessionClosedError(f"acpnorm client: session {s.id!r}: closed"))
        for c in self._conns:
            c.close()

    def __enter__(self) -> "SessionClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _conn(self, i: int) -> Any:
        return self._conns[i % len(self._conns)]

    def _backoff(self, n: int) -> float:
        d = self.min_wait
        for _ in range(n):
            if d >= self.max_wait:
                break
            d *= 2
        d = min(d, self.max_wait)
        return d / 2 + random.random() * d / 2


class _Retry(Exception):
    """Ends a stream that should be opened again (a request not applied, or unanswered)."""


class _Lost(Exception):
    """A DATA_LOSS answer; fatal after too many in a row (``fatal``), or once
    requests were dropped (dropped > 0: the session cannot be rebuilt from
    its first, which is fatal too)."""

    def __init__(self, fe: "pb.FrameError", fatal: bool, dropped: int = 0, bound: str = ""):
        if dropped > 0:
            msg = (
                f"the server lost the session, and it cannot be rebuilt: its first {dropped} requests were no longer "
                f"kept (answered, then dropped to stay within the bound of {bound}; SessionClient max_requests, "
                f"max_bytes raise it); the server said: {fe.message}"
            )
        elif fatal:
            msg = f"the session was lost in the store too many times in a row, last: {fe.message}"
        else:
            msg = fe.message
        super().__init__(msg)
        self.fe, self.fatal, self.dropped = fe, fatal, dropped


_RETRYABLE = {
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.ABORTED,
    grpc.StatusCode.CANCELLED,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.INTERNAL,
    grpc.StatusCode.UNKNOWN,
    # a stream cut off as stalled, or a process at its stream limit
    grpc.StatusCode.RESOURCE_EXHAUSTED,
}


def _msg_size(r: "pb.NormalizeRequest") -> int:
    """What a request counts in the byte bound."""
    return len(r.frame.message) if r.WhichOneof("kind") == "frame" else 0


def _left_out(f: "pb.AcpFrame") -> "pb.NormalizeRequest":
    """The request sent in place of frame f, over the server's limit: a copy
    of f, every field kept (as the Go client clones it), with _LEFT_OUT for
    its message. f, which the Session may hold, is not changed."""
    r = pb.NormalizeRequest()
    r.frame.CopyFrom(f)
    r.frame.message = _LEFT_OUT
    return r


def _fatal(err: grpc.RpcError) -> bool:
    """Whether a stream's error is one reconnecting cannot cure."""
    code, details = err.code(), err.details() or ""
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED and _TOO_LARGE_WORDS in details:
        return True  # the same request would be too large again, unless _leave_out_too_large leaves it out
    return code not in _RETRYABLE


class Session:
    """One ACP session streamed to acpnormd, surviving failures: send() its
    JSON-RPC messages, close() at the end, and read calls() for the folded
    state of each shell call. Made by :meth:`SessionClient.session`; its
    methods are safe to call from any thread."""

    def __init__(
        self,
        client: SessionClient,
        session_id: str,
        dialect: str,
        cwd: str,
        on_revision: Optional[Callable[["pb.ShellExec"], None]],
        on_frame_error: Optional[Callable[["pb.FrameError"], None]],
    ):
        self.id = session_id
        self._c = client
        self._dialect, self._cwd = dialect, cwd
        self._on_rev, self._on_err = on_revision, on_frame_error
        self._cond = threading.Condition()
        # The session's i-th request (from 0) has sequence _base + i + 1. The
        # first _dropped of them were answered and are no longer kept (see
        # _make_room; stats.dropped); _reqs holds the rest, _reqs[0] being the
        # _dropped-th.
        # _confirmed, _high_sent, _loss_at and the indexes a stream uses count
        # every request, dropped or kept. The server skips the
        # sequences of a session it applied before (skip_applied_sequences),
        # so a Session that numbered from 1 again, in a process started after
        # one that used the same session id and died, would have its new
        # frames skipped as sent before. Numbered from the clock
        # (microseconds since 1970), a later Session's requests come after
        # an earlier one's.
        self._base = time.time_ns() // 1000
        self._dropped = 0
        self._reqs: List[pb.NormalizeRequest] = []
        self._bytes = 0  # of the messages of _reqs
        self._confirmed = 0  # the requests before the _confirmed-th are answered (see _answer)
        # The bytes of the messages of the requests from the _confirmed-th,
        # kept in step with _confirmed by _answer, so that _half_unanswered,
        # asked on every send, need not add them up.
        self._unanswered = 0
        self._closing = False  # SessionClosed is queued
        self._flushing = False  # a waiter wants every request answered
        # Ends the stream once all is sent, as _flushing does, so that its
        # trailer answers requests that made no revision (see _queue).
        self._cycle = False
        self._err: Optional[SessionError] = None
        self._closed = False  # released after close()
        self._folder = Folder()
        self._seen_errs: set = set()
        self._errs: List[pb.FrameError] = []
        self._stats = SessionStats()  # what stats says, but dropped: _dropped
        self._high_sent = 0  # the most requests ever sent, to count those sent again
        self._rebuilds = 0  # DATA_LOSS answers since the session last got past _loss_at
        self._loss_at = 0
        self._last_err: Optional[str] = None  # why the last stream failed
        self._stop = threading.Event()  # set when the Session gives up or is released
        self._call: Any = None  # the stream running, to cancel it
        invalid = _invalid_field(session_id, dialect, cwd)
        if invalid is not None:
            # Every request would carry it, and protobuf would refuse it
            # deep inside send(): say so at once, and send nothing (the
            # thread ends at once).
            self._give_up(invalid)
        self._thread = threading.Thread(target=self._run, name=f"acpnorm-session-{session_id}", daemon=True)
        self._thread.start()

    # The caller's side.

    def send(self, direction: int, message: Union[bytes, str]) -> None:
        """Queues one JSON-RPC message of the session (``direction`` a
        pb.Direction value, DIRECTION_UNSPECIFIED when unknown) and returns:
        it is sent, and sent again until answered, in the background. Raises
        the SessionError the Session gave up with, SessionClosedError after
        close(), or SessionFullError when it holds its bound of requests not
        answered yet."""
        msg = message.encode("utf-8") if isinstance(message, str) else bytes(message)
        self._queue(
            len(msg),
            lambda seq: pb.NormalizeRequest(
                frame=pb.AcpFrame(
                    session_id=self.id, dialect=self._dialect, cwd=self._cwd,
                    sequence=seq, direction=direction, message=msg,
                )
            ),
        )

    def turn_ended(self, cancelled: bool = False) -> None:
        """Says the prompt turn ended (cancelled: after session/cancel), for
        agents whose turn end the session's frames do not show."""
        self._queue(
            0, lambda seq: pb.NormalizeRequest(turn_ended=pb.TurnEnded(session_id=self.id, sequence=seq, cancelled=cancelled))
        )

    def flush(self, timeout: Optional[float] = None) -> None:
        """Waits until every request queued so far was answered. Raises the
        SessionError the Session gave up with; when ``timeout`` seconds pass
        first, the Session gives up (use a timeout after which waiting is
        pointless) and this raises a SessionError saying so."""
        deadline = None if timeout is None else _now() + timeout
        with self._cond:
            while True:
                if self._err is not None:
                    if self._closed:
                        return
                    raise self._err
                if self._confirmed == self._total():
                    if self._closing:
                        self._release()
                    return
                self._flushing = True
                self._cond.notify_all()  # wakes the stream, to end it once all is sent
                left = None if deadline is None else deadline - _now()
                if left is not None and left <= 0:
                    break
                self._cond.wait(left)
        with self._cond:
            last = "" if self._last_err is None else f" (the last stream: {self._last_err})"
        err = SessionError(f"acpnorm client: session {self.id!r}: waiting for answers: timed out after {timeout} s{last}")
        self._give_up(err)
        raise err

    def close(self, timeout: Optional[float] = None) -> None:
        """Sends SessionClosed, waits until every request was answered (as
        flush() does), and releases what the Session kept to rebuild. calls()
        and frame_errors() stay readable."""
        with self._cond:
            queue = not self._closing and self._err is None
        if queue:
            self._queue(
                0, lambda seq: pb.NormalizeRequest(session_closed=pb.SessionClosed(session_id=self.id, sequence=seq)), last=True
            )
            with self._cond:
                self._closing = True
        self.flush(timeout)

    def calls(self) -> List["pb.ShellExec"]:
        """The folded state of every call, in the order each was first seen.
        The messages are shared: read them only."""
        with self._cond:
            return [self._folder.state(k) for k in self._folder.calls()]

    def call(self, tool_call_id: str) -> Optional["pb.ShellExec"]:
        """The folded state of one call, or None when none of its revisions arrived."""
        with self._cond:
            return self._folder.state((self.id, tool_call_id))

    def frame_errors(self) -> List["pb.FrameError"]:
        """The FrameErrors on_frame_error was given, in order."""
        with self._cond:
            return list(self._errs)

    @property
    def stats(self) -> SessionStats:
        """What the Session went through so far (a copy)."""
        with self._cond:
            return dataclasses.replace(self._stats, dropped=self._dropped)

    @property
    def error(self) -> Optional[SessionError]:
        """The error the Session gave up with, or None (also after a clean close)."""
        with self._cond:
            return None if self._closed else self._err

    def _queue(self, size: int, make: Callable[[int], "pb.NormalizeRequest"], last: bool = False) -> None:
        with self._cond:
            if self._err is not None:
                raise self._err
            if self._closing:
                raise SessionClosedError(f"acpnorm client: session {self.id!r} was closed")
            # The closing request (last) is never refused: it releases the rest.
            if not last and not self._make_room(size):
                # The stream ends once all is sent (_cycle), so that its
                # trailer answers what made no revision, and the caller's
                # next try fits.
                self._cycle = True
                self._cond.notify_all()
                # The unanswered requests are what fill the bound (answered
                # ones would have been dropped): name them, not every
                # request kept.
                raise SessionFullError(
                    f"acpnorm client: session {self.id!r} has {self._total() - self._confirmed} requests not answered "
                    f"yet ({self._unanswered} bytes of messages), and with this one of {size} bytes they would pass "
                    f"the bound of {self._c.max_requests} requests, {self._c.max_bytes} bytes (SessionClient "
                    f"max_requests, max_bytes); try again once answers come, or raise the bound"
                )
            self._reqs.append(make(self._base + self._total() + 1))
            self._bytes += size
            self._unanswered += size
            if not self._cycle and self._half_unanswered():
                self._cycle = True
            self._cond.notify_all()

    def _total(self) -> int:
        """How many requests the session has, dropped or kept (lock held)."""
        return self._dropped + len(self._reqs)

    def _req(self, i: int) -> "pb.NormalizeRequest":
        """The session's i-th request, from 0 (lock held; i >= _dropped)."""
        return self._reqs[i - self._dropped]

    def _make_room(self, size: int) -> bool:
        """Makes a request of size bytes fit within the bound, dropping the
        oldest answered requests (lock held). A long session would otherwise
        end at its bound however healthy; what is dropped cannot be sent
        again, so a later loss (DATA_LOSS) cannot be rebuilt
        (CannotRebuildError). Returns False, and drops nothing, when the
        requests not answered yet leave no room: that is backpressure."""
        n, b, k = len(self._reqs), self._bytes, 0
        while n - k >= self._c.max_requests or b + size > self._c.max_bytes:
            if self._dropped + k >= self._confirmed:
                return False
            b -= _msg_size(self._reqs[k])
            k += 1
        if k > 0:
            del self._reqs[:k]
            self._bytes = b
            self._dropped += k
        return True

    def _half_unanswered(self) -> bool:
        """Whether the requests not answered yet take half the bound, of
        requests or of bytes (lock held). A stream answers a request when a
        later one made a revision, or in its trailer: frames that make no
        revision (an agent streaming message chunks) are answered only when
        the stream ends, so the Session ends it then (_cycle), and what it
        answers can be dropped."""
        return (
            2 * (self._total() - self._confirmed) >= self._c.max_requests
            or 2 * self._unanswered >= self._c.max_bytes
        )

    def _answer(self, n: int) -> None:
        """Sets _confirmed to n, the requests before the n-th being answered
        (lock held), and keeps _unanswered in step: each request is passed
        over once as _confirmed moves on, and again only after a rebuild (a
        DATA_LOSS sets it back to 0 while nothing is dropped). Adding up the
        unanswered requests on every send instead made a stretch of frames
        without revisions quadratic once the Session kept near its byte
        bound."""
        # Only kept requests are counted: _confirmed never goes below
        # _dropped while requests are kept (_make_room drops answered ones only).
        lo = max(min(self._confirmed, n), self._dropped)
        hi = min(max(self._confirmed, n), self._total())
        b = sum(_msg_size(self._req(i)) for i in range(lo, hi))
        self._unanswered += -b if n > self._confirmed else b
        self._confirmed = n

    def _release(self) -> None:
        """Drops the requests kept to rebuild a closed, answered session (lock held)."""
        # _dropped stays what stats.dropped says: what is let go here is not
        # counted there.
        self._reqs, self._confirmed, self._bytes, self._unanswered = [], 0, 0, 0
        self._closed = True
        self._err = SessionClosedError(f"acpnorm client: session {self.id!r} was closed")
        self._stop.set()
        self._cond.notify_all()

    def _give_up(self, err: SessionError) -> None:
        with self._cond:
            if self._err is None:
                self._err = err
            self._stop.set()
            call = self._call
            self._cond.notify_all()
        if call is not None:
            call.cancel()

    # The Session's thread.

    def _run(self) -> None:
        failures = addr = 0
        while True:
            with self._cond:
                while self._err is None and self._confirmed >= self._total():
                    self._cond.wait()
                if self._err is not None:
                    return
            try:
                self._stream(addr)
                failures = 0
                continue
            except _StreamEnd as end:
                progress, err = end.progress, end.err
            except Exception as e:  # an on_revision or on_frame_error that raised
                ge = SessionError(f"acpnorm client: session {self.id!r}: {e}")
                ge.__cause__ = e
                self._give_up(ge)
                return
            with self._cond:
                if self._err is not None:
                    return
            target = self._c._conn(addr).addr
            if isinstance(err, _Lost) and (err.fatal or err.dropped > 0):
                cls = CannotRebuildError if err.dropped > 0 else SessionError
                e = cls(f"acpnorm client: session {self.id!r}: {target}: {err}")
                e.__cause__ = err
                self._give_up(e)
                return
            if isinstance(err, grpc.RpcError) and _fatal(err) and not self._leave_out_too_large(err):
                e = SessionError(
                    f"acpnorm client: session {self.id!r}: {target}: {err.code().name}: {err.details()}", err.code()
                )
                e.__cause__ = err
                self._give_up(e)
                return
            if progress:
                failures = 0
            why = f"{err.code().name}: {err.details()}" if isinstance(err, grpc.RpcError) else str(err)
            with self._cond:
                self._stats.reconnects += 1
                self._last_err = f"{target}: {why}"
            addr += 1  # a stream that broke moves to the next address
            if self._stop.wait(self._c._backoff(failures)):
                return
            failures += 1

    def _held(self) -> Dict[str, int]:
        """The highest revision held of each call (lock held): every open
        call, then the ended ones, latest first, up to _MAX_HELD."""
        held: Dict[str, int] = {}
        keys = self._folder.calls()
        for ended in (False, True):
            for k in reversed(keys):
                if len(held) >= _MAX_HELD:
                    return held
                x = self._folder.state(k)
                if (x.state == pb.SHELL_STATE_ENDED) == ended:
                    held[k[1]] = x.revision
        return held

    def _held_from(self) -> int:
        """The index of the request a new stream starts from (lock held):
        the first one not answered, or, when that one is a turn end or a
        close (they carry no held fields) after answered requests, the last
        frame before it, sent again to state what is held. Without it a
        stream that starts with a turn end or a close after the server lost
        the session (restarted without a store, a failover) would apply them
        to an empty session: the open calls would never end, and nobody
        would know."""
        start = self._confirmed
        if start == 0 or start >= self._total() or self._req(start).WhichOneof("kind") == "frame":
            return start
        # A frame dropped (_make_room) is not there to send: as when none is found.
        for k in range(start - 1, max(self._dropped - 1, start - 1 - _MAX_HELD_BACK), -1):
            if self._req(k).WhichOneof("kind") == "frame":
                return k
        return start

    def _leave_out_too_large(self, err: grpc.RpcError) -> bool:
        """Handles a stream gRPC ended because a request was over the
        server's message limit (docs/contract.md: the client resends the
        rest, leaving that one out). The first unanswered frame over the
        limit is reported as a FrameError RESOURCE_EXHAUSTED naming its
        sequence, and sent as _LEFT_OUT instead, so that the requests after
        it are applied. Returns whether it found one; without one the error
        is fatal."""
        m = _TOO_LARGE.search(err.details() or "")
        if err.code() != grpc.StatusCode.RESOURCE_EXHAUSTED or m is None:
            return False
        limit = int(m.group(2))
        with self._cond:
            for i in range(self._confirmed, self._total()):
                req = self._req(i)
                if req.WhichOneof("kind") != "frame":
                    continue
                size = req.ByteSize()
                if size <= limit:
                    continue
                f = req.frame
                self._bytes += len(_LEFT_OUT) - len(f.message)
                self._unanswered += len(_LEFT_OUT) - len(f.message)  # i >= _confirmed
                self._reqs[i - self._dropped] = _left_out(f)
                break
            else:
                return False
        self._report(
            pb.FrameError(
                session_id=self.id, sequence=f.sequence, code=_RESOURCE_EXHAUSTED,
                message=f"request {f.sequence} (a frame of {size} bytes) is larger than the server's limit of {limit} "
                "bytes (acpnormd --max-message-bytes): it was not applied, and the Session sends the requests after "
                "it without it",
            )
        )
        return True

    def _stream(self, addr: int) -> None:
        """Runs one stream to the addr-th address: sends every request from
        the first unanswered one (or the frame before it, see _held_from)
        and folds what comes back. Returns when it ended with every request
        sent answered (a flush); otherwise raises a _StreamEnd saying why it
        ended and whether it got any answered (from the first unanswered
        one: the frame sent again does not count)."""
        done = threading.Event()
        with self._cond:
            self._stats.streams += 1
            answered = self._confirmed
            start = self._held_from()
            sent_before = self._high_sent
        state = {"start": start, "sent": 0, "closed_send": False}

        def requests() -> Iterator[pb.NormalizeRequest]:
            yield pb.NormalizeRequest(options=pb.StreamOptions(skip_applied_sequences=True))
            held_sent = False
            while True:
                with self._cond:
                    while True:
                        if self._err is not None or done.is_set():
                            return
                        i = state["start"] + state["sent"]
                        if i < self._dropped:
                            # Requests answered before this stream started,
                            # sent again to state what is held (_held_from),
                            # were dropped meanwhile: go on from the first
                            # kept, as if the stream had started there (the
                            # trailer counts from start).
                            state["start"] += self._dropped - i
                            i = self._dropped
                        if i < self._total():
                            break
                        if self._flushing or self._cycle:
                            state["closed_send"] = True
                            return
                        self._cond.wait()
                    req = self._req(i)
                    if req.WhichOneof("kind") == "frame" and not held_sent:
                        # The first frame on a stream states what is held:
                        # the calls' revisions, and the highest sequence
                        # answered (the requests before the _confirmed-th
                        # are; 0 again while a rebuild starts from the
                        # first), which finds a loss of frames that made no
                        # revision.
                        held_sent = True
                        held = self._held()
                        if held or self._confirmed > 0:
                            f = pb.AcpFrame()
                            f.CopyFrom(req.frame)
                            f.held_revisions.update(held)
                            if self._confirmed > 0:
                                f.held_sequence = self._base + self._confirmed
                            req = pb.NormalizeRequest(frame=f)
                    if i < self._high_sent:
                        self._stats.resent += 1
                    state["sent"] += 1
                    self._high_sent = max(self._high_sent, state["start"] + state["sent"])
                yield req

        call = self._c._conn(addr).stub.Normalize(requests())
        with self._cond:
            self._call = call
            given_up = self._err is not None
        if given_up:
            call.cancel()
        rerr: Optional[BaseException] = None
        try:
            for res in call:
                kind = res.WhichOneof("kind")
                if kind == "shell_exec":
                    self._confirm(res.shell_exec.sequence)
                    self._apply(res.shell_exec)
                elif kind == "frame_error":
                    self._frame_error(res.frame_error, sent_before)
        except (grpc.RpcError, _Retry, _Lost) as e:
            rerr = e
            call.cancel()
        except BaseException:
            call.cancel()
            raise
        finally:
            done.set()
            with self._cond:
                self._call = None
                self._cond.notify_all()
        # A stream the server ended (normally, or with an error: on
        # shutdown, or idle past --stream-idle-timeout) carries the count of
        # the requests it applied and answered, the options first, stopping
        # at one not applied. A stream this Session ended (_Retry, _Lost) or
        # that broke carries none.
        ended_by_server = (rerr is None and state["closed_send"]) or isinstance(rerr, grpc.RpcError)
        n = 0
        if ended_by_server:
            for k, v in call.trailing_metadata() or ():
                if k == _TRAILER_APPLIED:
                    try:
                        n = int(v)
                    except ValueError:
                        pass
        with self._cond:
            start, sent = state["start"], state["sent"]
            progress = self._confirmed > answered
            if n >= 1:
                to = min(start + n - 1, start + sent)
                if to > self._confirmed:
                    self._answer(to)
                    progress = True
            if rerr is None and state["closed_send"]:
                self._cycle = False
                self._cond.notify_all()
                if self._confirmed >= start + sent:
                    self._flushing = self._flushing and self._confirmed < self._total()
                    return
                raise _StreamEnd(progress, _Retry("stream ended with requests unanswered"))
            self._cond.notify_all()
        raise _StreamEnd(progress, rerr or _Retry("stream ended with requests unanswered"))

    def _frame_error(self, fe: "pb.FrameError", sent_before: int) -> None:
        """Handles a FrameError; raises _Retry or _Lost to end the stream.
        sent_before is how many requests earlier streams had sent."""
        if fe.code not in (_DATA_LOSS, _UNAVAILABLE):
            # Not for a request not applied: acpnormd before 3dc7a74
            # answered a batch it could not apply with one FrameError, of
            # the sequence of its last frame (each frame gets its own now),
            # so the requests before it need not have been answered. As the
            # Go client does.
            self._confirm(fe.sequence)
        if fe.code == _ALREADY_EXISTS:
            with self._cond:
                again = self._up_to(fe.sequence) <= sent_before
            if again:
                # A request sent again that was applied before; what it made
                # came then, or comes whole with the next revisions.
                return
            # Sent for the first time, yet applied before: another Session
            # numbered this session's requests alike (a process whose clock
            # was behind an earlier one's, see _base). The request was not
            # applied: say so.
            c = pb.FrameError()
            c.CopyFrom(fe)
            c.message += (
                "; this Session had not sent it before, so another Session (or process) of the same session id "
                "numbered its requests alike (a clock behind the earlier one's?) and this request was not applied"
            )
            fe = c
        if fe.code == _UNAVAILABLE:
            # Not applied: send it again, after a wait, maybe elsewhere.
            with self._cond:
                self._stats.not_applied += 1
            raise _Retry(fe.message)
        if fe.code == _DATA_LOSS:
            with self._cond:
                self._stats.losses += 1
                if self._dropped > 0:
                    # The session's first requests are no longer kept: it
                    # cannot be rebuilt, and a rebuild from what is kept
                    # would miss what named the agent (initialize,
                    # session/new).
                    raise _Lost(
                        fe, False, self._dropped, f"{self._c.max_requests} requests, {self._c.max_bytes} bytes"
                    )
                self._rebuilds += 1
                self._loss_at = max(self._loss_at, self._up_to(fe.sequence))
                self._answer(0)  # rebuild: everything again from the first
                fatal = self._rebuilds > _MAX_REBUILDS
            raise _Lost(fe, fatal)
        self._report(fe)

    def _confirm(self, seq: int) -> None:
        """Records that the requests before sequence seq were answered (a
        stream answers its requests in order)."""
        if seq <= self._base:
            return
        with self._cond:
            n = self._up_to(seq - 1)
            if n > self._confirmed:
                self._answer(n)
                if n > self._loss_at:
                    self._rebuilds = 0  # the rebuild got past where the loss was found
                self._cond.notify_all()

    def _up_to(self, seq: int) -> int:
        """How many of the session's requests have a sequence up to seq."""
        if seq <= self._base:
            return 0
        return min(seq - self._base, self._total())

    @property
    def first_sequence(self) -> int:
        """The sequence of the session's first request; the n-th has
        first_sequence + n - 1."""
        return self._base + 1

    def _apply(self, x: "pb.ShellExec") -> None:
        """Folds one revision in, once."""
        with self._cond:
            held = self._folder.revision(key_of(x))
            if held is not None and x.revision <= held:
                self._stats.duplicates += 1
                return
            try:
                self._folder.apply(x)
                err = None
            except FoldError as e:
                err = None if e.applied else e
            except ValueError as e:
                err = e
        if err is not None:
            # Not folded: a gap with appended text, or a malformed revision.
            self._report(
                pb.FrameError(
                    session_id=x.session_id, sequence=x.sequence, tool_call_id=x.tool_call_id,
                    code=_DATA_LOSS, message=str(err),
                )
            )
            return
        if self._on_rev is not None:
            self._on_rev(x)

    def _report(self, fe: "pb.FrameError") -> None:
        """Hands a FrameError on once."""
        k = (fe.sequence, fe.code, fe.tool_call_id, fe.message)
        with self._cond:
            if k in self._seen_errs:
                return
            self._seen_errs.add(k)
            self._errs.append(fe)
        if self._on_err is not None:
            self._on_err(fe)


class _StreamEnd(Exception):
    def __init__(self, progress: bool, err: BaseException):
        super().__init__(str(err))
        self.progress, self.err = progress, err


def _now() -> float:
    import time

    return time.monotonic()
