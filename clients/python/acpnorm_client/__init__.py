"""Python client for acpnorm's NormalizerService (gRPC).

The messages and the stub are generated from proto/acpnorm/v1/normalizer.proto
by ``bash gen/generate.sh`` (protoc 3.21 and grpc_python_plugin) and ship in
this distribution as ``acpnorm.v1``. This package adds what an orchestrator
needs around them: a channel (plaintext, TLS or mutual TLS, with an optional
bearer token), a reader for ACP recording lines, :func:`normalize_lines`,
which streams ACP traffic to the server and yields every ShellExec revision
and FrameError it answers with, :class:`Folder`, which folds those
revisions into the current state of each call, and :class:`SessionClient`,
whose sessions survive failures: several servers, reconnects, resends, and
a rebuild after the store lost the session.

Needs ``grpcio>=1.51,<2`` and ``protobuf>=4.21,<5`` (Debian's python3-grpcio
and python3-protobuf qualify).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence, Tuple, Union

import grpc

from acpnorm.v1 import normalizer_pb2 as pb
from acpnorm.v1 import normalizer_pb2_grpc as pb_grpc

from .fold import FoldError, Folder, Key, key_of
from .session import (
    CannotRebuildError,
    InvalidSessionError,
    Session,
    SessionClient,
    SessionClosedError,
    SessionError,
    SessionFullError,
    SessionStats,
)

__all__ = [
    "pb",
    "pb_grpc",
    "AcpLine",
    "NormalizerClient",
    "NormalizeStream",
    "connect",
    "parse_acp_line",
    "requests_from_lines",
    "normalize_lines",
    "is_shell_exec",
    "is_frame_error",
    "Folder",
    "FoldError",
    "Key",
    "key_of",
    "SessionClient",
    "Session",
    "SessionStats",
    "SessionError",
    "SessionFullError",
    "CannotRebuildError",
    "SessionClosedError",
    "InvalidSessionError",
]

Result = Union["pb.ShellExec", "pb.FrameError"]


class NormalizerClient:
    """A channel to acpnormd and the NormalizerService stub on it.

    Plaintext unless TLS is asked for: ``tls=True`` (the system's roots),
    ``ca_file`` (a PEM bundle to trust instead), and ``cert_file`` with
    ``key_file`` for mutual TLS. ``token`` (or ``token_file``, read once and
    stripped) is sent on every call as ``authorization: Bearer <token>``;
    over plaintext it is readable by anyone on the path, so use TLS beyond
    loopback. ``server_name`` overrides the name checked in the server's
    certificate. ``options`` are extra grpc channel options.
    """

    def __init__(
        self,
        addr: str,
        *,
        tls: bool = False,
        ca_file: Optional[str] = None,
        cert_file: Optional[str] = None,
        key_file: Optional[str] = None,
        token: Optional[str] = None,
        token_file: Optional[str] = None,
        server_name: Optional[str] = None,
        options: Optional[Sequence[Tuple[str, Any]]] = None,
    ):
        self.addr = addr
        opts = list(options or [])
        if (cert_file is None) != (key_file is None):
            raise ValueError("cert_file and key_file go together (mutual TLS needs both)")
        if token is not None and token_file is not None:
            raise ValueError("give token or token_file, not both")
        if token_file is not None:
            with open(token_file, encoding="utf-8") as f:
                token = f.read().strip()
        if token is not None and (not token or any(c in token for c in "\r\n")):
            raise ValueError("the token is empty or spans lines")
        if tls or ca_file or cert_file or server_name:
            creds = grpc.ssl_channel_credentials(
                root_certificates=_read(ca_file),
                private_key=_read(key_file),
                certificate_chain=_read(cert_file),
            )
            if server_name:
                opts.append(("grpc.ssl_target_name_override", server_name))
            channel = grpc.secure_channel(addr, creds, options=opts)
        else:
            channel = grpc.insecure_channel(addr, options=opts)
        self._raw_channel = channel
        if token is not None:
            channel = grpc.intercept_channel(channel, _BearerToken(token))
        self.channel = channel
        self.stub = pb_grpc.NormalizerServiceStub(self.channel)

    def list_dialects(self, timeout: Optional[float] = None) -> "pb.ListDialectsResponse":
        return self.stub.ListDialects(pb.ListDialectsRequest(), timeout=timeout)

    def get_client_capabilities(
        self, dialect: str = "auto", timeout: Optional[float] = None
    ) -> "pb.GetClientCapabilitiesResponse":
        return self.stub.GetClientCapabilities(
            pb.GetClientCapabilitiesRequest(dialect=dialect), timeout=timeout
        )

    def normalize_lines(self, lines: Iterable[Union[str, bytes]], **opts: Any) -> "NormalizeStream":
        """See :func:`normalize_lines`."""
        return normalize_lines(self.stub, lines, **opts)

    def close(self) -> None:
        self._raw_channel.close()

    def __enter__(self) -> "NormalizerClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _read(path: Optional[str]) -> Optional[bytes]:
    if path is None:
        return None
    with open(path, "rb") as f:
        return f.read()


class _BearerToken(
    grpc.UnaryUnaryClientInterceptor,
    grpc.UnaryStreamClientInterceptor,
    grpc.StreamUnaryClientInterceptor,
    grpc.StreamStreamClientInterceptor,
):
    """Adds ``authorization: Bearer <token>`` to the metadata of every call."""

    def __init__(self, token: str):
        self._pair = ("authorization", f"Bearer {token}")

    def _details(self, details: Any) -> Any:
        metadata = list(details.metadata or []) + [self._pair]
        return _CallDetails(
            details.method, details.timeout, metadata, details.credentials,
            getattr(details, "wait_for_ready", None), getattr(details, "compression", None),
        )

    def intercept_unary_unary(self, continuation: Callable, details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)

    def intercept_unary_stream(self, continuation: Callable, details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)

    def intercept_stream_unary(self, continuation: Callable, details: Any, requests: Any) -> Any:
        return continuation(self._details(details), requests)

    def intercept_stream_stream(self, continuation: Callable, details: Any, requests: Any) -> Any:
        return continuation(self._details(details), requests)


@dataclass(frozen=True)
class _CallDetails(grpc.ClientCallDetails):
    method: str
    timeout: Optional[float]
    metadata: Optional[Sequence[Tuple[str, str]]]
    credentials: Optional[grpc.CallCredentials]
    wait_for_ready: Optional[bool]
    compression: Any


def connect(addr: str = "127.0.0.1:50051", **kwargs: Any) -> NormalizerClient:
    """Opens a gRPC channel to acpnormd at ``host:port``; keyword arguments
    (TLS files, token) are those of :class:`NormalizerClient`."""
    return NormalizerClient(addr, **kwargs)


@dataclass
class AcpLine:
    """One JSON-RPC message read from an ACP recording or from the wire."""

    direction: int  # a pb.Direction value
    message: bytes  # the bytes of the one JSON-RPC message
    parsed: Optional[dict] = None  # the message, when it is a JSON object


_DIRECTIONS = {
    "agent->client": pb.DIRECTION_AGENT_TO_CLIENT,
    "client->agent": pb.DIRECTION_CLIENT_TO_AGENT,
}


def parse_acp_line(line: Union[str, bytes]) -> Optional[AcpLine]:
    """Reads one line of an ACP recording.

    Two formats are understood: the recorder's envelope ``{"dir":
    "agent->client"|"client->agent", "t_ms": N, "msg": {...}}`` and a bare
    JSON-RPC message. Anything else (text that is not JSON included) is passed
    on unchanged with direction UNSPECIFIED, so that the server can report it.
    Returns None for a blank line.
    """
    raw = line.encode("utf-8", "surrogateescape") if isinstance(line, str) else bytes(line)
    raw = raw.strip()
    if not raw:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return AcpLine(pb.DIRECTION_UNSPECIFIED, raw)
    if isinstance(value, dict) and "msg" in value and isinstance(value.get("dir"), str):
        msg = value["msg"]
        return AcpLine(
            _DIRECTIONS.get(value["dir"], pb.DIRECTION_UNSPECIFIED),
            json.dumps(msg, ensure_ascii=False, separators=(",", ":")).encode("utf-8"),
            msg if isinstance(msg, dict) else None,
        )
    return AcpLine(pb.DIRECTION_UNSPECIFIED, raw, value if isinstance(value, dict) else None)


def requests_from_lines(
    lines: Iterable[Union[str, bytes]],
    *,
    session_id: str,
    dialect: str = "auto",
    cwd: str = "",
    turn_ended: bool = True,
    close_session: bool = True,
    first_sequence: int = 1,
) -> Iterator["pb.NormalizeRequest"]:
    """Turns ACP lines into the requests of one Normalize stream.

    One AcpFrame per line, numbered from ``first_sequence``; a TurnEnded after
    the agent answers each ``session/prompt`` request (cancelled when its
    stopReason is "cancelled"), as an orchestrator sends when a prompt turn
    ends; and a SessionClosed after the last line.
    """
    if not session_id:
        raise ValueError("session_id is required")
    seq = first_sequence
    prompts: set = set()
    for line in lines:
        acp = parse_acp_line(line)
        if acp is None:
            continue
        yield pb.NormalizeRequest(
            frame=pb.AcpFrame(
                session_id=session_id,
                dialect=dialect,
                cwd=cwd,
                sequence=seq,
                direction=acp.direction,
                message=acp.message,
            )
        )
        seq += 1
        m = acp.parsed
        if m is None or not turn_ended or m.get("id") is None:
            continue
        key = json.dumps(m["id"])
        if m.get("method") == "session/prompt":
            prompts.add(key)
        elif "method" not in m and key in prompts:
            prompts.discard(key)
            result = m.get("result")
            cancelled = isinstance(result, dict) and result.get("stopReason") == "cancelled"
            yield pb.NormalizeRequest(
                turn_ended=pb.TurnEnded(session_id=session_id, sequence=seq, cancelled=cancelled)
            )
            seq += 1
    if close_session:
        yield pb.NormalizeRequest(session_closed=pb.SessionClosed(session_id=session_id, sequence=seq))


class NormalizeStream:
    """The results of one Normalize stream: iterate for ShellExec and
    FrameError messages in the server's order; :meth:`cancel` ends it (the
    iteration then raises a grpc.RpcError with code CANCELLED)."""

    def __init__(self, call: Any):
        self._call = call

    def __iter__(self) -> Iterator[Result]:
        for res in self._call:
            kind = res.WhichOneof("kind")
            if kind == "shell_exec":
                yield res.shell_exec
            elif kind == "frame_error":
                yield res.frame_error
            # a response kind newer than this client is skipped

    def cancel(self) -> bool:
        return self._call.cancel()

    @property
    def call(self) -> Any:
        """The underlying grpc call (code(), details(), ...)."""
        return self._call


def normalize_lines(
    stub: "pb_grpc.NormalizerServiceStub",
    lines: Iterable[Union[str, bytes]],
    *,
    session_id: str,
    dialect: str = "auto",
    cwd: str = "",
    turn_ended: bool = True,
    close_session: bool = True,
    first_sequence: int = 1,
    timeout: Optional[float] = None,
) -> NormalizeStream:
    """Streams ACP lines (recording lines in either format, or raw JSON-RPC
    messages) to the server on one Normalize stream.

    ``lines`` is read on a gRPC thread as the stream goes; a blocking
    iterator is fine. A malformed line yields a FrameError and the stream
    goes on.
    """
    requests = requests_from_lines(
        lines,
        session_id=session_id,
        dialect=dialect,
        cwd=cwd,
        turn_ended=turn_ended,
        close_session=close_session,
        first_sequence=first_sequence,
    )
    return NormalizeStream(stub.Normalize(requests, timeout=timeout))


def is_shell_exec(r: Result) -> bool:
    return isinstance(r, pb.ShellExec)


def is_frame_error(r: Result) -> bool:
    return isinstance(r, pb.FrameError)

