#!/usr/bin/env bash
# Issue 3's targets in one run, rounds interleaved so that each round's
# numbers see the same host phase: the maximum ack rate in one worker and in
# two (same flags otherwise), then the complete latency in two workers at half
# of that round's 2-worker maximum, with its p99 second by second. Each round
# ends with a reference for what the host allowed in that minute: the plain-Go
# baseline (goroutines and channels in one process, no serialization, no
# network) run the same way, its maximum and then its p99 at half of it.
# Prints each round, then the medians: the throughput ratio (target >= 0.5),
# the p99 (target <= 5 ms) and the plain baseline's p99. Usage:
#   scripts/bench-workers.sh [DURATION] [ROUNDS] [extra bench flags...]
set -euo pipefail
D=${1:-8s}; R=${2:-5}; shift 2 || shift $#
cd "$(dirname "$0")/.."
go build -o /tmp/gale-bench ./cmd/gale
FLAGS=(--mode ack --spouts 2 --splitters 2 --counters 2 --ackers 2 --duration "$D" --json "$@")
rate() { python3 -c "import json,sys; print(json.load(sys.stdin)['sentences_per_sec'])"; }
p99() { python3 -c "import json,sys; print(json.load(sys.stdin)['latency_ms']['p99'])"; }
out=$(mktemp)
for i in $(seq "$R"); do
  one=$(/tmp/gale-bench bench wordcount --workers 1 "${FLAGS[@]}" 2>/dev/null | rate)
  two=$(/tmp/gale-bench bench wordcount --workers 2 "${FLAGS[@]}" 2>/dev/null | rate)
  half=$(python3 -c "print(int($two/2))")
  row=$(/tmp/gale-bench bench wordcount --workers 2 --rate "$half" "${FLAGS[@]}" 2>/dev/null |
    python3 -c "import json,sys; d=json.load(sys.stdin); l=d['latency_ms']; print($one, $two, $two/$one, d['sentences_per_sec'], l['p50'], l['p99'], l['p999'], d['wire_bytes_per_tuple'], ','.join('%.1f' % x for x in d.get('latency_p99_ms_per_second') or []) or '-')")
  plain=$(/tmp/gale-bench bench wordcount --runner plain "${FLAGS[@]}" 2>/dev/null | rate)
  plainHalf=$(python3 -c "print(int($plain/2))")
  floor=$(/tmp/gale-bench bench wordcount --runner plain --rate "$plainHalf" "${FLAGS[@]}" 2>/dev/null | p99)
  echo "$row $plain $floor" >>"$out"
  tail -1 "$out" | awk '{printf "1 worker %9.0f/s  2 workers %9.0f/s  ratio %.3f | at %9.0f/s p50 %.3fms p99 %.3fms p999 %.3fms (each second: %s) | %.1f B/tuple | plain Go at half its %.0f/s: p99 %.3fms\n", $1, $2, $3, $4, $5, $6, $7, $9, $8, $10, $11}'
done
python3 - "$out" <<'PY'
import statistics as st, sys
rows = [[float(x) for i, x in enumerate(l.split()) if i != 8] for l in open(sys.argv[1])]
print(f"median ratio {st.median(r[2] for r in rows):.3f} (target >= 0.5), median p99 {st.median(r[5] for r in rows):.3f} ms (target <= 5 ms) over {len(rows)} rounds; "
      f"plain Go at half its maximum: median p99 {st.median(r[9] for r in rows):.3f} ms, over 5 ms in {sum(r[9] > 5 for r in rows)} of {len(rows)} rounds")
PY
rm -f "$out"
