#!/usr/bin/env bash
# The service load benchmark: builds acpnormd, the echo baseline
# (bench/echod) and the load client (bench/cmd/acpbench), then runs every
# scenario against both servers on loopback, interleaved, at 1, 8 and 32
# concurrent streams, and prints acpnorm's figures beside the baseline's
# with the ratio (medians over rounds). About 5 minutes on 2 cores.
#
#   bash bench/run.sh                         the full run (3 rounds x 2 s cells)
#   bash bench/run.sh -rounds 5 -c 8          any acpbench flag (go run ./bench/cmd/acpbench -h)
#   SMOKE=1 bash bench/run.sh                 a ~20 s run (CI): fails on errors, never on speed
#   GHZ=1 bash bench/run.sh                   the same scenarios driven by ghz v0.121.0 instead
#   STORE=1 bash bench/run.sh                 acpnormd --store redis://... against acpnormd in memory,
#                                             and acpnormd --store-wait-replicas 1 against both,
#                                             in the same run, on the mixed load (starts Debian's
#                                             redis-server and one replica of it on loopback ports;
#                                             about 2 minutes)
#
# SMOKE=1 also runs the store comparison briefly when redis-server is installed
# (test/setup.sh installs it).
#
# Results: the table on stdout; bench/out/results.json and bench/out/chart.png
# (STORE=1: bench/out/store.json).
# Fails (exit 1) when a run saw a FrameError, a failed send or a broken stream.
set -euo pipefail
export GOTOOLCHAIN=go1.27.3 # the Go acpnorm builds with: the go command fetches it from the module proxy
cd "$(dirname "$0")/.."
GHZ_VERSION=v0.121.0
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/acpnormd" ./cmd/acpnormd
go build -o "$bin/echod" ./bench/echod
go build -o "$bin/acpbench" ./bench/cmd/acpbench
mkdir -p bench/out

if [ "${GHZ:-}" = 1 ]; then
  # ghz is pinned (@latest is old) and installed into .bin/; CI never runs it.
  if [ "$(cat .bin/ghz.version 2>/dev/null)" != "$GHZ_VERSION" ]; then
    GOBIN="$PWD/.bin" go install "github.com/bojand/ghz/cmd/ghz@$GHZ_VERSION"
    echo "$GHZ_VERSION" > .bin/ghz.version
  fi
  exec timeout 30m "$bin/acpbench" ghz -ghz .bin/ghz -acpnormd "$bin/acpnormd" -echod "$bin/echod" "$@"
fi

if [ "${STORE:-}" = 1 ]; then
  command -v redis-server >/dev/null || { echo "bench/run.sh: STORE=1 needs redis-server (bash test/setup.sh installs it)" >&2; exit 1; }
  timeout 30m "$bin/acpbench" store -acpnormd "$bin/acpnormd" -redis-server "$(command -v redis-server)" \
    -json bench/out/store.json -c 1,8 -wait-replicas 1 "$@"
  exit 0
fi

if [ "${SMOKE:-}" = 1 ]; then
  set -- -rounds 1 -duration 700ms -c 1,8 "$@"
  if command -v redis-server >/dev/null; then
    echo "== the Redis store against memory, briefly"
    timeout 5m "$bin/acpbench" store -acpnormd "$bin/acpnormd" -redis-server "$(command -v redis-server)" \
      -rounds 1 -duration 500ms -c 1,8 -wait-replicas 1
  else
    echo "SKIP the Redis store smoke run: no redis-server (bash test/setup.sh installs it)"
  fi
fi
# Bounded: the full run takes about 5 minutes; a stuck server ends it.
timeout 30m "$bin/acpbench" -acpnormd "$bin/acpnormd" -echod "$bin/echod" \
  -json bench/out/results.json -png bench/out/chart.png "$@"
