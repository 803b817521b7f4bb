#!/usr/bin/env bash
# Tests the container image: builds it with deploy/image/build.sh, checks its
# configuration (non-root numeric user, entrypoint, health check, CA bundle),
# then takes the binary out of the image and runs it here: --version must
# carry the stamped version, the build must be static and trimmed, and a
# real serve must answer the health command. Running the container itself
# is not attempted: the sandbox's limits block it.
#
#   bash test/image.sh        (test/run.sh runs it)
#
# Needs podman or docker. Without a usable one it prints "SKIP" and exits 0;
# SKIP_IMAGE=1 skips it on purpose. test/setup.sh installs Debian's podman.
set -uo pipefail
export GOTOOLCHAIN=go1.27.3 # the Go acpnorm builds with: the go command fetches it from the module proxy
cd "$(dirname "$0")/.."

if [ "${SKIP_IMAGE:-}" = 1 ]; then
  echo "SKIP image test: SKIP_IMAGE=1"
  exit 0
fi
ENGINE=${ENGINE:-}
usable() { command -v "$1" >/dev/null && "$1" info >/dev/null 2>&1; }
if [ -z "$ENGINE" ]; then
  for e in podman docker; do
    if usable "$e"; then ENGINE=$e; break; fi
  done
fi
if [ -z "$ENGINE" ]; then
  echo "SKIP image test: no usable podman or docker (apt-get install podman)"
  exit 0
fi
export ENGINE

version=v0.0.0-imagetest
tag=localhost/acpnormd:imagetest-$$
tmp=$(mktemp -d)
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill -TERM "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null; fi
  "$ENGINE" rmi -f "$tag" >/dev/null 2>&1
  rm -rf "$tmp"
}
trap cleanup EXIT

pass=0 fail=0
check() { # check NAME COMMAND...: runs COMMAND, counts and reports it
  local name=$1; shift
  if "$@"; then echo "ok   $name"; pass=$((pass + 1)); else echo "FAIL $name"; fail=$((fail + 1)); fi
}

echo "== building the image ($ENGINE)"
if ! VERSION=$version bash deploy/image/build.sh "$tag"; then
  echo "FAIL image build"
  echo "image: 0 passed, 1 failed"
  exit 1
fi

config() { "$ENGINE" image inspect --format "$1" "$tag"; }
check "runs as the numeric non-root user 65532" test "$(config '{{.Config.User}}')" = "65532:65532"
check "entrypoint is acpnormd, serve by default" test "$(config '{{json .Config.Entrypoint}} {{json .Config.Cmd}}')" = '["/usr/local/bin/acpnormd"] ["serve"]'
check "health check runs acpnormd health" grep -q '"/usr/local/bin/acpnormd","health"' <<<"$(config '{{json .Config.Healthcheck}}')"
check "licence label" test "$(config '{{index .Config.Labels "org.opencontainers.image.licenses"}}')" = "Apache-2.0"

echo "== taking the binary and the CA bundle out of the image"
cid=$("$ENGINE" create "$tag") || { echo "FAIL $ENGINE create"; exit 1; }
"$ENGINE" cp "$cid:/usr/local/bin/acpnormd" "$tmp/acpnormd"
"$ENGINE" cp "$cid:/etc/ssl/certs/ca-certificates.crt" "$tmp/ca.crt"
"$ENGINE" rm "$cid" >/dev/null 2>&1 # podman may complain about systemd timers here; harmless
bin=$tmp/acpnormd
check "CA bundle present" test -s "$tmp/ca.crt"
check "--version says $version" grep -qx "acpnormd $version" <<<"$("$bin" --version)"
info=$(go version -m "$bin")
check "static build (CGO_ENABLED=0)" grep -q "CGO_ENABLED=0" <<<"$info"
check "trimmed paths (-trimpath)" grep -q -- "-trimpath=true" <<<"$info"
check "no dynamic loader" bash -c '! grep -q "ld-linux" "$1"' _ "$bin"

echo "== serve and health with the binary from the image"
"$bin" serve --listen 127.0.0.1:0 --metrics-listen= 2>"$tmp/serve.log" &
server_pid=$!
addr=
for _ in $(seq 200); do
  addr=$(sed -n 's/.*msg=serving grpc=\([^ ]*\).*/\1/p' "$tmp/serve.log")
  [ -n "$addr" ] && break
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$addr" ]; then
  echo "FAIL serve did not start"; cat "$tmp/serve.log"; fail=$((fail + 1))
else
  check "health SERVING while it serves" grep -qx "$addr SERVING" <<<"$("$bin" health --addr "$addr")"
  kill -TERM "$server_pid"; wait "$server_pid"; server_pid=
  check "health exits 1 once it stopped" bash -c '! "$1" health --addr "$2" 2>/dev/null' _ "$bin" "$addr"
fi

echo "image: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
