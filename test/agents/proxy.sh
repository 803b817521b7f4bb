#!/usr/bin/env bash
# Runs a real agent through `acpnormd proxy` the way an editor would, and
# checks that the proxy changed nothing and recorded what replay records:
#
#   bash test/agents/proxy.sh [--scenario smoke|full] [AGENT [VARIANT]]
#
# AGENT is a build as run.sh takes it (ID, ID@VERSION) and defaults to
# opencode, VARIANT to the build's first, the scenario to smoke. It records the scenario twice inside `unshare -n` (loopback only,
# private HOME): once with the agent started directly, once with the agent
# started as `acpnormd proxy --out R --wire W -- AGENT...`. Then
# proxycheck.mjs holds that:
#   - the client's recording of the proxied run and the proxy's --wire
#     recording carry the same messages, byte for byte, in the same order
#     each way (the relay added, dropped and reordered nothing);
#   - the proxied run is the direct run frame by frame each way, the agent's
#     own ids and the timings aside;
#   - the --out record is what `acpnormd replay --json --final` makes of the
#     --wire recording;
#   - the proxy said nothing on stderr (nothing was dropped or refused).
# Files: test/agents/out/proxy/. The agent must be installed (bash
# test/agents/run.sh --scenario smoke AGENT installs it with npm ci).
# Exit status: 0 when every check holds, 1 otherwise; 0 with a SKIP line
# where network namespaces are not permitted.
set -euo pipefail
export GOTOOLCHAIN=go1.27.3 # the Go acpnorm builds with: the go command fetches it from the module proxy
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$here"

scenario=smoke
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --scenario) scenario="$2"; shift ;;
    --scenario=*) scenario="${1#*=}" ;;
    -h|--help) sed -n '2,25p' "$here/proxy.sh"; exit 0 ;;
    -*) echo "proxy.sh: unknown flag $1" >&2; exit 2 ;;
    *) args+=("$1") ;;
  esac
  shift
done
agent="${args[0]:-opencode}"
scenario_file="$here/scenarios/$scenario.json"
[ -f "$scenario_file" ] || { echo "proxy.sh: no scenario $scenario_file" >&2; exit 2; }
read -r id version variant _ <<<"$(node agents.mjs list "$agent" | head -1)"
variant="${args[1]:-$variant}"

if ! unshare -n true 2>/dev/null; then
  echo "SKIP: test/agents/proxy.sh: 'unshare -n' is not permitted here (it needs root or unprivileged user namespaces); the agents are never run outside an isolated network namespace."
  exit 0
fi
installed=$(node -e 'import("./agents.mjs").then(m => { const [r] = m.selectRuns([process.argv[1]]); console.log(m.installedVersion(r.agent, r.build) ?? "") })' "$id@$version")
if [ "$installed" != "$version" ]; then
  echo "proxy.sh: $id $version is not installed; bash test/agents/run.sh --scenario smoke $agent installs the pinned build" >&2
  exit 1
fi

out="$here/out/proxy"
mkdir -p "$out"
echo "== go build acpnormd, loup"
(cd "$repo" && go build -o "$out/acpnormd" ./cmd/acpnormd && go build -o "$out/loup" ./test/agents/loup)

name="${id}-${version}_${variant}_${scenario}"
rm -f "$out/$name".*
record() { # record FILE [record.mjs flags...]
  local file="$1"
  shift
  unshare -n "$out/loup" node record.mjs --agent "$id@$version" --variant "$variant" --scenario "$scenario_file" --out "$file" "$@" ||
    echo "   (the session did not finish; see ${file%.ndjson}.agent.log)"
}
echo "== record $name directly"
record "$out/$name.direct.ndjson"
echo "== record $name through acpnormd proxy"
wrap=$(node -e 'console.log(JSON.stringify(process.argv.slice(1)))' \
  "$out/acpnormd" proxy --out "$out/$name.record.ndjson" --wire "$out/$name.wire.ndjson" --)
record "$out/$name.proxied.ndjson" --wrap "$wrap"

echo "== check"
exec node proxycheck.mjs --acpnormd "$out/acpnormd" --direct "$out/$name.direct.ndjson" --proxied "$out/$name.proxied.ndjson" \
  --wire "$out/$name.wire.ndjson" --record "$out/$name.record.ndjson" --stderr "$out/$name.proxied.agent.log"
