#!/usr/bin/env bash
# Time from `gale submit` returning to the first acked tree listed by `gale list`, on a
# dev cluster, three rounds (an upper bound: it includes up to one worker heartbeat and
# one supervisor report period, 1 s each here). Usage: scripts/first-ack.sh [GALE_BINARY]
G=${1:-gale};  d=$(mktemp -d)
printf 'supervisor.heartbeat.frequency.secs: 1\n' > $d/gale.yaml
$G dev --dir $d/s --file $d/gale.yaml --etcd-port 23795 --nimbus-port 16635 --slot-base 16900 >$d/out 2>$d/err &
dp=$!
for i in $(seq 120); do grep -q "the cluster is ready" $d/err && break; sleep 0.5; done
N="--nimbus 127.0.0.1:16635"
for r in 1 2 3; do
  $G submit wordcount $N -c topology.workers=4 >/dev/null
  t0=$(date +%s.%N)
  for i in $(seq 400); do $G list $N --json | grep -q '"acked": [1-9]' && break; sleep 0.05; done
  t1=$(date +%s.%N)
  echo "round $r: first ack listed $(echo "$t1 - $t0" | bc) s after submit returned"
  $G kill wordcount $N -w 0 >/dev/null
  for i in $(seq 50); do $G list $N --json | grep -q "wordcount" || break; sleep 0.2; done
  sleep 2
done
kill -INT $dp; wait $dp; rm -rf $d
