#!/usr/bin/env bash
# Complete latency at a fixed rate, Gale (ack mode) and the plain baseline
# interleaved, REPS times each. Usage:
#   scripts/bench-latency.sh RATE [DURATION] [REPS] [extra bench flags...]
set -euo pipefail
RATE=$1; D=${2:-10s}; R=${3:-3}; shift 3 || shift $#
cd "$(dirname "$0")/.."
go build -o /tmp/gale-bench ./cmd/gale
for i in $(seq "$R"); do
  for runner in gale plain; do
    /tmp/gale-bench bench wordcount --runner $runner --mode ack --rate "$RATE" --duration "$D" --json "$@" 2>/dev/null |
      python3 -c "import json,sys; d=json.load(sys.stdin); l=d['latency_ms']; print(f\"{d['runner']:6} gogc {d['gogc']} rate {d['rate']:>9,.0f}  got {d['sentences_per_sec']:>9,.0f}/s  p50 {l['p50']:.3f}ms  p99 {l['p99']:.3f}ms  p999 {l['p999']:.3f}ms  failed {d['failed']}\")"
  done
done
