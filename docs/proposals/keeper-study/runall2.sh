#!/bin/sh
cd /tmp/keeper-study
echo "== m3 100 $(date +%T) load: $(cut -d' ' -f1-3 /proc/loadavg)"
timeout 300 taskset -c 1 ./m3_scm 100 7 > m3.out 2>&1
echo "== m3 1000 $(date +%T) load: $(cut -d' ' -f1-3 /proc/loadavg)"
timeout 300 taskset -c 1 ./m3_scm 1000 7 >> m3.out 2>&1
echo "== m4 $(date +%T) load: $(cut -d' ' -f1-3 /proc/loadavg)"
timeout 300 taskset -c 1 ./m4_clone 2000 5 > m4.out 2>&1
echo "== m2 $(date +%T) load: $(cut -d' ' -f1-3 /proc/loadavg)"
timeout 600 taskset -c 1 ./m2_relay 50 9 20000 > m2_pinned.out 2>&1
echo "== m2 latency unpinned $(date +%T) load: $(cut -d' ' -f1-3 /proc/loadavg)"
timeout 300 ./m2_relay 1 5 20000 > m2_unpinned.out 2>&1
echo "== done $(date +%T) load: $(cut -d' ' -f1-3 /proc/loadavg)"
