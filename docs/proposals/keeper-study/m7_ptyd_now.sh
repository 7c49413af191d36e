#!/bin/sh
# m7: the current build's baseline: ptyd start-to-serving time (the floor of
# a crash restart), memory and descriptors idle and with 32 terminals.
B=/work/main/ptyd
S=/tmp/keeper-study/st; rm -rf $S; mkdir -m 0700 -p $S
export PTYD_STATE_DIR=$S PTYD_AUDIT_ANCHOR=none SHELL=/bin/sh
for i in 1 2 3 4 5 6 7; do
  rm -f $S/ptyd.sock
  t0=$(date +%s%N)
  $B/ptyd -f --shell /bin/sh --max-terminals 64 2>>$S/err.log &
  P=$!
  until $B/ptydctl --socket $S/ptyd.sock health >/dev/null 2>&1; do sleep 0.002; done
  t1=$(date +%s%N)
  echo "start-to-serving: $(( (t1 - t0) / 1000 )) us"
  if [ $i -lt 7 ]; then kill -TERM $P; wait $P; fi
done
rollup() { awk -v k="$2" '$1==k":" {print $2}' /proc/$1/smaps_rollup; }
fds() { ls /proc/$1/fd | wc -l; }
echo "idle ptyd: RSS $(rollup $P Rss) kB PSS $(rollup $P Pss) kB fds $(fds $P)"
for n in $(seq 1 32); do $B/ptydctl --socket $S/ptyd.sock start t$n >/dev/null; done
sleep 1
echo "32 terminals (idle sh): RSS $(rollup $P Rss) kB PSS $(rollup $P Pss) kB fds $(fds $P)"
for n in $(seq 1 32); do $B/ptydctl --socket $S/ptyd.sock input t$n 'seq 1 20000
' >/dev/null; done
sleep 3
echo "32 terminals after ~110 kB output each: RSS $(rollup $P Rss) kB PSS $(rollup $P Pss) kB fds $(fds $P)"
ls -l /proc/$P/fd | awk '{print $NF}' | sed 's/[0-9]*//g' | sort | uniq -c | sort -rn | head
kill -TERM $P; wait $P
