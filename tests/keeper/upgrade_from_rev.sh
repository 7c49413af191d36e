#!/bin/bash
# upgrade_from_rev.sh -- a ptyd built from REV, upgraded in place (SIGUSR2
# to its keeper) to the ptyd of another build, as a package upgrade does:
# the shells, their pids and their output survive (issue 30,
# docs/proposals/keeper.md, section 4 "Upgrade").
#
#   tests/keeper/upgrade_from_rev.sh REV [NEWBUILD]
#
# REV is built in a temporary `git worktree` (configure + make -j2); NEWBUILD
# (default: this checkout) holds the ptyd/ptyd to upgrade to.  ptyd runs
# from a temporary copy of REV's ptyd and ptyd-keeper (--foreground, its
# own state directory, no nginx: ptydctl talks to its socket), with three
# terminals printing counters.  NEWBUILD's ptyd is then put over the copy
# (copied beside it, renamed over it) and the keeper told to upgrade.
#
# Checks: a new ptyd answers health and stats; the same shell pids; each
# terminal's output, read again from its first position with `ptydctl
# attach --pos`, starts with exactly the bytes read before the upgrade and
# goes on with the counter, every line once and in order; the audit log
# has an `upgrade` row per terminal naming the new pid.  Prints PASS or
# FAIL and exits 0 or 1 (2: it could not even set up).
#
# Environment: TMPDIR (where the worktree and the copy go), KEEP=1 (keep
# them), MAKEFLAGS as usual.
# Functions run through trap and check: not unreachable.
# shellcheck disable=SC2317
set -euo pipefail

prog=upgrade_from_rev
die() { echo "$prog: $*" >&2; exit 2; }

[[ $# -ge 1 && $# -le 2 ]] || die "usage: $0 REV [NEWBUILD]"
rev=$1
here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd -P)
newbuild=$(cd "${2:-$here}" && pwd -P)
[[ -x $newbuild/ptyd/ptyd ]] || die "no $newbuild/ptyd/ptyd: build it first"
git -C "$here" rev-parse --verify -q "$rev^{commit}" >/dev/null ||
    die "unknown revision $rev"
for t in sqlite3 timeout python3; do
	command -v "$t" >/dev/null || die "needs $t"
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ptyd-upgrade-XXXXXX")
src=$tmp/src
bin=$tmp/bin        # the running copy: ptyd, ptyd-keeper
state=$tmp/state
run=$tmp/run        # the socket's directory must be 0700
home=$tmp/home
sock=$run/ptyd.sock
keeper=
failures=0

cleanup() {
	local p
	set +e
	if [[ -n $keeper ]] && kill -0 "$keeper" 2>/dev/null; then
		# A stop: ptyd ends the shells, then both exit.
		kill -TERM "$keeper"
		for _ in $(seq 100); do
			kill -0 "$keeper" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$keeper" 2>/dev/null
	fi
	# Anything still running from our copy or in our home (by pid).
	for p in $(pgrep -f "$tmp/" 2>/dev/null); do
		[[ $p == "$$" ]] || kill -KILL "$p" 2>/dev/null
	done
	if [[ -d $src ]]; then
		git -C "$here" worktree remove --force "$src" >/dev/null 2>&1
		git -C "$here" worktree prune
	fi
	if [[ ${KEEP:-} == 1 ]]; then
		echo "$prog: kept $tmp"
	else
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT
trap 'exit 2' INT TERM

check() {   # check WHAT CONDITION-COMMAND...
	local what=$1
	shift
	if "$@"; then
		echo "ok    $what"
	else
		echo "FAIL  $what"
		failures=$((failures + 1))
	fi
}

ctl() { "$newbuild/ptydctl/ptydctl" --socket "$sock" "$@"; }

# ptyd's pid from `ptydctl health --json`.
serving_pid() {
	ctl health --json 2>/dev/null | sed -n 's/.*"pid": \([0-9]*\).*/\1/p'
}

# wait_until SECONDS COMMAND...: poll until COMMAND succeeds.
wait_until() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		((SECONDS < deadline)) || return 1
		sleep 0.05
	done
}

# The output of terminal SID from position POS on, for a second (attach
# streams until the shell ends).
output_from() {
	timeout 1 "$newbuild/ptydctl/ptydctl" --socket "$sock" attach "$1" \
	    --pos "$2" || true
}

# The position of the first byte attach --pos 0 gives (the terminal's
# oldest kept byte), from its first output frame: END - LEN.  In bash:
# positions are above 2^53, past what awk's doubles hold exactly.
first_pos() {
	local kind end len
	{ timeout 1 "$newbuild/ptydctl/ptydctl" --socket "$sock" attach "$1" \
	    --pos 0 --frames || true; } | {
		while read -r kind end len; do
			if [[ $kind == output ]]; then
				echo $((end - len))
				break
			fi
		done
		cat >/dev/null
	}
}

# The counter's numbers in FILE are 0, 1, 2... each once: prints the count.
counter_ok() {
	tr -d '\r' <"$1" | awk -v t="$2" '
	    $0 ~ "^(\033\\[\\?2004l)?" t "[0-9]+$" {
		sub("^(\033\\[\\?2004l)?" t, "")
		if ($0 + 0 != n) { bad = 1; exit }
		n++
	    }
	    END { if (bad || n == 0) exit 1; print n }'
}

# ---- REV's build ------------------------------------------------------------

echo "$prog: building $rev in $src"
git -C "$here" worktree add -q --detach "$src" "$rev"
(
	cd "$src"
	autoreconf -i >/dev/null 2>&1
	./configure -q
	make -j2 ptyd/ptyd ptyd/ptyd-keeper >/dev/null
) >"$tmp/build.log" 2>&1 || { tail -20 "$tmp/build.log"; die "building $rev failed"; }
mkdir -p "$bin" "$state" "$home"
mkdir -m 0700 "$run"
cp "$src/ptyd/ptyd" "$src/ptyd/ptyd-keeper" "$bin/"

# ---- ptyd from REV, three counters ------------------------------------------

cd "$tmp"
HOME=$home SHELL=/bin/bash LANG=C.UTF-8 "$bin/ptyd" --foreground \
    --state-dir "$state" --socket "$sock" --log "$tmp/ptyd.log" \
    --shell /bin/bash --shell-arg --norc --shell-arg --noprofile \
    --shell-arg -i </dev/null >>"$tmp/ptyd.out" 2>&1 &
keeper=$!
wait_until 10 test -S "$sock" || { cat "$tmp/ptyd.log"; die "ptyd did not start"; }
has_pid() { [[ -n $(serving_pid) ]]; }
wait_until 10 has_pid || die "no health answer"
old=$(serving_pid)
[[ $(cat "/proc/$keeper/comm") == ptyd-keeper ]] ||
    die "pid $keeper is $(cat "/proc/$keeper/comm"), not ptyd-keeper: $rev has no keeper"
[[ $(awk '/^PPid:/ { print $2 }' "/proc/$old/status") == "$keeper" ]] ||
    die "ptyd $old is not the keeper's child"
echo "$prog: $rev serving: keeper $keeper, ptyd $old"

declare -A shell first before
terms="c1 c2 c3"
for t in $terms; do
	shell[$t]=$(ctl start "$t" | awk '$1 == "pid" { print $2 }')
	# A counter that runs about 10 s: 100 lines a second.
	ctl input "$t" "for i in \$(seq 0 999); do echo $t-\$i; sleep 0.01; done\\r"
done
sleep 1
for t in $terms; do
	first[$t]=$(first_pos "$t")
	output_from "$t" "${first[$t]}" >"$tmp/$t.before"
	before[$t]=$(stat -c %s "$tmp/$t.before")
	counter_ok "$tmp/$t.before" "$t-" >/dev/null ||
	    die "$t: no counter before the upgrade"
done

# ---- the upgrade ------------------------------------------------------------

cp "$newbuild/ptyd/ptyd" "$bin/ptyd.new"
mv "$bin/ptyd.new" "$bin/ptyd"
t0=$(date +%s%N)
kill -USR2 "$keeper"
new=
for _ in $(seq 400); do
	new=$(serving_pid)
	[[ -n $new && $new != "$old" ]] && break
	sleep 0.025
done
echo "$prog: upgrade $old -> ${new:-none} seen after $((($(date +%s%N) - t0) / 1000000)) ms"
sleep 1.5   # more output; and the mirror flushes once a second

# The terminal's entry in `ptydctl list --json`: "PID RUNNING".
listed() {
	ctl list --json | python3 -c 'import json, sys
for t in json.load(sys.stdin)["terminals"]:
    if t["session_id"] == sys.argv[1]:
        print(t["pid"], t["running"])' "$1"
}
stats_pid() {
	ctl stats --json | python3 -c 'import json, sys
print(json.load(sys.stdin)["pid"])'
}
ppid_of() { awk '/^PPid:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }
gone() { ! kill -0 "$1" 2>/dev/null; }
size() { stat -c %s "$1"; }
# attach --pos at the end of what was read before: exactly the bytes that
# followed it in the full read (as far as both go: a counter still
# running has written more by the time of the later read).
resumes() {
	local t=$1 n
	n=$(size "$tmp/$t.resume")
	((n <= $(size "$tmp/$t.after") - before[$t])) ||
	    n=$(($(size "$tmp/$t.after") - before[$t]))
	((n > 0)) &&
	    cmp -s -n "$n" "$tmp/$t.resume" \
		<(tail -c +$((before[$t] + 1)) "$tmp/$t.after")
}
upgrade_rows() {
	sqlite3 "$state/ptyd.db" "SELECT count(*) FROM terminal_events
	    WHERE kind = 'upgrade' AND session_id = '$1'
	    AND detail LIKE 'taken over by ptyd pid $new %'"
}

check "health answers from a new ptyd ($old -> ${new:-none})" \
    test -n "$new" -a "$new" != "$old"
check "stats answers from it" test "$(stats_pid)" = "$new"
check "the keeper is the same ($keeper) and ptyd its child" \
    test "$(ppid_of "$new")" = "$keeper"
check "the old ptyd is gone" gone "$old"
for t in $terms; do
	check "$t: same shell pid ${shell[$t]}, running" \
	    test "$(listed "$t")" = "${shell[$t]} True"
	output_from "$t" "${first[$t]}" >"$tmp/$t.after"
	check "$t: the ${before[$t]} bytes read before the upgrade are the same after it" \
	    cmp -s -n "${before[$t]}" "$tmp/$t.before" "$tmp/$t.after"
	check "$t: output went on ($(size "$tmp/$t.after") bytes now)" \
	    test "$(size "$tmp/$t.after")" -gt "$((before[$t] + 100))"
	n=$(counter_ok "$tmp/$t.after" "$t-" || echo 0)
	check "$t: the counter goes on, every line once, in order ($n lines)" \
	    test "$n" -gt 100
	output_from "$t" "$((first[$t] + before[$t]))" >"$tmp/$t.resume"
	check "$t: attach --pos at the old end resumes exactly there" resumes "$t"
	check "$t: an upgrade row naming pid $new" test "$(upgrade_rows "$t")" = 1
done

echo "--- ptyd.log (the upgrade)"
grep -E "upgrade|keeper" "$tmp/ptyd.log" | tail -8
if ((failures == 0)); then
	echo "PASS: $rev -> $newbuild ($old -> $new), 3 terminals kept"
	exit 0
fi
echo "FAIL: $failures check(s) failed ($rev -> $newbuild)"
exit 1
