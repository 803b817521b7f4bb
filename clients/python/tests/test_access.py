"""Tests the client's TLS, mutual TLS and bearer token, with certificates
made at test time by internal/testcerts: against in-process gRPC servers that
require them (they check what the client sends), and against the real
acpnormd serving mutual TLS and requiring a token."""

from __future__ import annotations

import os
import unittest
from concurrent import futures

import grpc

import acpnorm_client
from acpnorm_client import pb, pb_grpc
from acpnormd import RECORDINGS, Server, test_certs


class _Servicer(pb_grpc.NormalizerServiceServicer):
    """Answers only a call that carries ``authorization: Bearer <token>``."""

    def __init__(self, token: str):
        self.token = token
        self.seen: list = []

    def _check(self, context) -> None:
        values = [v for k, v in context.invocation_metadata() if k == "authorization"]
        self.seen.append(values)
        if values != [f"Bearer {self.token}"]:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")

    def ListDialects(self, request, context):
        self._check(context)
        return pb.ListDialectsResponse(dialects=[pb.DialectInfo(name="generic")])

    def Normalize(self, request_iterator, context):
        self._check(context)
        for req in request_iterator:
            if req.WhichOneof("kind") == "frame":
                yield pb.NormalizeResponse(frame_error=pb.FrameError(
                    session_id=req.frame.session_id, sequence=req.frame.sequence, code=3, message="echo"))


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


class AccessTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.dir = test_certs()
        cls.token = _read(cls.file("token")).decode().strip()
        cls.servers = []
        server_creds = (_read(cls.file("server.key")), _read(cls.file("server.pem")))
        # mutual TLS, TLS only, and plaintext (loopback)
        cls.mtls = cls._serve(grpc.ssl_server_credentials([server_creds], root_certificates=_read(cls.file("ca.pem")), require_client_auth=True))
        cls.tls = cls._serve(grpc.ssl_server_credentials([server_creds]))
        cls.plain = cls._serve(None)

    @classmethod
    def file(cls, name: str) -> str:
        return os.path.join(cls.dir, name)

    @classmethod
    def _serve(cls, creds):
        servicer = _Servicer(cls.token)
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        pb_grpc.add_NormalizerServiceServicer_to_server(servicer, server)
        port = server.add_secure_port("127.0.0.1:0", creds) if creds else server.add_insecure_port("127.0.0.1:0")
        server.start()
        cls.servers.append(server)
        return f"127.0.0.1:{port}", servicer

    @classmethod
    def tearDownClass(cls) -> None:
        for s in cls.servers:
            s.stop(None)

    def full(self, **change):
        kw = dict(ca_file=self.file("ca.pem"), cert_file=self.file("client.pem"),
                  key_file=self.file("client.key"), token_file=self.file("token"))
        kw.update(change)
        return {k: v for k, v in kw.items() if v is not None}

    def code(self, addr: str, **kw):
        """The status of ListDialects and of a Normalize stream; None when OK."""
        codes = []
        with acpnorm_client.connect(addr, **kw) as client:
            for call in (
                lambda: client.list_dialects(timeout=10),
                lambda: list(client.normalize_lines(['{"jsonrpc":"2.0"}'], session_id="s", timeout=10)),
            ):
                try:
                    call()
                    codes.append(None)
                except grpc.RpcError as err:
                    codes.append(err.code())
        self.assertEqual(codes[0], codes[1], "unary and stream calls disagree")
        return codes[0]

    def test_mutual_tls_and_token(self) -> None:
        addr, servicer = self.mtls
        servicer.seen.clear()
        self.assertIsNone(self.code(addr, **self.full()))
        self.assertEqual(servicer.seen, [[f"Bearer {self.token}"]] * 2)

    def test_tls_and_token(self) -> None:
        addr, _ = self.tls
        self.assertIsNone(self.code(addr, **self.full(cert_file=None, key_file=None)))
        self.assertIsNone(self.code(addr, **self.full(cert_file=None, key_file=None, server_name="localhost")))

    def test_token_on_loopback_plaintext(self) -> None:
        addr, servicer = self.plain
        servicer.seen.clear()
        self.assertIsNone(self.code(addr, token=self.token))
        self.assertEqual(servicer.seen, [[f"Bearer {self.token}"]] * 2)

    def test_refused(self) -> None:
        mtls, tls, plain = self.mtls[0], self.tls[0], self.plain[0]
        # A refused handshake is UNAVAILABLE (INTERNAL is allowed too: with
        # TLS 1.3 the client may finish before the server rejects its
        # certificate).
        transport = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.INTERNAL)
        cases = {
            "wrong token": (mtls, self.full(token_file=self.file("wrong-token")), grpc.StatusCode.UNAUTHENTICATED),
            "no token": (mtls, self.full(token_file=None), grpc.StatusCode.UNAUTHENTICATED),
            "no token, plaintext": (plain, {}, grpc.StatusCode.UNAUTHENTICATED),
            # transport-level refusals
            "no client certificate": (mtls, self.full(cert_file=None, key_file=None), transport),
            "client certificate of another CA": (
                mtls, self.full(cert_file=self.file("other-client.pem"), key_file=self.file("other-client.key")),
                transport),
            "server certificate from a CA not trusted": (
                tls, self.full(ca_file=self.file("other-ca.pem"), cert_file=None, key_file=None), transport),
            "plaintext to a TLS server": (tls, {"token_file": self.file("token")}, transport),
            "wrong server name": (
                tls, self.full(cert_file=None, key_file=None, server_name="elsewhere.example"), transport),
        }
        for name, (addr, kw, want) in cases.items():
            with self.subTest(name):
                got = self.code(addr, **kw)
                self.assertIn(got, want if isinstance(want, tuple) else (want,))

    def test_bad_options(self) -> None:
        with self.assertRaises(ValueError):
            acpnorm_client.connect("127.0.0.1:1", ca_file=self.file("ca.pem"), cert_file=self.file("client.pem"))
        with self.assertRaises(ValueError):
            acpnorm_client.connect("127.0.0.1:1", token="a", token_file=self.file("token"))
        for bad in ("", "two\nlines"):
            with self.assertRaises(ValueError):
                acpnorm_client.connect("127.0.0.1:1", token=bad)


if __name__ == "__main__":
    unittest.main()


class AcpnormdAccessTest(unittest.TestCase):
    """The client against the real acpnormd serving mutual TLS and requiring
    a token (--tls-cert, --tls-key, --tls-client-ca, --auth-token-file)."""

    server: Server

    @classmethod
    def setUpClass(cls) -> None:
        cls.dir = test_certs()
        f = cls.file
        cls.kw = dict(ca_file=f("ca.pem"), cert_file=f("client.pem"), key_file=f("client.key"), token_file=f("token"))
        cls.server = Server(
            ("--tls-cert", f("server.pem"), "--tls-key", f("server.key"),
             "--tls-client-ca", f("ca.pem"), "--auth-token-file", f("token")),
            **cls.kw,
        )

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.stop()

    @classmethod
    def file(cls, name: str) -> str:
        return os.path.join(cls.dir, name)

    def test_session_with_tls_and_token(self) -> None:
        with acpnorm_client.SessionClient([self.server.addr], **self.kw) as client, \
                open(os.path.join(RECORDINGS, "codex-acp-0.16.0_shell-command_terminal-meta.ndjson"), encoding="utf-8") as f:
            s = client.session("py-tls-session")
            for line in f:
                acp = acpnorm_client.parse_acp_line(line)
                if acp is not None:
                    s.send(acp.direction, acp.message)
            s.close(timeout=30)
            x = s.call("call_exit3_3")
            self.assertEqual(x.state, pb.SHELL_STATE_ENDED)
            self.assertEqual(x.exit_code, 3)
            self.assertEqual(s.frame_errors(), [])

    def test_normalizes_with_tls_and_token(self) -> None:
        with open(os.path.join(RECORDINGS, "codex-acp-0.16.0_shell-command_terminal-meta.ndjson"), encoding="utf-8") as f, \
                acpnorm_client.connect(self.server.addr, **self.kw) as client:
            folder = acpnorm_client.Folder()
            for r in client.normalize_lines(f, session_id="py-tls", timeout=60):
                self.assertTrue(acpnorm_client.is_shell_exec(r), r)
                folder.apply(r)
        ended = [folder.state(k) for k in folder.calls() if "exit 3" in folder.state(k).command]
        self.assertEqual(len(ended), 1)
        self.assertEqual((ended[0].state, ended[0].exit_code), (pb.SHELL_STATE_ENDED, 3))

    def test_refused(self) -> None:
        for name, change, want in (
            ("wrong token", {"token_file": self.file("wrong-token")}, (grpc.StatusCode.UNAUTHENTICATED,)),
            ("no token", {"token_file": None}, (grpc.StatusCode.UNAUTHENTICATED,)),
            ("no client certificate", {"cert_file": None, "key_file": None}, (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.INTERNAL)),
            ("client certificate of another CA",
             {"cert_file": self.file("other-client.pem"), "key_file": self.file("other-client.key")},
             (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.INTERNAL)),
        ):
            with self.subTest(name):
                kw = {k: v for k, v in {**self.kw, **change}.items() if v is not None}
                with acpnorm_client.connect(self.server.addr, **kw) as client:
                    with self.assertRaises(grpc.RpcError) as ctx:
                        client.list_dialects(timeout=10)
                    self.assertIn(ctx.exception.code(), want)
        self.assertTrue(self.server.alive(), self.server.log())
