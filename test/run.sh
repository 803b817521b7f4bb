#!/usr/bin/env bash
# Runs every check and test of acpnorm; the README's test command.
#
#   bash test/run.sh            everything (about a minute on 2 cores with warm
#                               Go and npm caches; a fresh machine also installs)
#   FUZZTIME=1m bash test/run.sh  fuzz each target longer
#
# It installs what is missing first (test/setup.sh), then: gofmt, go vet,
# buf lint and a regeneration check of gen/, buf breaking against main,
# go test -race on every package (unit, bufconn service, golden and
# end-to-end tests), each fuzz target for a short time, a ~20 s smoke run of
# the load benchmark (bench/run.sh), the TypeScript and Python client suites
# against the real binary, and a short run of one real agent build against a
# scripted model (test/agents/run.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-10s}

bash test/setup.sh

echo "== gofmt"
bad=$(gofmt -l $(git ls-files '*.go' | grep -v '^gen/'))
if [ -n "$bad" ]; then echo "gofmt would change: $bad" >&2; exit 1; fi

echo "== go vet"
go vet ./...

echo "== go mod tidy leaves go.mod and go.sum unchanged"
go mod tidy -diff

echo "== staticcheck"
.bin/staticcheck ./...

echo "== buf lint, and gen/ (and its copies in the client packages) is what the contract generates"
bash gen/generate.sh
if [ -n "$(git status --porcelain -- gen/ clients/python/acpnorm/ clients/ts/src/gen/)" ]; then
  git status --porcelain -- gen/ clients/python/acpnorm/ clients/ts/src/gen/ >&2
  echo "gen/ or its copies (clients/python/acpnorm/, clients/ts/src/gen/) are stale or were edited by hand: run bash gen/generate.sh and commit the result" >&2
  exit 1
fi

if git rev-parse --verify -q main >/dev/null; then
  echo "== buf breaking against main"
  .bin/buf breaking --against '.git#branch=main'
fi

echo "== go test -race"
go test -race -count=1 ./...

echo "== fuzz, $FUZZTIME per target"
for pkg in $(go list ./internal/...); do
  for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    echo "-- $pkg $target"
    go test -run='^$' -fuzz="^${target}\$" -fuzztime="$FUZZTIME" "$pkg"
  done
done

echo "== load benchmark smoke run (fails on errors, never on speed)"
SMOKE=1 bash bench/run.sh

echo "== clients"
bash test/clients.sh

echo "== real agent smoke: OpenCode, three steps (the full matrix: bash test/agents/run.sh)"
bash test/agents/run.sh --scenario smoke opencode

echo "test/run.sh: all checks passed"
