#!/usr/bin/env bash
# Runs the plain-Go baseline and Gale's word count (noack, ack) interleaved,
# REPS times each for DURATION, and prints each run and the medians with
# the ratios the performance targets are stated in. Usage:
#   scripts/bench-compare.sh [DURATION] [REPS] [extra bench flags...]
set -euo pipefail
D=${1:-10s}; R=${2:-5}; shift 2 || true
cd "$(dirname "$0")/.."
go build -o /tmp/gale-bench ./cmd/gale
out=$(mktemp)
for i in $(seq "$R"); do
  for args in "--runner plain --mode noack" "--mode noack" "--mode ack"; do
    /tmp/gale-bench bench wordcount $args --duration "$D" --json "$@" 2>/dev/null >>"$out"
  done
done
python3 - "$out" <<'PY'
import json, sys, statistics as st
dec = json.JSONDecoder(); text = open(sys.argv[1]).read(); runs = []; i = 0
while i < len(text):
    if text[i].isspace(): i += 1; continue
    obj, i = dec.raw_decode(text, i); runs.append(obj)
by = {}
for r in runs:
    k = (r["runner"], r["mode"]); by.setdefault(k, []).append(r)
    lat = r.get("latency_ms", {})
    print(f'{r["runner"]:6} {r["mode"]:6} {r["sentences_per_sec"]:>12,.0f} sent/s  cpu/M {r["cpu_seconds_per_million_sentences"]:.2f}s'
          f'  p99 {lat.get("p99", 0):.2f}ms  failed {r["failed"]}  gogc {r.get("gogc")}')
med = lambda k, f: st.median(x[f] for x in by[k])
p = med(("plain", "noack"), "sentences_per_sec")
n = med(("gale", "noack"), "sentences_per_sec")
a = med(("gale", "ack"), "sentences_per_sec")
cn = med(("gale", "noack"), "cpu_seconds_per_million_sentences")
ca = med(("gale", "ack"), "cpu_seconds_per_million_sentences")
print(f"\nmedians: plain {p:,.0f}  gale noack {n:,.0f}  gale ack {a:,.0f} sentences/s")
print(f"ratios to plain: noack {n/p:.3f} (target >= 0.30)  ack {a/p:.3f} (target >= 0.10)")
print(f"cpu per sentence, ack / noack: {ca/cn:.2f} (target <= 2.5)")
PY
rm -f "$out"
