"""Tests acpnorm_client.Folder: against the shared revision sequences of
test/testdata/fold/vectors.json (which the Go and TypeScript folds meet too),
and against the real acpnormd, whose folded results must equal the goldens
of test/testdata/golden."""

from __future__ import annotations

import hashlib
import json
import os
import re
import unittest

from google.protobuf import json_format

import acpnorm_client
from acpnorm_client import FoldError, Folder, pb
from acpnormd import RECORDINGS, REPO_ROOT, Server

VECTORS = os.path.join(REPO_ROOT, "test", "testdata", "fold", "vectors.json")
GOLDEN = os.path.join(REPO_ROOT, "test", "testdata", "golden")


def exec_from(d: dict) -> "pb.ShellExec":
    return json_format.ParseDict(d, pb.ShellExec())


class VectorsTest(unittest.TestCase):
    def test_vectors(self) -> None:
        with open(VECTORS, encoding="utf-8") as f:
            cases = json.load(f)["cases"]
        self.assertGreater(len(cases), 0)
        for case in cases:
            with self.subTest(case["name"]):
                folder = Folder(limit=case.get("limit", 0))
                for i, step in enumerate(case["steps"]):
                    x = exec_from(step["revision"])
                    want_error = step.get("error")
                    if want_error is None:
                        folder.apply(x)
                        continue
                    with self.assertRaises(FoldError, msg=f"step {i}") as ctx:
                        folder.apply(x)
                    err = ctx.exception
                    self.assertEqual(err.kind, want_error, f"step {i}: {err}")
                    self.assertEqual(err.applied, step.get("applied", False), f"step {i}: {err}")
                    self.assertEqual((err.key, err.got), (acpnorm_client.key_of(x), x.revision))
                    self.assertIn(repr(x.tool_call_id), str(err))
                keys = folder.calls()
                self.assertEqual(len(keys), len(case["want"]))
                for key, want in zip(keys, case["want"]):
                    self.assertEqual(folder.state(key), exec_from(want))

    def test_state_is_stable(self) -> None:
        folder = Folder()
        r1 = pb.ShellExec(session_id="s", tool_call_id="c", revision=1,
                          output=pb.ShellText(text="a", mode=pb.TEXT_MODE_APPEND))
        folder.apply(r1)
        r1.output.text = "changed by the caller"
        first = folder.state(("s", "c"))
        self.assertIs(folder.state(("s", "c")), first)
        folder.apply(pb.ShellExec(session_id="s", tool_call_id="c", revision=2,
                                  output=pb.ShellText(text="b", mode=pb.TEXT_MODE_APPEND)))
        self.assertEqual(first.output.text, "a")
        self.assertEqual(folder.state(("s", "c")).output.text, "ab")
        self.assertIsNone(folder.state(("s", "other")))
        self.assertEqual(folder.revision(("s", "c")), 2)
        self.assertIsNone(folder.revision(("s", "other")))
        folder.delete(("s", "c"))
        self.assertEqual(folder.calls(), [])


def elide(s: str) -> str:
    """What test/golden_test.go writes for a text over 2 KiB."""
    keep = 1024
    b = s.encode("utf-8")
    if len(b) <= 2 * keep:
        return s
    head, tail = b[:keep], b[-keep:]

    def valid(x: bytes) -> bool:
        try:
            x.decode("utf-8")
            return True
        except UnicodeDecodeError:
            return False

    while not valid(head):
        head = head[:-1]
    while not valid(tail):
        tail = tail[1:]
    digest = hashlib.sha256(b).hexdigest()
    return f"{head.decode()}…[{len(b) - len(head) - len(tail)} bytes elided; sha256 of the whole text {digest}]…{tail.decode()}"


def golden_calls(name: str) -> list:
    """The final ShellExec of each call in a golden file, as dicts."""
    with open(os.path.join(GOLDEN, name + ".golden"), encoding="utf-8") as f:
        text = f.read()
    return [json.loads(m) for m in re.findall(r"^\{\n.*?^\}$", text, re.M | re.S)]


class FoldAgainstServerTest(unittest.TestCase):
    """Every recording, streamed through the real binary and folded here,
    gives the goldens that the Go suite folds the same stream into."""

    server: Server

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = Server()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.stop()

    def test_recordings_fold_to_the_goldens(self) -> None:
        names = sorted(n[: -len(".ndjson")] for n in os.listdir(RECORDINGS) if n.endswith(".ndjson"))
        self.assertGreater(len(names), 0)
        with acpnorm_client.connect(self.server.addr) as client:
            for name in names:
                with self.subTest(name), open(os.path.join(RECORDINGS, name + ".ndjson"), encoding="utf-8") as f:
                    folder = Folder()
                    frame_errors = []
                    # As the goldens were made: no TurnEnded from the client.
                    for r in client.normalize_lines(f, session_id=name, turn_ended=False, timeout=60):
                        if acpnorm_client.is_shell_exec(r):
                            folder.apply(r)
                        else:
                            frame_errors.append(r)
                    self.assertEqual(frame_errors, [])
                    got = []
                    for key in folder.calls():
                        s = pb.ShellExec()
                        s.CopyFrom(folder.state(key))
                        s.sequence = 0
                        for field in ("output", "stdout", "stderr"):
                            if s.HasField(field):
                                getattr(s, field).text = elide(getattr(s, field).text)
                        got.append(json_format.MessageToDict(s))
                    self.assertEqual(got, golden_calls(name))


if __name__ == "__main__":
    unittest.main()
