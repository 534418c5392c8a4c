#!/usr/bin/env bash
# The p99 target's protocol with the host's phase held constant: each round
# measures Gale's maximum ack rate, then the complete latency at half of that
# rate right away, so both halves of a pair see the same host. Prints each
# pair and the median p99. Usage:
#   scripts/bench-p99.sh [DURATION] [REPS] [extra bench flags...]
set -euo pipefail
D=${1:-10s}; R=${2:-5}; shift 2 || shift $#
cd "$(dirname "$0")/.."
go build -o /tmp/gale-bench ./cmd/gale
out=$(mktemp)
for i in $(seq "$R"); do
  max=$(/tmp/gale-bench bench wordcount --mode ack --duration "$D" --json "$@" 2>/dev/null |
    python3 -c "import json,sys; print(json.load(sys.stdin)['sentences_per_sec'])")
  half=$(python3 -c "print(int($max/2))")
  /tmp/gale-bench bench wordcount --mode ack --rate "$half" --duration "$D" --json "$@" 2>/dev/null |
    python3 -c "import json,sys; d=json.load(sys.stdin); l=d['latency_ms']; print($max, d['rate'], d['sentences_per_sec'], l['p50'], l['p99'], l['p999'])" >>"$out"
  tail -1 "$out" | awk '{printf "max %10.0f/s  rate %9.0f  got %9.0f/s  p50 %.3fms  p99 %.3fms  p999 %.3fms\n", $1, $2, $3, $4, $5, $6}'
done
python3 - "$out" <<'PY'
import statistics as st, sys
p99 = [float(l.split()[4]) for l in open(sys.argv[1])]
print(f"median p99 {st.median(p99):.3f} ms over {len(p99)} pairs (target <= 1 ms); under 1 ms in {sum(p <= 1 for p in p99)}")
PY
rm -f "$out"
