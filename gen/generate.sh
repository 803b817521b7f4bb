#!/usr/bin/env bash
# Regenerates every file under gen/ from proto/ with pinned, local plugins:
#   gen/go      protoc-gen-go + protoc-gen-go-grpc (installed into .bin/)
#   gen/ts      @bufbuild/protoc-gen-es (from clients/ts/node_modules; `npm ci`)
#   gen/python  protoc's built-in python and pyi output + grpc_python_plugin
# Usage: bash gen/generate.sh   (from anywhere; needs Go, Node/npm, protoc and
# grpc_python_plugin from Debian's protobuf-compiler and protobuf-compiler-grpc)
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$PWD/.bin"
mkdir -p "$bin"
# Pinned versions; keep them in step with go.mod and clients/ts/package.json.
BUF_VERSION=v1.75.0
PROTOC_GEN_GO_VERSION=v1.36.12
PROTOC_GEN_GO_GRPC_VERSION=v1.6.2
PROTOC_GEN_ES_VERSION=2.17.0
# protoc writes the Python code; its version shows in the output, so pin the
# one Debian bookworm/trixie ship (apt-get install protobuf-compiler).
PROTOC_VERSION="libprotoc 3.21.12"
want() { [ -x "$bin/$1" ] && [ "$(cat "$bin/$1.version" 2>/dev/null)" = "$2" ]; }
want buf "$BUF_VERSION" || { GOBIN="$bin" go install "github.com/bufbuild/buf/cmd/buf@$BUF_VERSION" && echo "$BUF_VERSION" > "$bin/buf.version"; }
want protoc-gen-go "$PROTOC_GEN_GO_VERSION" || { GOBIN="$bin" go install "google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOC_GEN_GO_VERSION" && echo "$PROTOC_GEN_GO_VERSION" > "$bin/protoc-gen-go.version"; }
want protoc-gen-go-grpc "$PROTOC_GEN_GO_GRPC_VERSION" || { GOBIN="$bin" go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC_VERSION" && echo "$PROTOC_GEN_GO_GRPC_VERSION" > "$bin/protoc-gen-go-grpc.version"; }

# protoc-gen-es comes from clients/ts's lockfile (buf.gen.yaml names it by path).
es_version() { node -p 'require("./clients/ts/node_modules/@bufbuild/protoc-gen-es/package.json").version' 2>/dev/null || true; }
if [ "$(es_version)" != "$PROTOC_GEN_ES_VERSION" ]; then
  (cd clients/ts && npm ci --no-audit --no-fund)
fi
if [ "$(es_version)" != "$PROTOC_GEN_ES_VERSION" ]; then
  echo "gen/generate.sh: clients/ts has protoc-gen-es $(es_version), want $PROTOC_GEN_ES_VERSION (fix clients/ts/package.json)" >&2
  exit 1
fi

for tool in protoc grpc_python_plugin; do
  command -v "$tool" >/dev/null || {
    echo "gen/generate.sh: $tool not found; apt-get install protobuf-compiler protobuf-compiler-grpc" >&2
    exit 1
  }
done
if [ "$(protoc --version)" != "$PROTOC_VERSION" ]; then
  echo "gen/generate.sh: $(command -v protoc) is '$(protoc --version)', want '$PROTOC_VERSION' (Debian's protobuf-compiler); gen/python would differ" >&2
  exit 1
fi

export PATH="$bin:$PATH"
buf lint
buf generate   # clean: true empties gen/go, gen/ts and gen/python first

# gen/ts is plain TypeScript that imports @bufbuild/protobuf. Mark it as ES
# modules, and let Node and tsc find that runtime in clients/ts (one copy,
# shared with the client) through the committed symlink gen/node_modules.
# Never put a symlink inside an out dir: buf's clean follows it and deletes
# the files it points to.
printf '{\n  "type": "module"\n}\n' > gen/ts/package.json
[ "$(readlink gen/node_modules 2>/dev/null)" = ../clients/ts/node_modules ] || ln -sfn ../clients/ts/node_modules gen/node_modules
