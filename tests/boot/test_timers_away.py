"""Time away during the timers phase: said, never a false failure.

- SIGSTOP of QEMU under TCG: every guest clock (TSC, HPET, PIT, APIC timer)
  moves ahead alike on resumption, so nothing inside an idle wait can tell a
  stop shorter than its bound; the report must say so ("the idle figures
  cannot exclude one"). Where the stop lands it is seen: a busy wait or a
  rate window sees the TSC step, an event later than its bound (which the
  wait or its watchdog would have ended) can only be such a stop; such an
  event is left out as away, so no figure holds the stop. The second clock (the HPET) never claims a stop it cannot
  see, and no check fails.
- A monitor pause under KVM during the idle cells: QEMU's HPET stands still
  while the guest's TSC runs on, so each idle wait checked against it finds
  the time away: the events are marked `away` (`away_reference`), left out
  of the figures (no idle cell's maximum holds the pause) and counted. Under
  this machine's emulating KVM a boot takes minutes: it runs only where KVM
  is usable (the kvm fixture), and "kvm" in its name keeps it out of -k "not kvm".

Records (docs/output.md): interrupts {busy_gaps, busy_gap_max_ns,
away_reference, reference_stops, reference_stop_max_ns}, timer_latency
{wait, n, max_ns, away, away_reference, away_max_ns}, timer_rate_window
{counter, gaps, gap_max_ns, step, tries}, and progress {"phase": "timers",
"percent" > 0} when the idle waits begin.
"""

from __future__ import annotations

import pytest

import boots
from clockbench.machines import qemu
from clockbench.records import records

pytestmark = pytest.mark.timed  # stopped from outside, and lateness measured

TIMERS_START = r'"type":"progress".*"phase":"timers"'
IDLE_START = boots.IDLE_START


def text(b):
    """The report's words, whatever their line breaks."""
    return " ".join(b.output.split())


def no_check_failed(b):
    failed = [c for c in records.of_type(b.records, "check") if c["result"] == "FAIL"]
    assert not failed, failed


# at the phase's start (its rate windows, then busy waits) and when its idle waits begin
@pytest.mark.parametrize("trigger", [TIMERS_START, IDLE_START], ids=["start", "idle"])
def test_sigstop_under_tcg_is_said_and_fails_nothing(boot, trigger):
    stall_s = 1.0
    # placed by wall time from the trigger's line, and it need not land
    # anywhere in particular: every check below holds wherever it falls (in a
    # rate window, a busy or idle wait, between events, or past the phase on
    # a host that read the line late), so a late stop is no failure
    b = boot(boot="direct", accel="tcg", append="only=timers", timeout=300,
             faults=[qemu.Fault("sigstop", trigger, delay_s=0.0, duration_s=stall_s)])
    assert b.status == 0, b.explain()
    [inj] = b.result.injections
    assert inj.injected and inj.stopped_s > 0.5 * stall_s, inj.describe()
    no_check_failed(b)
    assert "the idle figures cannot exclude one" in text(b)
    i = records.one(b.records, "interrupts")
    assert i["reference_stops"] == 0, i  # the HPET ran on with the TSC: it cannot tell, and does not claim to
    cells = records.of_type(b.records, "timer_latency")
    for c in cells:
        assert c["early"] == 0 and c["lost"] == 0 and c["away_reference"] == 0, c
    windows = records.of_type(b.records, "timer_rate_window")
    half = 0.5 * stall_s * 1e9
    # wherever the stop landed, no figure holds it: a busy wait sees the TSC
    # step, an event later than its bound can only be such a stop (both left
    # out as away), a rate window notes its gap (the counter ran on alike:
    # no rate bent); between events it touches nothing
    for c in cells:
        assert c["n"] == 0 or c["max_ns"] < half, c
    for w in windows:
        assert w["step"] == "normal", w
    if i["busy_gaps"] and i["busy_gap_max_ns"] > half:
        assert "Busy waits and armings saw" in text(b), i
    if i["beyond_bound"]:
        assert "only a stop of the whole machine explains that" in text(b), i
        assert sum(c["away"] for c in cells) >= i["beyond_bound"], i


def test_kvm_pause_during_idle_waits_is_marked_away(boot, kvm):
    # the shared paused KVM run (boots.KVM_PAUSED): its first pause, 2 s once
    # the idle waits began; its second, in the drift window, is test_stalls.py's
    b = boot(**boots.KVM_PAUSED)
    assert b.status == 0, b.explain()
    inj = boots.injection(b, IDLE_START)
    stall_s = inj.fault.duration_s
    assert stall_s == 2.0
    assert inj.injected and inj.stopped_s > 0.5 * stall_s, inj.describe()
    no_check_failed(b)
    i = records.one(b.records, "interrupts")
    # the pause lands where the vCPU leaves the guest for QEMU, often at an
    # HPET access (the watchdog's, the reference's reads): inside a wait it
    # marks the event away, between events it is said and touches nothing
    assert i["away_reference"] == "hpet", i
    assert max(i["reference_stop_max_ns"], i["reference_stop_between_max_ns"]) > 0.5 * stall_s * 1e9, i
    cells = records.of_type(b.records, "timer_latency")
    assert sum(c["away_reference"] for c in cells) == i["reference_stops"], i
    idle = [c for c in cells if c["wait"] != "busy"]
    for c in idle:
        # the paused events are left out: no idle figure holds the pause
        assert c["early"] == 0 and c["lost"] == 0, c
        assert c["n"] == 0 or c["max_ns"] < 0.5 * stall_s * 1e9, c
