#!/usr/bin/env bash
# Interleaved A/B of two gale binaries (say, main before and after a change):
# the word count in one process (plain-Go baseline, noack, ack) and in two
# workers (the maximum ack rate with one worker and with two, then the p99 at
# half the 2-worker maximum), REPS rounds of each binary in turn; prints every
# run and the medians per binary. Usage: scripts/bench-ab.sh A B [DURATION] [REPS]
set -euo pipefail
A=$1; B=$2; D=${3:-8s}; R=${4:-5}
out=$(mktemp)
W=(--mode ack --spouts 2 --splitters 2 --counters 2 --ackers 2 --workers 2)
for i in $(seq "$R"); do
  for bin in "$A" "$B"; do
    for args in "--runner plain --mode noack" "--mode noack" "--mode ack"; do
      $bin bench wordcount $args --duration "$D" --json 2>/dev/null | python3 -c "import json,sys; d=json.load(sys.stdin); print('$bin', '${args// /_}', d['sentences_per_sec'], d['cpu_seconds_per_million_sentences'], d.get('latency_ms',{}).get('p99',0))" >>"$out" || echo "$bin ${args// /_} FAIL" >>"$out"
    done
    one=$($bin bench wordcount "${W[@]}" --workers 1 --duration "$D" --json 2>/dev/null | python3 -c "import json,sys; print(json.load(sys.stdin)['sentences_per_sec'])")
    echo "$bin w1max $one 0 0" >>"$out"
    two=$($bin bench wordcount "${W[@]}" --duration "$D" --json 2>/dev/null | python3 -c "import json,sys; print(json.load(sys.stdin)['sentences_per_sec'])")
    echo "$bin w2max $two 0 0" >>"$out"
    half=$(python3 -c "print(int($two/2))")
    $bin bench wordcount "${W[@]}" --rate "$half" --duration "$D" --json 2>/dev/null | python3 -c "import json,sys; d=json.load(sys.stdin); print('$bin', 'w2half', d['sentences_per_sec'], 0, d['latency_ms']['p99'])" >>"$out"
  done
  tail -14 "$out"
done
python3 - "$out" <<'PY'
import sys, statistics as st
rows=[l.split() for l in open(sys.argv[1]) if 'FAIL' not in l]
by={}
for b,k,r,c,p in rows: by.setdefault((b,k),[]).append((float(r),float(c),float(p)))
bins=sorted({b for b,_ in by})
for b in bins:
    m=lambda k,i: st.median(x[i] for x in by[(b,k)])
    p=m('--runner_plain_--mode_noack',0); n=m('--mode_noack',0); a=m('--mode_ack',0)
    print(f"{b}: plain {p:,.0f} noack {n:,.0f} ({n/p:.3f}) ack {a:,.0f} ({a/p:.3f}) cpu ack/noack {m('--mode_ack',1)/m('--mode_noack',1):.2f} | 2 workers max {m('w2max',0):,.0f} ({m('w2max',0)/m('w1max',0):.3f} of 1 worker) p99 at half {m('w2half',2):.2f} ms  [n={len(by[(b,'--mode_ack')])}]")
PY
