#!/usr/bin/env python3
"""A minimal orchestrator: streams an ACP recording to a running acpnormd and
prints every ShellExec revision and FrameError it answers with.

    pip install ./clients/python      # in a venv; see clients/python/README.md
    python examples/python/normalize_recording.py [--addr 127.0.0.1:50051] FILE.ndjson

Each line of FILE is a recorder envelope {"dir", "t_ms", "msg"} or a bare
JSON-RPC message. --ca-file (TLS), --cert-file/--key-file (mutual TLS) and
--token-file (a bearer token) reach a server that requires them.
"""

import argparse
import os
import sys

import grpc

import acpnorm_client
from acpnorm_client import pb


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
    ap.add_argument("--ca-file", help="PEM CA bundle: use TLS and trust these roots")
    ap.add_argument("--cert-file", help="PEM client certificate, for mutual TLS (with --key-file)")
    ap.add_argument("--key-file", help="PEM client key, for mutual TLS")
    ap.add_argument("--token-file", help="file holding the bearer token to send")
    ap.add_argument("file", help="ACP recording (.ndjson)")
    args = ap.parse_args()

    try:
        client = acpnorm_client.connect(
            args.addr, ca_file=args.ca_file, cert_file=args.cert_file,
            key_file=args.key_file, token_file=args.token_file,
        )
        with open(args.file, encoding="utf-8", errors="surrogateescape") as f, client:
            results = client.normalize_lines(
                f, session_id=args.session or os.path.basename(args.file), dialect=args.dialect
            )
            for r in results:
                print(describe(r), flush=True)
    except grpc.RpcError as err:
        print(f"acpnorm: {args.addr}: {err.code().name}: {err.details()}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as err:
        print(f"acpnorm: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    code = main()
    # Everything is closed by now. grpcio can hang in interpreter shutdown
    # (rarely: once in about fifty runs here, grpcio 1.51, after a stream
    # failed, with one thread left waiting), so skip the finalisation.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
