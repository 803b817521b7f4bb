#!/usr/bin/env bash
# Regenerates every file under gen/ from proto/ with pinned, local plugins.
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
want() { [ -x "$bin/$1" ] && [ "$(cat "$bin/$1.version" 2>/dev/null)" = "$2" ]; }
want buf "$BUF_VERSION" || { GOBIN="$bin" go install "github.com/bufbuild/buf/cmd/buf@$BUF_VERSION" && echo "$BUF_VERSION" > "$bin/buf.version"; }
want protoc-gen-go "$PROTOC_GEN_GO_VERSION" || { GOBIN="$bin" go install "google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOC_GEN_GO_VERSION" && echo "$PROTOC_GEN_GO_VERSION" > "$bin/protoc-gen-go.version"; }
want protoc-gen-go-grpc "$PROTOC_GEN_GO_GRPC_VERSION" || { GOBIN="$bin" go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC_VERSION" && echo "$PROTOC_GEN_GO_GRPC_VERSION" > "$bin/protoc-gen-go-grpc.version"; }
export PATH="$bin:$PATH"
buf lint
buf generate
