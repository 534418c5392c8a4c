#!/usr/bin/env bash
# Issue 3's targets in one run, rounds interleaved so that each round's
# numbers see the same host phase: the maximum ack rate in one worker and in
# two (same flags otherwise), then the complete latency in two workers at half
# of that round's 2-worker maximum, with its p99 second by second and after
# the 2 s warm-up (reported beside the target, which is the whole run). Each round
# ends with a reference for what the host allowed in that minute: the plain-Go
# baseline (goroutines and channels in one process, no serialization, no
# network) run the same way, its maximum and then its p99 at half of it.
# Prints each round, then the medians: the throughput ratio (target >= 0.5),
# the p99 (target <= 5 ms) and the plain baseline's p99. The workers run as
# the bench's defaults have them: each pinned to its own CPU (--pin-cpus)
# and with its heap pretouched (--heap-pretouch); pass =false after the
# rounds to measure without. Usage:
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
  # One line per round, whitespace-separated: one two ratio rate p50 p99 p999
  # bytes/tuple p99-after-warm-up (-1: none) per-second-p99s plain plain-p99.
  row=$(/tmp/gale-bench bench wordcount --workers 2 --rate "$half" "${FLAGS[@]}" 2>/dev/null |
    python3 -c "
import json,sys
d=json.load(sys.stdin); l=d['latency_ms']; w=d.get('latency_after_warmup_ms') or {'p99': -1}
secs=','.join('%.1f' % x for x in d.get('latency_p99_ms_per_second') or []) or '-'
print($one, $two, $two/$one, d['sentences_per_sec'], l['p50'], l['p99'], l['p999'], d['wire_bytes_per_tuple'], w['p99'], secs)")
  plain=$(/tmp/gale-bench bench wordcount --runner plain "${FLAGS[@]}" 2>/dev/null | rate)
  plainHalf=$(python3 -c "print(int($plain/2))")
  floor=$(/tmp/gale-bench bench wordcount --runner plain --rate "$plainHalf" "${FLAGS[@]}" 2>/dev/null | p99)
  echo "$row $plain $floor" >>"$out"
  tail -1 "$out" | awk '{printf "1 worker %9.0f/s  2 workers %9.0f/s  ratio %.3f | at %9.0f/s p50 %.3fms p99 %.3fms p999 %.3fms, after warm-up p99 %.3fms (each second: %s) | %.1f B/tuple | plain Go at half its %.0f/s: p99 %.3fms\n", $1, $2, $3, $4, $5, $6, $7, $9, $10, $8, $11, $12}'
done
python3 - "$out" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
f = lambda i: [float(r[i]) for r in rows]
warm = [x for x in f(8) if x >= 0]
print(f"median ratio {st.median(f(2)):.3f} (target >= 0.5), median p99 {st.median(f(5)):.3f} ms (target <= 5 ms) over {len(rows)} rounds; "
      f"after the warm-up: median p99 {st.median(warm) if warm else float('nan'):.3f} ms; "
      f"plain Go at half its maximum: median p99 {st.median(f(11)):.3f} ms, over 5 ms in {sum(x > 5 for x in f(11))} of {len(rows)} rounds")
PY
rm -f "$out"
