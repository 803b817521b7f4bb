#!/usr/bin/env bash
# Builds the acpnormd container image (deploy/image/Containerfile).
#
#   bash deploy/image/build.sh [IMAGE]     default IMAGE: acpnormd:$VERSION
#
# It compiles a static acpnormd on the host with the Go that go.mod pins
# (CGO_ENABLED=0, -trimpath, version and commit set with -ldflags; this is
# the image's builder stage: see the Containerfile for why it is not a
# "FROM golang" stage), assembles a build context with the binary, the
# host's CA bundle and an unprivileged user, and builds the image with
# podman, or docker when podman is missing or unusable.
#
# Environment:
#   ENGINE    podman or docker (default: the first that answers 'info')
#   VERSION   the version to stamp (default: git describe --tags --always --dirty)
#   COMMIT    the commit to stamp (default: git rev-parse HEAD)
#   KEEP_CONTEXT=1  print and keep the build context directory
#
# Exit status: 0 built, 3 no usable container engine, other: failed.
set -euo pipefail
export GOTOOLCHAIN=go1.27.3 # the Go acpnorm builds with: the go command fetches it from the module proxy
cd "$(dirname "$0")/../.."

VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
COMMIT=${COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
IMAGE=${1:-acpnormd:$VERSION}

usable() { command -v "$1" >/dev/null && "$1" info >/dev/null 2>&1; }
if [ -z "${ENGINE:-}" ]; then
  for e in podman docker; do
    if usable "$e"; then ENGINE=$e; break; fi
  done
fi
if [ -z "${ENGINE:-}" ] || ! usable "$ENGINE"; then
  echo "deploy/image/build.sh: no usable container engine (${ENGINE:-podman or docker}): install podman (apt-get install podman) or start docker" >&2
  exit 3
fi

certs=/etc/ssl/certs/ca-certificates.crt
if [ ! -s "$certs" ]; then
  echo "deploy/image/build.sh: no CA bundle at $certs: apt-get install ca-certificates" >&2
  exit 1
fi

ctx=$(mktemp -d)
if [ "${KEEP_CONTEXT:-}" = 1 ]; then
  echo "build context: $ctx"
else
  trap 'rm -rf "$ctx"' EXIT
fi

echo "== go build (static, -trimpath) acpnormd $VERSION, commit $COMMIT, $(go env GOVERSION)"
CGO_ENABLED=0 GOOS=linux go build -trimpath \
  -ldflags "-s -w -X main.version=$VERSION -X main.commit=$COMMIT" \
  -o "$ctx/acpnormd" ./cmd/acpnormd

cp "$certs" "$ctx/ca-certificates.crt"
printf 'acpnorm:x:65532:65532:acpnorm:/:/sbin/nologin\n' > "$ctx/passwd"
printf 'acpnorm:x:65532:\n' > "$ctx/group"
cp deploy/image/Containerfile "$ctx/Containerfile"

format=()
[ "$ENGINE" = podman ] && format=(--format docker) # keep HEALTHCHECK
echo "== $ENGINE build $IMAGE"
"$ENGINE" build "${format[@]}" \
  --build-arg "VERSION=$VERSION" --build-arg "COMMIT=$COMMIT" \
  -f "$ctx/Containerfile" -t "$IMAGE" "$ctx"
echo "built $IMAGE with $ENGINE"
