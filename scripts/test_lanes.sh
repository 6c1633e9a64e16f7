#!/usr/bin/env bash
# How `make test` runs the suite (docs/testing.md, "How `make test` runs"): two lanes
# at once.
#  - The quiet lane: the tests marked `timed` (they time something, or stop
#    QEMU from outside), one at a time, at normal priority.
#  - The busy lane: every other test, in TEST_JOBS pytest-xdist workers, at
#    the lowest priority (nice 19), so it takes only the CPU the quiet lane
#    leaves: a quiet-lane QEMU is never made to wait for it. The timed tests
#    used to run alone before the rest and leave a core idle for ten minutes.
# Each QEMU configuration boots once per lane (tests/helpers/boots.py, BootCache):
# a busy-lane test reads the quiet lane's run when it is there, and a timed
# test never reads a run the busy lane made.
#
# Each lane's every test, with its time, is kept in $BUILD/test/{quiet,busy}-lane.xml
# (JUnit XML): scripts/test_times.py sums them by file.
#
# Usage: test_lanes.sh FOLDER...   with PYTEST (the pytest command, its
# environment first), TEST_JOBS and BUILD set by the Makefile.
# The status: 0 when both lanes passed; status 5 (nothing collected in a
# lane) is no failure.
set -u
: "${PYTEST:?the Makefile sets it}" "${TEST_JOBS:=3}" "${BUILD:=build}"

folders=("$@")
# The busy lane takes the host tests first and the boot tests last, so that
# by the time a boot test asks for a configuration the quiet lane shares,
# the quiet lane has mostly run it (pytest-xdist hands tests out in order).
# A folder given may be one of these, one inside them (tests/host/report) or
# a test file; what lies in none of them keeps its place after them.
busy_folders=()
for f in tests/host tests/release tests/fleet tests/boot; do
    for g in "${folders[@]}"; do
        g=${g%/}
        if [ "$g" = tests ]; then
            busy_folders+=("$f")
        elif [ "$g" = "$f" ] || [ "${g#"$f"/}" != "$g" ]; then
            busy_folders+=("$g")
        fi
    done
done
for g in "${folders[@]}"; do
    g=${g%/}
    case "$g" in
        tests | tests/host | tests/host/* | tests/release | tests/release/* | tests/fleet | tests/fleet/* | tests/boot | tests/boot/*) ;;
        *) busy_folders+=("$g") ;;
    esac
done

mkdir -p "$BUILD/test"
busy_log="$BUILD/test/busy-lane.log"
start=$(date +%s)

echo "== the untimed tests, $TEST_JOBS workers at the lowest priority, beside the timed ones (their output: $busy_log, shown when they end)"
# shellcheck disable=SC2086  # PYTEST is a command line
# In a session of its own (setsid), so that one signal ends the lane with its
# workers and their QEMUs if this script is stopped. A new session is also a
# new scheduler autogroup where the kernel has them (sched_autogroup_enabled),
# and autogroups share the CPU fairly whatever their tasks' nice: the group
# itself is given nice 19 too (raising it needs no privilege), or the lane
# takes half the CPU from the timed tests (seen: a vCPU kept waiting 44 % of
# a steal scan that was to be undisturbed).
# shellcheck disable=SC2016  # $@ is the inner shell's
( CLOCKBENCH_LANE=busy exec setsid sh -c '[ -w /proc/self/autogroup ] && echo 19 > /proc/self/autogroup 2>/dev/null; exec nice -n 19 env "$@"' \
    busy-lane $PYTEST -n "$TEST_JOBS" --dist loadgroup --junitxml="$BUILD/test/busy-lane.xml" -m "not timed" "${busy_folders[@]}" ) \
    > "$busy_log" 2>&1 &
busy=$!
trap 'kill -TERM -- "-$busy" 2>/dev/null; exit 130' INT TERM

echo "== the timed tests, one at a time"
# shellcheck disable=SC2086
CLOCKBENCH_LANE=quiet env $PYTEST -p no:xdist --junitxml="$BUILD/test/quiet-lane.xml" -m timed "${folders[@]}"
quiet_status=$?
echo "== the timed tests ended after $(( $(date +%s) - start )) s (status $quiet_status); waiting for the untimed ones"

wait "$busy"
busy_status=$?
echo "== the untimed tests ended after $(( $(date +%s) - start )) s (status $busy_status):"
cat "$busy_log"

status=0
for s in "$quiet_status" "$busy_status"; do
    [ "$s" -eq 0 ] || [ "$s" -eq 5 ] || status=1
done
exit $status
