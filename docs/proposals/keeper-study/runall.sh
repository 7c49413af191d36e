#!/bin/sh
# One benchmark at a time, all pinned to CPU 1 (the machine is shared).
cd /tmp/keeper-study
echo "== m1 $(date +%T) load: $(cut -d' ' -f1-3 /proc/loadavg)"
VERBOSE=1 timeout 600 taskset -c 1 ./m1_ring 50 11 > m1.out 2> m1.rounds
echo "== m6 naive $(date +%T) load: $(cut -d' ' -f1-3 /proc/loadavg)"
timeout 300 taskset -c 1 ./m6_killwin naive 200 > m6.out 2>&1
echo "== m6 pkt $(date +%T)"
timeout 300 taskset -c 1 ./m6_killwin pkt 200 >> m6.out 2>&1
echo "== done $(date +%T) load: $(cut -d' ' -f1-3 /proc/loadavg)"
