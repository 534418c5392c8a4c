#!/usr/bin/env bash
# Time from `gale submit` returning to `gale list` showing the first acked tree, on a
# `gale dev` cluster with its default config (2 supervisors, 4 slots each), the word count
# with topology.workers=4. Each round submits, polls `gale list --json` every 50 ms until
# acked > 0, then kills with -w 0 and waits until the topology is gone; the next round
# starts at once (so it meets the slots and the artifact the last round left).
#
# Usage: scripts/first-ack.sh [GALE_BINARY[@GALE_YAML]...]     (default: gale)
# A binary given as BINARY@FILE runs its dev cluster with `--file FILE` (a gale.yaml).
# ROUNDS=N (default 7) rounds per binary. With several binaries, each runs its own dev
# cluster and the rounds are interleaved (A, B, A, B, ...), so that each pair of rounds
# sees the same load on a shared machine; the medians are per binary.
# KEEP=DIR keeps, per binary i (0, 1, ...), dev's stderr (every process's log, with
# timestamps) in DIR/i/dev.err, the supervisors' directories (workers/<port>/worker.log)
# in DIR/i/s and each round's submit-returned time in DIR/i/rounds, to read the stages
# of a round off the logs.
set -u
[ $# -gt 0 ] || set -- gale
R=${ROUNDS:-7}; B=(); F=(); L=("$@")
for a in "$@"; do B+=("${a%%@*}"); if [[ $a == *@* ]]; then F+=("--file ${a#*@}"); else F+=(""); fi; done
top=${KEEP:-$(mktemp -d)}
pids=()
for i in "${!B[@]}"; do
  d=$top/$i; mkdir -p "$d"; rm -rf "$d/s"; : >"$d/rounds"
  "${B[$i]}" dev --dir "$d/s" --etcd-port $((23795 + 10 * i)) --nimbus-port $((16635 + 10 * i)) \
    --slot-base $((16900 + 20 * i)) ${F[$i]} >"$d/dev.out" 2>"$d/dev.err" &
  pids+=($!)
done
for i in "${!B[@]}"; do
  for t in $(seq 240); do grep -q "the cluster is ready" "$top/$i/dev.err" && break; sleep 0.5; done
done
echo "load before: $(uptime | sed 's/.*load/load/')"
declare -A ts
for r in $(seq "$R"); do
  for i in "${!B[@]}"; do
    G=${B[$i]}; N="--nimbus 127.0.0.1:$((16635 + 10 * i))"
    $G submit wordcount $N -c topology.workers=4 >/dev/null || { echo "$G round $r: submit failed"; continue; }
    t0=$(date +%s.%N)
    for t in $(seq 600); do $G list $N --json | grep -q '"acked": [1-9]' && break; sleep 0.05; done
    t1=$(date +%s.%N)
    s=$(echo "$t1 - $t0" | bc)
    ts[$i]="${ts[$i]:-} $s"
    echo "$r $(date -u -d @"$t0" +%H:%M:%S.%3N) $s" >>"$top/$i/rounds"
    printf '%s round %d: first ack listed %.2f s after submit returned (at %s UTC)\n' "${L[$i]}" "$r" "$s" "$(date -u -d @"$t0" +%H:%M:%S.%3N)"
    $G kill wordcount $N -w 0 >/dev/null
    for t in $(seq 200); do $G list $N --json | grep -q '"wordcount"' || break; sleep 0.05; done
  done
done
echo "load after: $(uptime | sed 's/.*load/load/')"
for i in "${!B[@]}"; do
  v=$(printf '%s\n' ${ts[$i]:-} | sort -g)
  printf '%s: median of %d rounds %.2f s (min %.2f, max %.2f)\n' "${L[$i]}" "$(echo "$v" | grep -c .)" \
    "$(echo "$v" | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')" \
    "$(echo "$v" | head -1)" "$(echo "$v" | tail -1)"
done
for p in "${pids[@]}"; do kill -INT "$p"; done
for p in "${pids[@]}"; do wait "$p"; done
[ -n "${KEEP:-}" ] || rm -rf "$top"
