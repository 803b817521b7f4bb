"""A session that survives failures: streams an ACP recording to a fleet of
acpnormd through the client's Session (reconnects, resends, rebuilds after
the store lost the session) and prints each call's final state.

    python3 -m venv --system-site-packages .venv
    .venv/bin/pip install --no-build-isolation --no-index ./clients/python
    .venv/bin/python examples/python/session_recording.py --addr 10.0.0.1:50051,10.0.0.2:50051 FILE.ndjson

Each line of FILE is a recorder envelope {"dir", "t_ms", "msg"} or a bare
JSON-RPC message.
"""

from __future__ import annotations

import argparse
import os
import sys

import acpnorm_client
from acpnorm_client import pb


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--addr", default="127.0.0.1:50051", help="HOST:PORT,HOST:PORT,...")
    ap.add_argument("--session")
    ap.add_argument("--token-file")
    ap.add_argument("file")
    args = ap.parse_args()
    try:
        with acpnorm_client.SessionClient(
            args.addr.split(","), backoff=(0.05, 2.0), token_file=args.token_file
        ) as client, open(args.file, encoding="utf-8") as f:
            s = client.session(
                args.session or os.path.basename(args.file),
                # live, in order, never twice
                on_revision=lambda x: print(f"{x.tool_call_id} rev={x.revision} {pb.ShellState.Name(x.state)[12:]}"),
            )
            for line in f:
                acp = acpnorm_client.parse_acp_line(line)
                if acp is not None:
                    s.send(acp.direction, acp.message)  # queued; returns at once
            s.close(timeout=60)  # SessionClosed, then every answer received
            for x in s.calls():
                exit_code = f" exit={x.exit_code}" if x.HasField("exit_code") else ""
                print(
                    f"final {x.tool_call_id} rev={x.revision} {pb.ShellState.Name(x.state)[12:]} "
                    f"{pb.ShellOutcome.Name(x.outcome)[14:]}{exit_code} $ {x.command}"
                )
            print(f"stats {s.stats}")
    except (acpnorm_client.SessionError, OSError) as err:
        print(f"acpnorm: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # see normalize_recording.py: grpcio 1.51 can hang at exit
