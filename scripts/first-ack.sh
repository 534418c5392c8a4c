#!/usr/bin/env bash
# Time from `gale submit` returning to `gale list` showing the first acked tree, on a
# `gale dev` cluster with its default config (2 supervisors, 4 slots each), the word count
# with topology.workers=4. Each round submits, polls `gale list --json` every 50 ms until
# acked > 0, then kills with -w 0 and waits until the topology is gone; the next round
# starts at once (so it meets the slots and the artifact the last round left).
#
# Usage: scripts/first-ack.sh [GALE_BINARY] [ROUNDS]     (defaults: gale, 7)
# KEEP=DIR keeps dev's stderr (every process's log, with timestamps) in DIR/dev.err, the
# supervisors' directories (workers/<port>/worker.log) in DIR/s and each round's
# submit-returned time in DIR/rounds, to read the stages of a round off the logs.
set -u
G=${1:-gale}; R=${2:-7}
d=${KEEP:-$(mktemp -d)}; mkdir -p "$d"; rm -rf "$d/s"; : >"$d/rounds"
$G dev --dir "$d/s" --etcd-port 23795 --nimbus-port 16635 --slot-base 16900 >"$d/dev.out" 2>"$d/dev.err" &
dp=$!
for i in $(seq 240); do grep -q "the cluster is ready" "$d/dev.err" && break; sleep 0.5; done
N="--nimbus 127.0.0.1:16635"
echo "load before: $(uptime | sed 's/.*load/load/')"
ts=()
for r in $(seq "$R"); do
  $G submit wordcount $N -c topology.workers=4 >/dev/null || { echo "round $r: submit failed"; break; }
  t0=$(date +%s.%N)
  for i in $(seq 600); do $G list $N --json | grep -q '"acked": [1-9]' && break; sleep 0.05; done
  t1=$(date +%s.%N)
  s=$(echo "$t1 - $t0" | bc)
  ts+=("$s")
  echo "$r $(date -u -d @"$t0" +%H:%M:%S.%3N) $s" >>"$d/rounds"
  printf 'round %d: first ack listed %.2f s after submit returned (at %s UTC)\n' "$r" "$s" "$(date -u -d @"$t0" +%H:%M:%S.%3N)"
  $G kill wordcount $N -w 0 >/dev/null
  for i in $(seq 200); do $G list $N --json | grep -q '"wordcount"' || break; sleep 0.05; done
done
printf 'median of %d rounds: %.2f s (min %.2f, max %.2f)\n' "${#ts[@]}" \
  "$(printf '%s\n' "${ts[@]}" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')" \
  "$(printf '%s\n' "${ts[@]}" | sort -g | head -1)" "$(printf '%s\n' "${ts[@]}" | sort -g | tail -1)"
echo "load after: $(uptime | sed 's/.*load/load/')"
kill -INT $dp; wait $dp
[ -n "${KEEP:-}" ] || rm -rf "$d"
