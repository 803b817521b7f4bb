"""Starts the real acpnormd binary on a free loopback port for the tests.

The binary is $ACPNORMD_BIN; without it, it is built once from the module
(``go build -o <tmp>/acpnormd ./cmd/acpnormd``).
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

import grpc

import acpnorm_client

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
RECORDINGS = os.path.join(REPO_ROOT, "test", "testdata", "recordings")

# What this module made that a test may leave behind: the processes it
# started and did not stop (a test that failed before it stopped them),
# and the directories it made. A test stops its processes; cleanup() stops
# the rest and removes every directory, at the interpreter's exit, or
# before, called by a runner that ends with os._exit (test/clients.sh).
_running: set = set()
_made_dirs: set = set()


def _temp_dir(prefix: str) -> str:
    d = tempfile.mkdtemp(prefix=prefix)
    _made_dirs.add(d)
    return d


def _remove_dir(d: str) -> None:
    shutil.rmtree(d, ignore_errors=True)
    _made_dirs.discard(d)


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    _running.discard(proc)


def cleanup() -> None:
    """SIGKILLs what this module started and nobody stopped, and removes
    the directories it made."""
    for proc in list(_running):
        _kill(proc)
    for d in list(_made_dirs):
        _remove_dir(d)


atexit.register(cleanup)


def binary() -> str:
    path = os.environ.get("ACPNORMD_BIN")
    if path:
        return path
    out = os.path.join(_temp_dir("acpnormd-"), "acpnormd")
    subprocess.run(["go", "build", "-o", out, "./cmd/acpnormd"], cwd=REPO_ROOT, check=True)
    os.environ["ACPNORMD_BIN"] = out
    return out


def test_certs() -> str:
    """A directory of fresh test certificates, keys and tokens (see
    internal/testcerts): $ACPNORM_TEST_CERTS, or made once with
    ``go run ./test/certgen``."""
    path = os.environ.get("ACPNORM_TEST_CERTS")
    if path:
        return path
    out = _temp_dir("acpnorm-certs-")
    subprocess.run(["go", "run", "./test/certgen", out], cwd=REPO_ROOT, check=True)
    os.environ["ACPNORM_TEST_CERTS"] = out
    return out


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A running acpnormd; stop() sends SIGTERM and waits."""

    def __init__(self, args: tuple = (), **client_kwargs) -> None:
        """Starts acpnormd with extra flags ``args``; ``client_kwargs`` (TLS
        files, token) are what the readiness check connects with."""
        self.addr = f"127.0.0.1:{free_port()}"
        self._log: list = []
        self._client_kwargs = client_kwargs
        self.proc = subprocess.Popen(
            [binary(), "--listen", self.addr, "--metrics-listen=", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        _running.add(self.proc)
        self._drainer = threading.Thread(target=self._drain, daemon=True)
        self._drainer.start()
        try:
            self._wait_ready(15.0)
        except BaseException:
            self.stop()
            raise

    def _drain(self) -> None:
        for line in self.proc.stderr:
            self._log.append(line.decode("utf-8", "replace"))
            del self._log[:-500]

    def log(self) -> str:
        return "".join(self._log)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _wait_ready(self, timeout: float) -> None:
        # Wait for the port first: a gRPC channel that found nothing listening
        # backs off for seconds before it tries again.
        deadline = time.monotonic() + timeout
        host, port = self.addr.rsplit(":", 1)
        last: BaseException = RuntimeError("not tried")
        while time.monotonic() < deadline:
            if not self.alive():
                raise RuntimeError(f"acpnormd exited at start:\n{self.log()}")
            try:
                socket.create_connection((host, int(port)), timeout=1).close()
                with acpnorm_client.connect(self.addr, **self._client_kwargs) as client:
                    client.list_dialects(timeout=2.0)
                return
            except (OSError, grpc.RpcError) as err:
                last = err
                time.sleep(0.05)
        raise RuntimeError(f"acpnormd not ready on {self.addr} after {timeout} s: {last}\n{self.log()}")

    def kill(self) -> None:
        """SIGKILL (no drain, no goodbye); returns when it exited."""
        _kill(self.proc)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
        _kill(self.proc)
        self._drainer.join(2)
        if not self._drainer.is_alive():
            self.proc.stderr.close()


class Redis:
    """Debian's redis-server on a free loopback port, without persistence,
    in a fresh directory (``dir``, removed by stop()). restart() SIGKILLs it
    and starts it again, empty, on the same port: what a store that lost its
    data looks like."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.dir = _temp_dir("acpnorm-redis-")
        self.proc = None
        try:
            self.start()
        except BaseException:
            self.stop()
            raise

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.dir, "--daemonize", "no"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        _running.add(self.proc)
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(64).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server on port {self.port} did not start")
            time.sleep(0.05)

    def _kill(self) -> None:
        if self.proc is not None:
            _kill(self.proc)
        self.proc = None

    def stop(self) -> None:
        """SIGKILL, and removes its directory."""
        self._kill()
        _remove_dir(self.dir)

    def restart(self) -> None:
        self._kill()
        self.start()
