#!/usr/bin/env bash
# Soak test (not run in CI): mixed load on loopback for a fixed time, with
# sessions opened, closed, abandoned and cancelled mid-stream, while the
# daemon's RSS, goroutines, open calls and sessions are sampled every
# SAMPLE seconds. After the load stops it waits for the TTL to reclaim what
# clients abandoned, then fails on unbounded growth:
#   - RSS in the last third of the load above 1.5x (+32 MiB) its peak in the
#     second third;
#   - goroutines after the load more than 20 above those before it;
#   - open calls or sessions not back to 0 once the TTL has passed.
# It stops by itself: the load lasts DURATION, the settling TTL+GRACE+30s.
#
#   bash test/soak.sh                       10 minutes, 8 clients
#   DURATION=2m WORKERS=4 bash test/soak.sh a shorter run
set -euo pipefail
export GOTOOLCHAIN=go1.27.3 # the Go acpnorm builds with: the go command fetches it from the module proxy
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10m}
WORKERS=${WORKERS:-8}
SAMPLE=${SAMPLE:-10}
TTL=${TTL:-20s}
GRACE=${GRACE:-5s}
OUT=${OUT:-$(mktemp -d)/soak.csv}

tmp=$(mktemp -d)
cleanup() { [ -n "${daemon:-}" ] && kill "$daemon" 2>/dev/null; [ -n "${load:-}" ] && kill "$load" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
go build -o "$tmp/acpnormd" ./cmd/acpnormd
go build -o "$tmp/soak" ./test/soak

"$tmp/acpnormd" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --ttl "$TTL" --grace "$GRACE" 2>"$tmp/log" &
daemon=$!
for _ in $(seq 100); do grep -q 'msg=serving' "$tmp/log" && break; sleep 0.1; done
line=$(grep -m1 'msg=serving' "$tmp/log") || { cat "$tmp/log"; echo "soak: acpnormd did not start" >&2; exit 1; }
grpc=$(sed -E 's/.*grpc=([^ ]+).*/\1/' <<<"$line")
metrics=$(sed -E 's/.*metrics=([^ ]+).*/\1/' <<<"$line")

metric() { curl -sf "http://$metrics/metrics" | awk -v m="$1" '$1==m {print $2; f=1} END {if (!f) print 0}'; }
sample() { # phase elapsed
  local rss
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$daemon/status")
  printf '%s,%s,%s,%s,%s,%s,%s\n' "$1" "$2" "$rss" "$(metric go_goroutines)" "$(metric acpnorm_open_calls)" "$(metric acpnorm_sessions)" "$(metric acpnorm_open_streams)" >>"$OUT"
}
echo "phase,seconds,rss_kib,goroutines,open_calls,sessions,open_streams" >"$OUT"
start=$(date +%s)
sample before 0
"$tmp/soak" --addr "$grpc" --workers "$WORKERS" --duration "$DURATION" >"$tmp/soak.out" 2>&1 &
load=$!
while kill -0 "$load" 2>/dev/null; do
  sleep "$SAMPLE"
  kill -0 "$load" 2>/dev/null && sample load $(( $(date +%s) - start ))
done
load_rc=0; wait "$load" || load_rc=$?
load=""
cat "$tmp/soak.out"
settle=$(( $(sed -E 's/s$//' <<<"$TTL") + $(sed -E 's/s$//' <<<"$GRACE") + 30 ))
end=$(( $(date +%s) + settle ))
while [ "$(date +%s)" -lt "$end" ]; do sleep "$SAMPLE"; sample after $(( $(date +%s) - start )); done

echo "samples: $OUT"
column -s, -t <"$OUT"
fail=0
[ "$load_rc" -eq 0 ] || { echo "FAIL: the load client failed (exit $load_rc)"; fail=1; }
awk -F, -v fail=0 '
  $1=="before" {g0=$4}
  $1=="load" {n++; rss[n]=$3}
  $1=="after" {g1=$4; calls=$5; sess=$6}
  END {
    if (n < 6) { print "FAIL: only " n " samples under load; run longer"; exit 1 }
    a=int(n/3); b=int(2*n/3)
    for (i=a+1; i<=b; i++) if (rss[i]>m2) m2=rss[i]
    for (i=b+1; i<=n; i++) if (rss[i]>m3) m3=rss[i]
    printf "RSS peak: second third %d KiB, last third %d KiB\n", m2, m3
    printf "goroutines: before %d, after %d; after the TTL: open calls %d, sessions %d\n", g0, g1, calls, sess
    bad=0
    if (m3 > 1.5*m2 + 32768) { print "FAIL: RSS kept growing"; bad=1 }
    if (g1 > g0 + 20) { print "FAIL: goroutines did not come back"; bad=1 }
    if (calls != 0 || sess != 0) { print "FAIL: state not reclaimed after the TTL"; bad=1 }
    exit bad
  }' "$OUT" || fail=1
[ "$fail" -eq 0 ] && echo "soak: passed" || { echo "soak: FAILED"; exit 1; }
