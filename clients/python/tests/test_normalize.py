"""Tests the Python client against the real acpnormd binary: a real ACP
recording streamed through Normalize, a malformed frame in the middle of a
stream, and a stream cancelled half way."""

from __future__ import annotations

import json
import os
import threading
import unittest

import grpc

import acpnorm_client
from acpnorm_client import pb

from acpnormd import RECORDINGS, Server

CODEX = "codex-acp-0.16.0_shell-command_terminal-meta.ndjson"


def recording(name: str) -> list:
    with open(os.path.join(RECORDINGS, name), encoding="utf-8") as f:
        return [line for line in f.read().split("\n") if line.strip()]


def tool_call_ids(lines: list) -> set:
    ids = set()
    for line in lines:
        o = json.loads(line)
        m = o.get("msg", o)
        params = m.get("params") or {}
        tc = (params.get("update") or {}).get("toolCallId") or (params.get("toolCall") or {}).get("toolCallId")
        if isinstance(tc, str):
            ids.add(tc)
    return ids


def collect(stream) -> tuple:
    execs, errors = [], []
    for r in stream:
        (execs if acpnorm_client.is_shell_exec(r) else errors).append(r)
    return execs, errors


def by_call(execs: list) -> dict:
    calls: dict = {}
    for e in execs:
        calls.setdefault(e.tool_call_id, []).append(e)
    return calls


class NormalizeTest(unittest.TestCase):
    server: Server
    client: acpnorm_client.NormalizerClient
    _sessions = 0

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = Server()
        cls.client = acpnorm_client.connect(cls.server.addr)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.client.close()
        cls.server.stop()

    def session(self, name: str) -> str:
        NormalizeTest._sessions += 1
        return f"py-{name}-{os.getpid()}-{NormalizeTest._sessions}"

    def assert_well_formed(self, execs: list, session_id: str) -> None:
        for call_id, revs in by_call(execs).items():
            for i, e in enumerate(revs):
                self.assertEqual(e.session_id, session_id)
                self.assertGreaterEqual(e.revision, 1, call_id)
                self.assertEqual(e.revision, i + 1, f"{call_id}: revisions must count 1, 2, 3, ... with no gap")

    def exit3(self, execs: list):
        match = [revs for revs in by_call(execs).values() if any("exit 3" in e.command for e in revs)]
        self.assertEqual(len(match), 1, "exactly one call runs `exit 3`")
        return match[0][-1]

    def test_list_dialects(self) -> None:
        res = self.client.list_dialects(timeout=5)
        self.assertGreaterEqual(len(res.dialects), 1)
        self.assertTrue(all(d.name for d in res.dialects))

    def test_codex_recording(self) -> None:
        lines = recording(CODEX)
        session_id = self.session("codex")
        execs, errors = collect(self.client.normalize_lines(lines, session_id=session_id, timeout=60))
        self.assertEqual(errors, [], "a real recording has no bad frame")
        self.assert_well_formed(execs, session_id)

        ids = {e.tool_call_id for e in execs}
        self.assertLessEqual(ids, tool_call_ids(lines))
        # Nine steps; the two Codex reports as a search may or may not count
        # as shell calls, the seven `execute` ones must.
        self.assertTrue(7 <= len(ids) <= 9, f"distinct shell calls: {len(ids)}")

        last = self.exit3(execs)
        self.assertEqual(last.state, pb.SHELL_STATE_ENDED)
        self.assertTrue(last.HasField("exit_code"))
        self.assertEqual(last.exit_code, 3)
        self.assertEqual(last.outcome, pb.SHELL_OUTCOME_FAILED)
        # The build its initialize result named, on every revision.
        self.assertEqual({e.agent_version for e in execs}, {"0.16.0"})

        # The stream ended with SessionClosed, so every call ended.
        for call_id, revs in by_call(execs).items():
            self.assertEqual(revs[-1].state, pb.SHELL_STATE_ENDED, f"{call_id} did not end")

    def test_frame_that_is_not_json(self) -> None:
        lines = recording(CODEX)
        bad_at = 4  # after initialize, session/new and their answers: sequence 5
        with_bad = lines[:bad_at] + ["not json"] + lines[bad_at:]
        session_id = self.session("bad")
        execs, errors = collect(self.client.normalize_lines(with_bad, session_id=session_id, timeout=60))
        self.assertEqual(len(errors), 1, [e.message for e in errors])
        err = errors[0]
        self.assertEqual(err.code, grpc.StatusCode.INVALID_ARGUMENT.value[0])  # 3
        self.assertEqual(err.sequence, bad_at + 1)
        self.assertEqual(err.session_id, session_id)
        self.assertNotEqual(err.message, "")

        # Frames after the bad one were still read.
        self.assertTrue(any(e.sequence > err.sequence for e in execs), "no ShellExec after the bad frame")
        self.assert_well_formed(execs, session_id)
        last = self.exit3(execs)
        self.assertEqual(last.state, pb.SHELL_STATE_ENDED)
        self.assertEqual(last.exit_code, 3)

    def test_cancel(self) -> None:
        lines = recording(CODEX)
        stop = threading.Event()
        closed = threading.Event()

        # Sends the first prompt turns, then waits for input that never comes,
        # like an orchestrator whose agent is still thinking.
        def slow_lines():
            try:
                yield from lines[:22]
                stop.wait(30)
            finally:
                closed.set()

        stream = self.client.normalize_lines(slow_lines(), session_id=self.session("cancel"))
        seen = []
        with self.assertRaises(grpc.RpcError) as ctx:
            for r in stream:
                if acpnorm_client.is_shell_exec(r):
                    seen.append(r)
                    stream.cancel()
        self.assertEqual(ctx.exception.code(), grpc.StatusCode.CANCELLED)
        self.assertGreaterEqual(len(seen), 1)
        stop.set()
        self.assertTrue(closed.wait(5), "the request iterator was not released")

        # The server is alive and a new stream on the same channel works.
        self.assertTrue(self.server.alive(), self.server.log())
        self.client.list_dialects(timeout=5)
        session_id = self.session("after-cancel")
        execs, errors = collect(self.client.normalize_lines(lines[:22], session_id=session_id, timeout=60))
        self.assertEqual(errors, [])
        self.assert_well_formed(execs, session_id)
        self.assertEqual(self.exit3(execs).exit_code, 3)


if __name__ == "__main__":
    unittest.main()
