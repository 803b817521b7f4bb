#!/usr/bin/env bash
# Runs every check and test of acpnorm; the README's test command.
#
#   bash test/run.sh            everything (5 to 9 minutes on a busy, shared
#                               2-core machine with warm Go and npm caches; a
#                               fresh machine also installs)
#   FUZZTIME=2000000x bash test/run.sh  fuzz each target longer
#
# The steps, in order:
#   1. test/setup.sh installs what is missing (apt: protoc, grpc_python_plugin,
#      python3-grpcio/-protobuf/-venv/-setuptools/-wheel, podman; npm ci in
#      clients/ts; staticcheck, govulncheck, apidiff, kubeconform and its schemas, and the
#      code generators into .bin/);
#   2. gofmt, go vet, go mod tidy -diff (go.mod and go.sum are tidy),
#      staticcheck, govulncheck (skipped, saying so, when its database at
#      vuln.go.dev cannot be reached), and the licence copies in the client
#      packages;
#   3. buf lint and a regeneration check of the generated code, gen/go,
#      clients/ts/src/gen and clients/python/acpnorm (bash gen/generate.sh
#      must leave them unchanged), then buf breaking against main, and apidiff on the
#      public normalize package against the last tag or main
#      (test/apidiff.sh); kubeconform -strict on the Kubernetes manifests in
#      deploy/k8s, against schemas generated offline by test/setup.sh;
#   4. go test -race on every package: unit, bufconn service, golden,
#      conformance, end-to-end and command-line tests (the dialects'
#      whole-corpus walks again without -race); then the chaos
#      suite's short run (test/chaos: three acpnormd on Sentinel and Cluster
#      Redis, faults on a seeded schedule, about 90 s);
#   5. each fuzz target for FUZZTIME inputs (20000x; a count, not a
#      duration: Go 1.26's fuzz coordinator can fail a duration-bounded run
#      with a bare "context deadline exceeded" at the deadline, with no
#      failing input, golang/go#75804; the count includes the seeds, so a
#      target whose seeds take all of it fails the step), then a ~20 s
#      smoke run of the load benchmark (bench/run.sh);
#   6. the TypeScript and Python client suites and the three examples
#      against the real binary (test/clients.sh);
#   7. the container image: build it and check the binary taken out of it
#      (test/image.sh; it says SKIP without podman or docker);
#   8. the real-agent harness's own tests, the committed agent recordings
#      replayed against this tree (test/agents/run.sh --replay), then a
#      short run of one real agent build against a scripted model
#      (test/agents/run.sh --scenario smoke opencode).
set -euo pipefail
export GOTOOLCHAIN=go1.27.3 # the Go acpnorm builds with: the go command fetches it from the module proxy
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-20000x}

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

echo "== govulncheck (known vulnerabilities in the code paths the module uses)"
# Exit 3 means it found vulnerabilities: that fails. When its database
# (https://vuln.go.dev) cannot be reached it skips, saying so; any other
# error fails.
vuln_rc=0
vuln_out=$(.bin/govulncheck ./... 2>&1) || vuln_rc=$?
if [ "$vuln_rc" -eq 0 ]; then
  echo "$vuln_out" | tail -n 2
elif [ "$vuln_rc" -ne 3 ] && grep -q 'fetching vulnerabilities' <<<"$vuln_out"; then
  echo "SKIP govulncheck: its vulnerability database cannot be reached from this machine:"
  grep -m1 'fetching vulnerabilities' <<<"$vuln_out"
else
  echo "$vuln_out" >&2
  exit 1
fi

echo "== each package carries the licence (LICENSE, copied into clients/ts and clients/python)"
for copy in clients/ts/LICENSE clients/python/LICENSE; do
  cmp -s LICENSE "$copy" || { echo "$copy differs from LICENSE: cp LICENSE $copy" >&2; exit 1; }
done

echo "== buf lint, and the generated code (gen/go, clients/ts/src/gen, clients/python/acpnorm) is what the contract generates"
bash gen/generate.sh
if [ -n "$(git status --porcelain -- gen/ clients/python/acpnorm/ clients/ts/src/gen/)" ]; then
  git status --porcelain -- gen/ clients/python/acpnorm/ clients/ts/src/gen/ >&2
  echo "the generated code (gen/, clients/python/acpnorm/, clients/ts/src/gen/) is stale or was edited by hand: run bash gen/generate.sh and commit the result" >&2
  exit 1
fi

if git rev-parse --verify -q main >/dev/null; then
  echo "== buf breaking against main"
  .bin/buf breaking --against '.git#branch=main'
fi

echo "== apidiff: no incompatible change to the public Go package (normalize) since the last tag, else main"
bash test/apidiff.sh

echo "== kubernetes manifests: kubeconform -strict on deploy/k8s, offline (schemas from test/setup.sh)"
# kustomization.yaml is kustomize's file, not a resource the API server
# knows; the invariants test (test/k8s_manifests_test.go) checks it lists
# every manifest. optional/ is checked too, against Istio's CRD schema.
kubeconform=(.bin/kubeconform -strict -summary -schema-location ".bin/k8s-schemas/{{.ResourceKind}}{{.KindSuffix}}.json" -ignore-filename-pattern 'kustomization\.yaml$')
"${kubeconform[@]}" deploy/k8s
# The check can fail: a misspelt field must be refused.
if sed 's/^  replicas: /  replica: /' deploy/k8s/deployment.yaml | "${kubeconform[@]}" - >/dev/null 2>&1; then
  echo "kubeconform accepted a Deployment with a misspelt field (spec.replica): the schemas in .bin/k8s-schemas are not strict" >&2
  exit 1
fi

echo "== go test -race"
go test -race -count=1 $(go list ./... | grep -v '/test/chaos$')

echo "== the dialects held to encoding/json on every recorded frame (without -race, which walks an eighth of the agent recordings)"
go test -count=1 ./internal/dialect

echo "== chaos suite, short run (seeded; the long one: ACPNORM_CHAOS_LONG=1, see docs/scaling.md)"
# Three acpnormd on Sentinel and on Cluster Redis, faults on a seeded
# schedule; about a minute and a half. Not under -race: its parts are
# separate processes, and the race detector would only slow the checker.
chaos_log=$(mktemp)
if go test -count=1 -v -run '^TestChaos$' ./test/chaos >"$chaos_log" 2>&1; then
  grep -E '^(---|ok)|seed [0-9]+:' "$chaos_log"
  # A -run that matches nothing passes too ("no tests to run").
  if ! grep -q '^--- PASS: TestChaos ' "$chaos_log"; then
    echo "the chaos suite ran no TestChaos" >&2
    exit 1
  fi
  rm -f "$chaos_log"
else
  cat "$chaos_log" >&2
  rm -f "$chaos_log"
  echo "the chaos suite failed; each failure names the seed that repeats the run (ACPNORM_CHAOS_SEED)" >&2
  exit 1
fi

echo "== fuzz, $FUZZTIME inputs per target"
# Every package under internal/ and normalize/ is asked for its targets, so
# a target that moves between them (internal/dialect's JSON helpers went to
# internal/jsonlit, with their corpora under testdata/fuzz/) still runs.
fuzz_log=$(mktemp)
for pkg in $(go list ./internal/... ./normalize/...); do
  for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    echo "-- $pkg $target"
    go test -run='^$' -fuzz="^${target}\$" -fuzztime="$FUZZTIME" "$pkg" 2>&1 | tee "$fuzz_log"
    # The count covers the seeds' baseline too: a target whose seeds
    # outnumber it would pass without one mutated input.
    if ! grep -q 'now fuzzing' "$fuzz_log"; then
      echo "$pkg $target: never fuzzed: its seed corpus takes all of the $FUZZTIME inputs (fewer seeds, or a larger FUZZTIME)" >&2
      rm -f "$fuzz_log"
      exit 1
    fi
  done
done
rm -f "$fuzz_log"

echo "== load benchmark smoke run (fails on errors, never on speed)"
SMOKE=1 bash bench/run.sh

echo "== clients"
bash test/clients.sh

echo "== container image"
bash test/image.sh

echo "== real agent harness: its own tests, the committed recordings, then OpenCode on three steps (the full matrix: bash test/agents/run.sh)"
node --test test/agents/harness.test.mjs
bash test/agents/run.sh --replay # the committed recordings of every agent, against this tree
bash test/agents/run.sh --scenario smoke opencode
echo "== acpnormd proxy: OpenCode on the same three steps, directly and through the proxy (bytes, frames and record compared)"
bash test/agents/proxy.sh --scenario smoke opencode

echo "test/run.sh: all checks passed"
