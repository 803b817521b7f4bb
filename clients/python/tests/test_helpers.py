"""Tests the helpers of acpnormd.py: what they start is gone once stopped,
and once the interpreter exits when a test did not stop it. They left an
empty /tmp/acpnorm-redis-* directory behind for every redis-server they
started."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

from acpnormd import Redis

HERE = os.path.dirname(os.path.abspath(__file__))

# A test that starts a redis-server and an acpnormd and stops neither, then
# exits: what a test run that failed half-way leaves.
_LEAVE_RUNNING = """
import json, sys
sys.path.insert(0, sys.argv[1])
from acpnormd import Redis, Server
redis = Redis()
server = Server(("--store", redis.url))
with open(sys.argv[2], "w") as f:
    json.dump({"dir": redis.dir, "pids": [redis.proc.pid, server.proc.pid]}, f)
"""


def running(pid: int) -> bool:
    """Whether the process runs (a zombie does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


class HelpersTest(unittest.TestCase):
    def test_redis_leaves_nothing_once_stopped(self) -> None:
        for restart in (False, True):
            with self.subTest(restart=restart):
                r = Redis()
                self.assertTrue(os.path.isdir(r.dir))
                if restart:
                    r.restart()
                pid = r.proc.pid
                self.assertTrue(running(pid))
                r.stop()
                self.assertFalse(os.path.exists(r.dir), f"{r.dir} is left")
                self.assertFalse(running(pid), f"redis-server {pid} runs")

    def test_what_a_test_did_not_stop_is_stopped_at_exit(self) -> None:
        tmp = tempfile.mkdtemp(prefix="acpnorm-helpers-")
        left: dict = {}
        try:
            report = os.path.join(tmp, "left.json")
            r = subprocess.run(
                [sys.executable, "-c", _LEAVE_RUNNING, HERE, report],
                capture_output=True, text=True, timeout=60,
            )
            with open(report) as f:
                left = json.load(f)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(len(left["pids"]), 2)
            self.assertFalse(os.path.exists(left["dir"]), f"{left['dir']} is left")
            for pid in left["pids"]:
                self.assertFalse(running(pid), f"process {pid} runs")
        finally:
            # What the helpers failed to stop: the processes of this test's
            # own child, by pid.
            for pid in left.get("pids", ()):
                if running(pid):
                    os.kill(pid, signal.SIGKILL)
            if left:
                shutil.rmtree(left["dir"], ignore_errors=True)
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
