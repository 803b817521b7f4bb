#!/usr/bin/env python3
"""A minimal orchestrator: streams an ACP recording to a running acpnormd and
prints every ShellExec revision and FrameError it answers with.

    /usr/bin/python3 examples/python/normalize_recording.py [--addr 127.0.0.1:50051] FILE.ndjson

Each line of FILE is a recorder envelope {"dir", "t_ms", "msg"} or a bare
JSON-RPC message. Needs grpcio and protobuf (Debian's python3-grpcio and
python3-protobuf, or pip install grpcio protobuf).
"""

import argparse
import os
import sys

# The client package of this repository (it finds gen/python by itself).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))

import acpnorm_client  # noqa: E402
from acpnorm_client import pb  # noqa: E402


def describe(r) -> str:
    if acpnorm_client.is_frame_error(r):
        return f"frame error seq={r.sequence} code={r.code}: {r.message}"
    line = f"{r.tool_call_id} rev={r.revision} {pb.ShellState.Name(r.state).removeprefix('SHELL_STATE_')}"
    if r.state == pb.SHELL_STATE_ENDED:
        line += f" {pb.ShellOutcome.Name(r.outcome).removeprefix('SHELL_OUTCOME_')}"
        if r.HasField("exit_code"):
            line += f" exit={r.exit_code}"
    return f"{line} $ {r.command}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--addr", default="127.0.0.1:50051", help="acpnormd gRPC address")
    ap.add_argument("--session", default=None, help="session id (default: the file name)")
    ap.add_argument("--dialect", default="auto", help="dialect name or auto")
    ap.add_argument("file", help="ACP recording (.ndjson)")
    args = ap.parse_args()

    with open(args.file, encoding="utf-8", errors="surrogateescape") as f, acpnorm_client.connect(args.addr) as client:
        results = client.normalize_lines(
            f, session_id=args.session or os.path.basename(args.file), dialect=args.dialect
        )
        for r in results:
            print(describe(r), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
