"""Timer interrupts: every timer present is measured or skipped with its
reason, nothing fires before its deadline, nothing hangs, and the APIC
timer's rate is QEMU's and KVM's known answer.

Known answer: QEMU's APIC timer (hw/intc/apic.c) counts QEMU_CLOCK_VIRTUAL
nanoseconds shifted right by the divide configuration, and KVM's in-kernel
APIC (arch/x86/kvm/lapic.h, APIC_BUS_CYCLE_NS = 1) counts one tick per
nanosecond: 1 GHz at divide by 1 on both. Both run from the same host clock
as QEMU's HPET, so against the HPET the ratio is exact and only our
measurement's own uncertainty separates it from 1 GHz.

KVM shows what TCG cannot: the TSC-deadline timer, x2APIC mode, a pause
while the TSC runs on, KVM's in-kernel PIT; those checks read the shared KVM
runs of tests/boot/boots.py. Every test here times interrupts.
"""

from __future__ import annotations

import pytest

import boots
from helpers.paths import PVH_KERNEL
from clockbench.machines import qemu
from clockbench.records import records

pytestmark = pytest.mark.timed

APIC_HZ = 1_000_000_000
DELAYS = {1000, 10000, 100000, 1000000}
FIELDS = ("timer", "wait", "delay_ns", "n", "min_ns", "p50_ns", "mean_ns", "p99_ns", "p999_ns", "max_ns", "early", "lost")


def timer(b, name):
    return records.one(b.records, "timer", timer=name)


def cells(b, name, cpu=0):
    return [r for r in records.of_type(b.records, "timer_latency") if r["timer"] == name and r["cpu"] == cpu]


def assert_measured_on_time(b, name, waits=("busy", "hlt")):
    t = timer(b, name)
    assert t["measured"], (t, b.explain())
    got = cells(b, name)
    for w in waits:
        assert {c["delay_ns"] for c in got if c["wait"] == w} == DELAYS, (name, w, got)
    for c in got:
        assert c["early"] == 0, c  # nothing fires before its deadline
        assert c["lost"] == 0, c
        assert c["n"] >= 1 and all(k in c for k in FIELDS), c
        # p99 and p99.9 only from 100 and 1000 events (null below)
        tail = [c[k] for k in ("p50_ns", "p99_ns", "p999_ns") if c[k] is not None] + [c["max_ns"]]
        assert c["min_ns"] >= 0 and c["min_ns"] <= min(tail) and tail == sorted(tail), c
        assert (c["p99_ns"] is None) == (c["n"] < 100) and (c["p999_ns"] is None) == (c["n"] < 1000), c
    hist = [h for h in records.of_type(b.records, "timer_histogram") if h["timer"] == name]
    assert len(hist) == len(got)
    for h in hist:
        cell = next(c for c in got if c["wait"] == h["wait"] and c["delay_ns"] == h["delay_ns"])
        assert sum(h["counts"]) == cell["n"] and h["counts"][0] == 0, h  # bin 0 holds the early ones


def assert_skipped(b, name, why):
    t = timer(b, name)
    assert not t["measured"] and why in t["reason"], t
    assert not cells(b, name)
    check = records.one(b.records, "check", name=f"timer interrupts: {name}")
    assert check["result"] == "SKIP", check


def assert_apic_rate_known(b):
    a = records.one(b.records, "apic_timer")
    assert a["reference"] == "hpet", a
    u = a["uncertainty_vs_reference_ppm"] * 1e-6
    assert u < 0.02, a
    assert abs(a["hz_vs_reference"] - APIC_HZ) <= 3 * u * APIC_HZ + 1, a


def assert_no_stray(b):
    i = records.one(b.records, "interrupts")
    assert i["unexpected"] == 0, i


@pytest.fixture(scope="module")
def tcg_q35(boot):
    # the shared run of every experiment (tests/boot/boots.py), whose timers
    # phase is the one only=timers runs
    b = boot(**boots.TCG_Q35)
    assert b.status == 0, b.explain()
    return b


def test_tcg_q35_measures_lapic_hpet_and_pit(tcg_q35):
    for name in ("lapic", "hpet", "pit"):
        assert_measured_on_time(tcg_q35, name)
    assert "I/O APIC" in timer(tcg_q35, "hpet")["route"]
    assert "GSI 2" in timer(tcg_q35, "pit")["route"]  # QEMU's override: IRQ 0 -> GSI 2
    assert_no_stray(tcg_q35)


def test_tcg_q35_apic_timer_runs_at_1ghz(tcg_q35):
    assert_apic_rate_known(tcg_q35)


def test_tcg_lapic_is_a_counter_too(tcg_q35):
    c = records.one(tcg_q35.records, "counter", name="lapic")
    assert c["present"] and c["width_bits"] == 32, c


def test_tcg_q35_names_a_timer_for_precise_events(tcg_q35):
    choice = records.one(tcg_q35.records, "timer_choice")
    assert choice["timer"] in ("lapic", "hpet", "pit"), choice
    assert "Precise events:" in tcg_q35.output
    assert "== Timer interrupts ==" in tcg_q35.output


def test_tcg_without_tsc_deadline_or_mwait_says_why(boot):
    b = boot(boot="direct", accel="tcg", machine="pc", cpu="qemu64", append="only=timers",
             extra=["-machine", "hpet=off"], timeout=300)
    assert b.status == 0, b.explain()
    assert_skipped(b, "tsc_deadline", "CPUID.1:ECX[24] clear")
    assert_skipped(b, "hpet", "HPET")
    assert_measured_on_time(b, "lapic")
    assert_measured_on_time(b, "pit")
    assert "MONITOR/MWAIT" in records.one(b.records, "interrupts")["mwait"]
    assert_no_stray(b)


# QEMU 7.2 replaces a capability whose low byte is 0 with the machine's
# default (hw/i386/pc.c reads it into a uint8_t), so the comparator is offered
# GSI 0 (the 8259's input, never used) and GSI 31, which the 24-pin I/O APIC lacks.
NO_ROUTE = ["-global", "hpet.hpet-intcap=0x80000001"]


def test_hpet_without_an_io_apic_route_falls_back_to_legacy_replacement(boot):
    b = boot(boot="direct", accel="tcg", append="only=timers", extra=NO_ROUTE, timeout=300)
    assert b.status == 0, b.explain()
    t = timer(b, "hpet")
    assert t["route_capability"] == "0x80000001" and "legacy replacement" in t["route"], t
    for name in ("lapic", "hpet", "pit"):
        assert_measured_on_time(b, name)


def test_hpet_through_fsb_delivery(boot):
    b = boot(boot="direct", accel="tcg", append="only=timers",
             extra=[*NO_ROUTE, "-global", "hpet.msi=on"], timeout=300)
    assert b.status == 0, b.explain()
    assert "FSB" in timer(b, "hpet")["route"]
    assert_measured_on_time(b, "hpet")


def test_safe_mode_leaves_hpet_and_pit_alone(boot):
    b = boot(boot="direct", accel="tcg", append="only=timers safe", timeout=300)
    assert b.status == 0, b.explain()
    assert_skipped(b, "hpet", "safe mode")
    assert_skipped(b, "pit", "safe mode")
    # no second timer to bound an idle wait: the LAPIC is measured busy only, saying why
    assert_measured_on_time(b, "lapic", waits=("busy",))
    assert {c["wait"] for c in cells(b, "lapic")} == {"busy"}
    assert "no second timer" in timer(b, "lapic")["idle_reason"]


@pytest.fixture(scope="module")
def kvm_q35(boot, kvm):
    b = boot(**boots.KVM_Q35)
    assert b.status == 0, b.explain()
    return b


def test_kvm_measures_every_timer(kvm_q35):
    for name in ("lapic", "tsc_deadline", "hpet", "pit"):
        assert_measured_on_time(kvm_q35, name)
    assert_no_stray(kvm_q35)


def test_kvm_apic_timer_runs_at_1ghz(kvm_q35):
    assert_apic_rate_known(kvm_q35)


# Pauses from outside while the timers are measured: a late interrupt is
# late, never early and never lost, and the run still passes.
TIMERS_START = boots.TIMERS_START


def assert_pause_handled(b, stall_s, trigger=TIMERS_START):
    assert b.status == 0, b.explain()
    inj = boots.injection(b, trigger)
    assert inj.trigger_s is not None and inj.stopped_s and inj.stopped_s > 0.5 * stall_s, inj.describe()
    for r in records.of_type(b.records, "timer_latency"):
        assert r["early"] == 0 and r["lost"] == 0, r
    assert_no_stray(b)


def test_sigstop_during_the_timers(boot):
    # placed by wall time (0.3 s after the phase's first record), and nothing
    # below depends on where it lands: early and lost events are none
    # wherever a stop falls (inside a wait, between them, or after the phase
    # on a host that read the line late), and stopped_s is the host's own
    stall_s = 1.5
    b = boot(boot="direct", accel="tcg", append="only=timers", timeout=300,
             faults=[qemu.Fault("sigstop", TIMERS_START, delay_s=0.3, duration_s=stall_s)])
    assert_pause_handled(b, stall_s)


def test_kvm_pause_during_the_timers(boot, kvm):
    # the run's second pause, in the drift window, is tests/boot/test_stalls.py's
    b = boot(**boots.KVM_PAUSED)
    assert_pause_handled(b, boots.injection(b, boots.IDLE_START).fault.duration_s, boots.IDLE_START)


def test_every_cpu_measures_its_own_apic_timer(boot):
    b = boot(boot="direct", accel="tcg", smp=2, append="only=timers", timeout=400)
    assert b.status == 0, b.explain()
    ap = [r for r in records.of_type(b.records, "timer_latency") if r["cpu"] == 1]
    assert {(r["timer"], r["wait"]) for r in ap} == {("lapic", "busy"), ("lapic", "hlt")}, ap
    assert {r["delay_ns"] for r in ap} == DELAYS
    for r in ap:
        assert r["early"] == 0 and r["lost"] == 0 and r["n"] >= 1, r
    check = records.one(b.records, "check", name="timer interrupts: every CPU")
    assert check["result"] == "PASS", check


def test_an_ap_job_cut_at_its_end_leaves_the_cpu_taking_jobs(boot):
    """Known answer: timers_ap_ms=50 ends CPU 1's timers job 50 ms after it
    is posted, less than any cell's event can take (its bound alone is
    200 ms), so every cell is cut, none lost; the job ends near its end (not
    after its cells' 1.3 s of budgets, nor after the boot CPU gives up on it),
    and CPU 1 then does its part of the cpus experiment."""
    b = boot(boot="direct", accel="tcg", smp=2, append="only=timers,cpus timers_ap_ms=50", timeout=400)
    assert b.status == 0, b.explain()
    row = records.one(b.records, "timer_cpu", cpu=1)
    assert row["measured"] and row["reason"] is None and row["job_ms"] == 50, row
    assert row["cells"] == len(DELAYS) * 2 and row["cells_cut"] == row["cells"], row
    # the rate window (40 ms, up to 3 when disturbed) comes first; then every cell ends at once
    assert row["took_ms"] < 50 + 3 * 40 + 100, row
    ap = [r for r in records.of_type(b.records, "timer_latency") if r["cpu"] == 1]
    assert ap and all(r["asked"] == 0 and r["lost"] == 0 for r in ap), ap
    check = records.one(b.records, "check", name="timer interrupts: every CPU")
    assert check["result"] == "SKIP" and "no event asked" in check["detail"], check  # nothing measured is no PASS
    cpu1 = records.one(b.records, "cpu", index=1)
    assert cpu1["started"] and cpu1["reason"] is None, cpu1
    sync = records.one(b.records, "tsc_sync", cpu=1)
    assert sync["offset_lo_ticks"] is not None and sync["offset_lo_ticks"] <= 0 <= sync["offset_hi_ticks"], sync


def test_kvm_every_cpu_in_x2apic_mode(boot, kvm):
    # x2APIC mode (registers are MSRs) and the APs, in the run tests/boot/test_cpus.py reads too
    b = boot(**boots.KVM_X2APIC)
    assert b.status == 0, b.explain()
    assert "x2APIC MSR" in records.one(b.records, "counter", name="lapic")["access"]
    for name in ("lapic", "tsc_deadline"):
        assert_measured_on_time(b, name)
    ap = [r for r in records.of_type(b.records, "timer_latency") if r["cpu"] == 1]
    assert {(r["timer"], r["wait"]) for r in ap} == {(t, w) for t in ("lapic", "tsc_deadline") for w in ("busy", "hlt")}, ap
    for r in ap:
        assert r["early"] == 0 and r["lost"] == 0, r



@pytest.mark.parametrize("accel", ["tcg", "kvm"])
def test_pc_hpet_shares_the_pit_pin(boot, accel):
    # QEMU's pc machine offers comparator 0 only GSI 2, which QEMU under KVM
    # does not route to the I/O APIC: the HPET takes IRQ 0 by legacy
    # replacement for its own cells, the PIT has it back for its cells, and
    # neither is the other's watchdog
    if accel == "kvm":
        ok, why = qemu.kvm_usable()
        if not ok:
            pytest.skip(f"KVM unusable: {why}")
    b = boot(boot="direct", accel=accel, machine="pc", append="only=timers", timeout=400)
    assert b.status == 0, b.explain()
    route = timer(b, "hpet")["route"]
    assert "legacy replacement" in route and "shared with the PIT" in route, route
    for name in ("lapic", "hpet", "pit"):
        assert_measured_on_time(b, name)


def test_microvm_pit_found_at_gsi_2_though_the_madt_says_0(boot):
    """QEMU's microvm wires the PIT to I/O APIC input 2, as a PC does, but its
    MADT states no IRQ 0 override, so by the ACPI specification IRQ 0 is GSI
    0, where nothing comes. The timers try GSI 2 before giving up (Linux's
    check_timer does the same) and measure the PIT there; the route says
    where it was found and why."""
    b = boot(boot="pvh", kernel=PVH_KERNEL, accel="tcg", machine="microvm", extra=["-machine", "microvm,acpi=on,pit=on,rtc=on"],
             append="only=timers", timeout=300)
    assert b.status == 0, b.explain()
    t = timer(b, "pit")
    assert "IRQ 0 -> GSI 2" in t["route"] and "the MADT says GSI 0 (no override), where it never came" in t["route"], t
    assert_measured_on_time(b, "pit")
    check = records.one(b.records, "check", name="timer interrupts: pit")
    assert check["result"] == "PASS", check
