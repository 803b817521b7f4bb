#!/usr/bin/env bash
# Installs what the tests need and a fresh machine lacks, at pinned versions:
# Debian's protoc, grpc_python_plugin, python3-grpcio, python3-protobuf and
# what builds and installs clients/python into a venv (python3-venv,
# python3-setuptools, python3-wheel; PyPI is not needed), the TypeScript client's npm packages (npm ci),
# redis-server (Debian's Redis 7, which the store/redisstore tests start on
# a loopback port), staticcheck, govulncheck, apidiff and kubeconform (into .bin/) with the
# Kubernetes JSON schemas it checks against (.bin/k8s-schemas/), podman for the image test, and the Go code generators (gen/generate.sh
# installs them into .bin/).
# Needs Go and Node with npm. Safe to run again: it installs only what is
# missing.
set -euo pipefail
export GOTOOLCHAIN=go1.27.3 # the Go acpnorm builds with: the go command fetches it from the module proxy
cd "$(dirname "$0")/.."

pkgs=()
command -v protoc >/dev/null || pkgs+=(protobuf-compiler)
command -v grpc_python_plugin >/dev/null || pkgs+=(protobuf-compiler-grpc)
/usr/bin/python3 -c 'import grpc' 2>/dev/null || pkgs+=(python3-grpcio)
/usr/bin/python3 -c 'import google.protobuf' 2>/dev/null || pkgs+=(python3-protobuf)
# test/clients.sh pip-installs clients/python into a fresh venv, offline:
# venv (with ensurepip), and setuptools and wheel to build it.
/usr/bin/python3 -c 'import ensurepip, venv' 2>/dev/null || pkgs+=(python3-venv)
/usr/bin/python3 -c 'import setuptools' 2>/dev/null || pkgs+=(python3-setuptools)
/usr/bin/python3 -c 'import wheel' 2>/dev/null || pkgs+=(python3-wheel)
# The Redis store's tests (internal/testredis) start a real redis-server.
command -v redis-server >/dev/null || pkgs+=(redis-server)
if [ ${#pkgs[@]} -gt 0 ]; then
  echo "== apt-get install ${pkgs[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
fi

# test/image.sh builds the container image with podman (Debian's podman:
# 16 packages, about 40 MB, 7 s to install here). Not fatal: without it the
# image test says SKIP. SKIP_IMAGE=1 installs and tests nothing of it.
if [ "${SKIP_IMAGE:-}" != 1 ] && ! command -v podman >/dev/null && ! docker info >/dev/null 2>&1; then
  echo "== apt-get install podman (for test/image.sh)"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  { $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends podman >/dev/null; } ||
    echo "test/setup.sh: could not install podman; test/image.sh will skip the image test" >&2
fi

# node_modules/.acpnorm-lock is the lockfile the last npm ci installed.
if ! cmp -s clients/ts/package-lock.json clients/ts/node_modules/.acpnorm-lock 2>/dev/null; then
  echo "== npm ci (clients/ts)"
  (cd clients/ts && npm ci --no-audit --no-fund --loglevel=error && cp package-lock.json node_modules/.acpnorm-lock)
fi

# staticcheck, govulncheck and apidiff read the standard library's source
# with the Go they were built with: one built with another Go fails on it,
# so their .version files name that Go too, and another Go rebuilds them.
gover=$(go env GOVERSION)

# staticcheck, pinned; .bin/staticcheck.version says which one is there.
STATICCHECK_VERSION=v0.8.2 # staticcheck 2026.2.2, the newest; it reads Go 1.27.3's code when built with it
if [ "$(cat .bin/staticcheck.version 2>/dev/null)" != "$STATICCHECK_VERSION $gover" ] || [ ! -x .bin/staticcheck ]; then
  echo "== go install staticcheck@$STATICCHECK_VERSION"
  mkdir -p .bin
  GOBIN="$PWD/.bin" go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
  echo "$STATICCHECK_VERSION $gover" > .bin/staticcheck.version
fi

# govulncheck, pinned; it needs https://vuln.go.dev at run time (test/run.sh
# skips it, saying so, when that cannot be reached).
GOVULNCHECK_VERSION=v1.9.0
if [ "$(cat .bin/govulncheck.version 2>/dev/null)" != "$GOVULNCHECK_VERSION $gover" ] || [ ! -x .bin/govulncheck ]; then
  echo "== go install govulncheck@$GOVULNCHECK_VERSION"
  mkdir -p .bin
  GOBIN="$PWD/.bin" go install "golang.org/x/vuln/cmd/govulncheck@$GOVULNCHECK_VERSION"
  echo "$GOVULNCHECK_VERSION $gover" > .bin/govulncheck.version
fi

# apidiff, pinned (golang.org/x/exp has no tags: a pseudo-version); test/apidiff.sh
# runs it to flag incompatible changes to the public normalize package.
APIDIFF_VERSION=v0.0.0-20261113113407-e3970619a1a4
if [ "$(cat .bin/apidiff.version 2>/dev/null)" != "$APIDIFF_VERSION $gover" ] || [ ! -x .bin/apidiff ]; then
  echo "== go install apidiff@$APIDIFF_VERSION"
  mkdir -p .bin
  GOBIN="$PWD/.bin" go install "golang.org/x/exp/cmd/apidiff@$APIDIFF_VERSION"
  echo "$APIDIFF_VERSION $gover" > .bin/apidiff.version
fi

# kubeconform, pinned, checks deploy/k8s in test/run.sh. It cannot fetch its
# schemas at run time (they live on GitHub), so test/k8sschema writes them
# into .bin/k8s-schemas/ from two Go modules the module proxy serves: the
# OpenAPI document of one Kubernetes release (api/openapi-spec/swagger.json
# of k8s.io/kubernetes, an 18 MB zip) and Istio's CRDs for the optional
# DestinationRule (kubernetes/customresourcedefinitions.gen.yaml of
# istio.io/api). .bin/k8s-schemas.stamp says from which versions and
# generator they were made.
KUBECONFORM_VERSION=v0.8.0
K8S_SCHEMA_VERSION=v1.34.4 # the Kubernetes release the manifests are checked against
ISTIO_API_VERSION=v1.31.4
if [ "$(cat .bin/kubeconform.version 2>/dev/null)" != "$KUBECONFORM_VERSION" ] || [ ! -x .bin/kubeconform ]; then
  echo "== go install kubeconform@$KUBECONFORM_VERSION"
  mkdir -p .bin
  GOBIN="$PWD/.bin" go install "github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM_VERSION"
  echo "$KUBECONFORM_VERSION" > .bin/kubeconform.version
fi
k8s_stamp="kubernetes $K8S_SCHEMA_VERSION istio.io/api $ISTIO_API_VERSION generator $(cat test/k8sschema/main.go go.sum | sha256sum | cut -c1-16)"
if [ "$(cat .bin/k8s-schemas.stamp 2>/dev/null)" != "$k8s_stamp" ] || [ ! -d .bin/k8s-schemas ]; then
  echo "== Kubernetes $K8S_SCHEMA_VERSION and Istio $ISTIO_API_VERSION JSON schemas for kubeconform (test/k8sschema)"
  moddir() { # the extracted module, downloaded outside this module so go.mod and go.sum stay as they are
    local tmp
    tmp=$(mktemp -d)
    (cd "$tmp" && go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    rmdir "$tmp"
  }
  k8s_dir=$(moddir "k8s.io/kubernetes@$K8S_SCHEMA_VERSION")
  istio_dir=$(moddir "istio.io/api@$ISTIO_API_VERSION")
  if [ -z "$k8s_dir" ] || [ -z "$istio_dir" ]; then
    echo "test/setup.sh: could not download k8s.io/kubernetes@$K8S_SCHEMA_VERSION or istio.io/api@$ISTIO_API_VERSION from the Go module proxy" >&2
    exit 1
  fi
  rm -rf .bin/k8s-schemas .bin/k8s-schemas.stamp
  go run ./test/k8sschema -out .bin/k8s-schemas \
    -crd "$istio_dir/kubernetes/customresourcedefinitions.gen.yaml" \
    "$k8s_dir/api/openapi-spec/swagger.json"
  echo "$k8s_stamp" > .bin/k8s-schemas.stamp
fi

echo "== go mod download"
go mod download
