"""The fault injector itself (qemu.Fault, RunResult.injections), proved on
whatever kernel is built: nothing here depends on how the image reports a
stall, only on the line that starts its drift window.

What each kind of fault does to the guest (PLATFORM.md), and what is
checked here without asking the image, in ways that hold on a loaded host:
- "sigstop": every QEMU thread stops and the host's clocks run on. /proc shows
  every thread stopped, and QEMU uses no CPU time until SIGCONT. The run's
  wall time need not grow: the guest's clocks ran on too, so a window
  bounded by them can end on time.
- "pause": under TCG every guest clock stops with the VM (the TSC comes back
  up to about a microsecond off the HPET, PM timer and PIT, measured), so the
  drift window, bounded by guest time, ends that much later: the time from
  the trigger to QEMU's exit grows by the pause.
"""

from __future__ import annotations

import os

import pytest

from clockbench.machines import qemu
from clockbench.records import records

pytestmark = pytest.mark.timed  # QEMU stopped from outside, the stops timed by the host

# The line that starts the drift window: the record of the rewritten engine,
# or the report line of the engine before it.
DRIFT_START = r'"type":"phase".*"experiment":"drift".*"event":"start"|frequency and drift: '
# and the line that ends it: the host's time between the two is the window's, 4 s and any pause
DRIFT_END = r'"type":"phase".*"experiment":"drift".*"event":"end"'
WINDOW = "duration=4 only=drift"  # no RTC experiment: its wait for a wall-clock edge would blur the window's end
TIMEOUT = 120


def tcg_boot(boot, **kw):
    """A TCG direct boot with the drift window above."""
    kw.setdefault("timeout", TIMEOUT)
    return boot(boot="direct", accel="tcg", append=WINDOW, **kw)


def marker() -> qemu.Fault:
    """A fault of no length at the window's end: it only marks when that line came."""
    return qemu.Fault("sigstop", DRIFT_END, delay_s=0, duration_s=0)


def window_host_s(b) -> float:
    """Host seconds from the window's first line to its last: the first
    fault's trigger and the marker's (the last fault)."""
    start, end = b.result.injections[0], b.result.injections[-1]
    assert end.fault == marker() and end.trigger_s is not None, end.describe()
    return end.trigger_s - start.trigger_s


def assert_clean(inj: qemu.Injection, b):
    assert inj.injected and inj.error is None and inj.cut_short is None, f"{inj.describe()}\n{b.explain()}"
    assert None not in (inj.trigger_s, inj.resume_sent_s, inj.resume_confirmed_s), inj
    # sent and confirmed within a few ms of each other: the stop's length is known that well
    assert inj.stopped_uncertainty_s < 0.05, inj


@pytest.fixture(scope="module")
def undisturbed(boot):
    """A run to compare with: its faults, of no length, only mark when the window began and ended."""
    b = tcg_boot(boot, faults=[qemu.Fault("sigstop", DRIFT_START, delay_s=0, duration_s=0), marker()])
    assert b.status is not None and not b.result.timed_out, b.explain()
    start, end = b.result.injections
    assert start.injected and start.error is None and start.stopped_s < 0.05, start
    # the marker's stop comes after the window, so its length (how soon /proc showed it) matters to nothing
    assert end.injected and end.error is None, end
    assert b.result.timeout_s == TIMEOUT
    return b


def test_sigstop_of_one_second(boot):
    fault = qemu.Fault("sigstop", DRIFT_START, delay_s=1.0, duration_s=1.0)
    b = tcg_boot(boot, faults=[fault])
    r = b.result
    # a verdict: the image ran to its end once resumed (whether it passed is the image's business)
    assert r.status is not None and not r.timed_out, b.explain()
    assert r.timeout_s == pytest.approx(TIMEOUT + 1.0)
    [inj] = r.injections
    assert inj.fault == fault
    assert_clean(inj, b)  # includes /proc showing every thread stopped, then running
    assert 1.0 <= inj.stop_sent_s < 1.2, inj  # delay_s after the trigger
    assert 0.95 < inj.stopped_s < 1.2, inj
    assert inj.stop_sent_s <= inj.stop_confirmed_s <= inj.resume_sent_s <= inj.resume_confirmed_s
    # stopped all along: not one clock tick of CPU time in that second (a running TCG QEMU uses most of one)
    assert inj.cpu_while_stopped_s is not None and inj.cpu_while_stopped_s <= 0.02, inj


def test_monitor_pause_of_half_a_second_under_tcg(boot, undisturbed):
    fault = qemu.Fault("pause", DRIFT_START, delay_s=1.0, duration_s=0.5)
    b = tcg_boot(boot, faults=[fault, marker()])
    r = b.result
    assert r.status is not None and not r.timed_out, b.explain()
    assert r.timeout_s == pytest.approx(TIMEOUT + 0.5)
    inj, _ = r.injections
    assert_clean(inj, b)  # includes the monitor saying "paused" after stop and "running" after cont
    assert 1.0 <= inj.stop_sent_s < 1.2 and 0.45 < inj.stopped_s < 0.7, inj
    # a monitor of its own, made for the run and removed after it
    mon = next(a for a in r.command if a.startswith("unix:"))
    assert not os.path.exists(mon[len("unix:"):].split(",")[0])
    # under TCG the guest's clocks stopped with the VM: its drift window ended
    # that much later by the host than by the guest's TSC. The guest's own
    # time of the window (drift_window.ran_s) is taken off each run's host
    # time: on a loaded host QEMU's thread waits for a core, the loop sees
    # the TSC step and makes the window longer by that (seen: an undisturbed
    # window 0.6 s long by the host, which hid the pause when host times
    # alone were compared)
    unseen = host_beyond_guest_s(b)
    assert unseen >= inj.stopped_s - 0.15, (unseen, inj)  # the guest's clocks stood still through it, on any host
    grew = unseen - host_beyond_guest_s(undisturbed)
    assert abs(grew - inj.stopped_s) < 0.25, (window_host_s(b), window_host_s(undisturbed), unseen, inj)


def host_beyond_guest_s(b) -> float:
    """The window's host seconds less its seconds by the guest's TSC: the
    time the guest's clocks stood still, and the serial port's lag."""
    ran_s = records.one(b.records, "drift_window")["ran_s"]
    return window_host_s(b) - ran_s


# the image's first line, a few ms after QEMU starts: what a fault placed from it
# must allow for is QEMU's start, not the boot and the calibration
FIRST_LINE = r"clockbench \S+: time counters"


@pytest.mark.parametrize("kind", ["sigstop", "pause"])
def test_qemu_is_resumed_when_the_run_times_out_during_a_fault(boot, kind):
    # The bound (0.5 s, plus the fault's 3 s) runs out in the middle of the
    # fault whenever the fault starts after the 0.5 s and before the 3.5 s. A
    # delay of 1 s makes the first hold by construction, and leaves the stop
    # at most 2.5 s long before the bound cuts it (2.5 s less the first
    # line's time): it was 0.5 s, and a first line 0.09 s after QEMU's start
    # left a stop of 2.91 s, past the 2.9 s below though the bound had cut it
    # as it should. The second holds while the first line comes within 2.5 s
    # of QEMU's start. It was placed 1 s after the drift window began, which a
    # loaded host's boot and calibration (several rounds of windows, against
    # two references) can push past 2.5 s: the bound then ran out before the
    # fault, never injected.
    fault = qemu.Fault(kind, FIRST_LINE, delay_s=1.0, duration_s=3.0)
    b = tcg_boot(boot, faults=[fault], timeout=0.5)
    r = b.result
    assert r.timed_out and r.timeout_s == pytest.approx(3.5) and r.status is None, b.explain()
    assert r.seconds < r.timeout_s + 3, r.seconds  # nothing hung
    [inj] = r.injections
    assert inj.injected and inj.error is None, inj.describe()
    assert "time bound" in inj.cut_short, inj
    # resumed (and, for SIGSTOP, seen running in /proc; for a pause, "running" on
    # the monitor) before QEMU was ended: cut short well before the 3 s asked
    assert inj.resume_confirmed_s is not None and inj.stopped_s < 2.9, inj
    assert abs(inj.trigger_s + inj.stop_sent_s + inj.stopped_s - r.timeout_s) < 0.3, inj
    assert not os.path.exists(f"/proc/{r.pid}"), f"QEMU (pid {r.pid}) outlived its run"


def test_two_faults_in_order(boot):
    faults = [qemu.Fault("sigstop", DRIFT_START, delay_s=0.5, duration_s=0.3),
              qemu.Fault("pause", DRIFT_START, delay_s=0.6, duration_s=0.3)]
    b = tcg_boot(boot, faults=faults)
    r = b.result
    assert r.status is not None and not r.timed_out, b.explain()
    assert r.timeout_s == pytest.approx(TIMEOUT + 0.6)
    first, second = r.injections
    assert_clean(first, b)
    assert_clean(second, b)
    # one at a time: the second waits for the first to end, though its delay was up
    assert first.trigger_s == second.trigger_s
    assert second.stop_sent_s >= first.resume_confirmed_s and second.stop_sent_s >= 0.6


def test_a_trigger_that_never_appears(boot):
    fault = qemu.Fault("sigstop", r"no such line, ever", duration_s=2.0)
    b = tcg_boot(boot, faults=[fault])
    assert b.status is not None and not b.result.timed_out, b.explain()
    [inj] = b.result.injections
    assert not inj.injected and inj.trigger_s is None and inj.stop_sent_s is None
    assert "before the trigger appeared" in inj.error and "not injected" in inj.describe()


@pytest.mark.parametrize("fault, problem", [
    (qemu.Fault("freeze", DRIFT_START), "unknown fault kind"),
    (qemu.Fault("pause", DRIFT_START, duration_s=-1), "0 or more seconds"),
    (qemu.Fault("sigstop", "(unclosed"), "not a regular expression"),
])
def test_bad_faults_are_refused_before_qemu_starts(fault, problem):
    with pytest.raises(ValueError, match=problem):
        qemu.run(qemu.QemuConfig(kernel="/nonexistent", accel="tcg", faults=[fault]), timeout=1)
