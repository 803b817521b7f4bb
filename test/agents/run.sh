#!/usr/bin/env bash
# Runs real agent builds against the scripted model, records the ACP wire in
# both directions, and checks acpnorm's final ShellExec of every step against
# what the command really did.
#
#   bash test/agents/run.sh [--update] [--scenario full|smoke|scenario-dev|load] [AGENT...]
#   bash test/agents/run.sh --replay [--scenario NAME] [AGENT...]
#
# AGENT selects builds and variants (agents.mjs): ID is the agent's newest
# build (opencode, gemini-cli, ...), ID@VERSION an older build pinned in
# pkgs/ID@VERSION, ID@all every build; each may end in /VARIANT for one
# variant (droid/client-terminal, copilot@1.0.50/plain). None means the
# newest build of every agent when recording, and every committed recording
# (every build) with --replay.
# It installs the pinned builds with npm ci (only the workspaces asked for),
# builds acpnormd, records one session per agent variant inside `unshare -n`
# (loopback only, private HOME), then prints a table (run x step: pass, FAIL,
# xfail, XPASS) and writes it to test/agents/out/results.md (results-NAME.md
# for a scenario other than full; details in the .json beside it, wire logs,
# model and agent logs beside them).
# --update copies the fresh recordings to test/testdata/recordings/agents/ for
# review, each with its .meta.json (what the harness did and saw); a session
# that did not finish (no session, a crash) is not copied.
# --replay runs no agent: it checks the committed recordings of the scenario
# (every scenario with recordings when none is named;
# test/testdata/recordings/agents/) against the acpnormd built from this
# tree, in seconds; it needs neither npm nor unshare.
# Exit status: 0 when no step is FAIL, 1 otherwise; 0 with a SKIP line where
# network namespaces are not permitted.
set -euo pipefail
export GOTOOLCHAIN=go1.27.3 # the Go acpnorm builds with: the go command fetches it from the module proxy
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$here"

update=0
replay=0
scenario=""
agents=()
while [ $# -gt 0 ]; do
  case "$1" in
    --update) update=1 ;;
    --replay) replay=1 ;;
    --scenario) scenario="$2"; shift ;;
    --scenario=*) scenario="${1#*=}" ;;
    -h|--help) sed -n '2,28p' "$here/run.sh"; exit 0 ;;
    -*) echo "run.sh: unknown flag $1" >&2; exit 2 ;;
    *) agents+=("$1") ;;
  esac
  shift
done
# --replay with no --scenario checks every scenario with committed
# recordings; recording with no --scenario runs the full one.
all_scenarios=0
if [ -z "$scenario" ] && [ "$replay" = 1 ]; then
  all_scenarios=1
  scenarios=()
  for f in "$here"/scenarios/*.json; do scenarios+=("$(basename "$f" .json)"); done
else
  scenarios=("${scenario:-full}")
fi
for s in "${scenarios[@]}"; do
  [ -f "$here/scenarios/$s.json" ] || { echo "run.sh: no scenario $here/scenarios/$s.json" >&2; exit 2; }
done
scenario="${scenarios[0]}"
scenario_file="$here/scenarios/$scenario.json"
# results_of names the table of a scenario: results.md for the full one.
results_of() { if [ "$1" = full ]; then echo "$out/results"; else echo "$out/results-$1"; fi; }

list=$(node agents.mjs list "${agents[@]}") # fails on an unknown agent, build or variant
mapfile -t runs <<<"$list" # ID VERSION VARIANT WORKSPACE
out="$here/out"
mkdir -p "$out"
dest="$repo/test/testdata/recordings/agents"

if [ "$replay" = 1 ]; then
  echo "== go build acpnormd"
  (cd "$repo" && go build -o "$out/acpnormd" ./cmd/acpnormd)
  rc=0
  checked=0
  jsons=() # the results of each scenario replayed
  for s in "${scenarios[@]}"; do
    recs=()
    if [ ${#agents[@]} -eq 0 ]; then
      # Every committed recording of the scenario: every build, also one
      # whose workspace is gone.
      for f in "$dest"/*"_${s}.ndjson"; do
        [ -e "$f" ] && recs+=("$f")
      done
    else
      for r in "${runs[@]}"; do
        read -r id version variant _ <<<"$r"
        f="$dest/${id}-${version}_${variant}_${s}.ndjson"
        [ -e "$f" ] && recs+=("$f")
      done
    fi
    [ ${#recs[@]} -gt 0 ] || continue
    checked=$((checked + ${#recs[@]}))
    echo "== check ${#recs[@]} committed recordings of scenario $s"
    res=$(results_of "$s")
    node check.mjs --acpnormd "$out/acpnormd" --scenario "$here/scenarios/$s.json" --table "$res.md" --json "$res.json" "${recs[@]}" || rc=1
    jsons+=("$res.json")
  done
  [ "$checked" -gt 0 ] || { echo "run.sh: no committed recordings of scenario ${scenarios[*]} in ${dest#"$repo/"}" >&2; exit 1; }
  # Every recording replayed: the result tables the docs show must be
  # this replay's.
  if [ ${#agents[@]} -eq 0 ] && [ "$all_scenarios" = 1 ]; then
    echo "== the docs' result tables against this replay"
    node lib/doctables.mjs "${jsons[@]}" -- README.md "$repo/docs/development.md" || rc=1
  fi
  exit $rc
fi

# Isolation first: without a network namespace nothing runs.
if ! unshare -n true 2>/dev/null; then
  echo "SKIP: test/agents/run.sh: 'unshare -n' is not permitted here (it needs root or unprivileged user namespaces); the agents are never run outside an isolated network namespace."
  exit 0
fi

# Install the pinned agents: only the workspaces asked for, unless they are
# already installed from this very lockfile.
want=$(printf '%s\n' "${runs[@]}" | awk '{print $4}' | sort -u)
stamp=node_modules/.acpnorm-installed
have=""
if [ -f "$stamp" ] && [ "$(head -1 "$stamp")" = "$(sha256sum package-lock.json | cut -d' ' -f1)" ]; then
  have=$(tail -n +2 "$stamp")
fi
missing=$(comm -23 <(echo "$want") <(echo "$have" | sort -u))
if [ -n "$missing" ]; then
  all=$(echo "$want"; echo "$have")
  ws=$(echo "$all" | sort -u | grep . | sed 's/^/-w /' | tr '\n' ' ')
  echo "== npm ci $ws"
  # Grok's postinstall copies its binary to $GROK_HOME/bin (~/.grok by
  # default): keep that inside node_modules.
  # shellcheck disable=SC2086 # word splitting of the -w flags is wanted
  GROK_HOME="$here/node_modules/.grok-home" npm ci $ws --no-audit --no-fund --loglevel=error
  { sha256sum package-lock.json | cut -d' ' -f1; echo "$all" | sort -u | grep .; } >"$stamp"
fi

echo "== go build acpnormd, loup"
(cd "$repo" && go build -o "$out/acpnormd" ./cmd/acpnormd && go build -o "$out/loup" ./test/agents/loup)

recs=()
unfinished=() # sessions record.mjs could not finish: never copied by --update
for r in "${runs[@]}"; do
  read -r id version variant _ <<<"$r"
  name="${id}-${version}_${variant}_${scenario}"
  echo "== record $name"
  rm -f "$out/$name".*
  if ! unshare -n "$out/loup" node record.mjs --agent "$id@$version" --variant "$variant" --scenario "$scenario_file" --out "$out/$name.ndjson"; then
    echo "   (the session did not finish; see $out/$name.agent.log and $name.meta.json)"
    unfinished+=("$out/$name.ndjson")
  fi
  recs+=("$out/$name.ndjson")
done

echo "== check"
rc=0
res=$(results_of "$scenario")
node check.mjs --acpnormd "$out/acpnormd" --scenario "$scenario_file" --table "$res.md" --json "$res.json" "${recs[@]}" || rc=$?
echo "table: $res.md"

if [ "$update" = 1 ]; then
  mkdir -p "$dest"
  for f in "${recs[@]}"; do
    if [[ " ${unfinished[*]} " == *" $f "* ]]; then
      echo "not copied: $(basename "$f") (the session did not finish)"
      continue
    fi
    [ -s "$f" ] && cp "$f" "${f%.ndjson}.meta.json" "$dest/" && echo "updated ${dest#"$repo/"}/$(basename "$f")"
  done
fi
exit $rc
