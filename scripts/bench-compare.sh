#!/usr/bin/env bash
# Runs the plain-Go baselines (noack; ack, which also times each sentence as
# Gale's ack mode does) and Gale's word count (noack, ack) interleaved, REPS
# times each for DURATION, and prints each run, the medians and the median
# of each round's ratios, the figures the performance targets are stated
# in. Usage:
#   scripts/bench-compare.sh [DURATION] [REPS] [extra bench flags...]
set -euo pipefail
D=${1:-10s}; R=${2:-5}; shift 2 || true
cd "$(dirname "$0")/.."
go build -o /tmp/gale-bench ./cmd/gale
out=$(mktemp)
for i in $(seq "$R"); do
  for args in "--runner plain --mode noack" "--runner plain --mode ack" "--mode noack" "--mode ack"; do
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
def ratio(a, b):  # median of the per-round ratios a/b
    return st.median(x["sentences_per_sec"] / y["sentences_per_sec"] for x, y in zip(by[a], by[b]))
pn, pa = ("plain", "noack"), ("plain", "ack")
gn, ga = ("gale", "noack"), ("gale", "ack")
print(f"\nmedians, sentences/s: plain noack {med(pn, 'sentences_per_sec'):,.0f}  plain ack {med(pa, 'sentences_per_sec'):,.0f}"
      f"  gale noack {med(gn, 'sentences_per_sec'):,.0f}  gale ack {med(ga, 'sentences_per_sec'):,.0f}")
print(f"round ratios, median: noack/plain noack {ratio(gn, pn):.3f}  noack/plain ack {ratio(gn, pa):.3f}"
      f"  ack/plain ack {ratio(ga, pa):.3f}  ack/plain noack {ratio(ga, pn):.3f}")
cn, ca = med(gn, "cpu_seconds_per_million_sentences"), med(ga, "cpu_seconds_per_million_sentences")
print(f"cpu s per M sentences, median: gale noack {cn:.2f}  gale ack {ca:.2f} (ack/noack {ca/cn:.2f})"
      f"  plain noack {med(pn, 'cpu_seconds_per_million_sentences'):.2f}  plain ack {med(pa, 'cpu_seconds_per_million_sentences'):.2f}")
PY
rm -f "$out"
