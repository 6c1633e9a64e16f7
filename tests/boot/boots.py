"""QEMU configurations whose one run several test modules read.

The `boot` fixture (tests/conftest.py) runs each configuration once per
`make test` however many tests ask for it, so a check that can read one of
these runs costs no boot of its own. KVM is dear on our machines (its
/dev/kvm emulates every instruction: a quick run takes a minute or more,
PLATFORM.md), so KVM boots only for what only KVM shows (kvmclock, a pause
while the TSC runs on, TSC-deadline, x2APIC, the Hyper-V page, the host's
own CPU and its TSC claim), and each KVM run serves every check that can
read it; the rest runs under TCG.
"""

from __future__ import annotations

from clockbench.machines import qemu

# the drift window opens; the timer interrupts begin
PHASE_START = r'"type":"phase".*"experiment":"drift".*"event":"start"'
TIMERS_START = r'"type":"progress".*"phase":"timers"'
# the timers' idle waits begin
IDLE_START = r'"type":"progress".*"phase":"timers","percent":[1-9]'

# Every experiment, under TCG: the known answers of the measurement engine,
# the inventory of QEMU's q35, the log parser's real log.
TCG_Q35 = dict(boot="direct", accel="tcg", timeout=300)

# A 10 s drift window under TCG with the RTC on QEMU's virtual clock: the
# RTC's known answers (tests/boot/test_rtc.py) and the PIT's (test_measure.py:
# 10 s bring the PIT's stated uncertainty under a third of the 0.28 ppm
# between QEMU's PIT_FREQ and the crystal's 14.31818 MHz / 12).
TCG_RTC_VM_10S = dict(accel="tcg", extra=["-rtc", "clock=vm"], append="duration=10 only=drift,rtc", timeout=300)

# Under TCG, QEMU's EPYC model, the command line carrying a word the image
# does not know: the named model's CPUID (tests/boot/test_foundation.py) and
# its RDTSCP and AMD LFENCE MSR (test_inventory.py), in one run.
TCG_EPYC = dict(boot="direct", accel="tcg", cpu="EPYC", append="hello=1", timeout=120)

# Every experiment under KVM, with the 4 s drift window of the stall tests'
# baselines (tests/boot/test_stalls.py): the host's CPU and its TSC claim,
# kvmclock, TSC-deadline and every other timer, the undisturbed KVM run.
KVM_Q35 = dict(boot="direct", accel="kvm", firmware="qboot", append="duration=4", timeout=500)

# The timers and the drift window of KVM_Q35, paused twice from QEMU's
# monitor, the guest's TSC running on while QEMU's HPET and PM timer stand
# still: 2 s once the timers' idle waits have begun (tests/boot/
# test_timers.py, test_timers_away.py), 1 s in the window (test_stalls.py).
# Both placed by wall time from a line, which holds by a wide margin: under
# this KVM the idle waits and what follows them last about 7 s before the
# drift window (seen: idle waits from 48.3 s, the window at 55.1 s), so the
# first pause misses them only if the host reads the line over 4 s late; the
# second, within the window's 4 s of TSC time (which runs on through a
# pause), only if over 2 s late (and test_stalls.py locates it within 1 s).
KVM_PAUSED = dict(KVM_Q35, append="duration=4 only=timers,drift",
                  faults=[qemu.Fault("pause", IDLE_START, delay_s=0.5, duration_s=2.0),
                          qemu.Fault("pause", PHASE_START, delay_s=1.0, duration_s=1.0)])

# KVM with two CPUID features off, each read by its own test: no invariant
# TSC (the clocksource Linux would pick: kvm-clock, tests/boot/
# test_pvclock.py) and no steal time (the CPUID 0x40000001 bit clear: the
# steal check says SKIP and why, test_steal.py; a 100 ms scan). Neither
# feature touches what the other test reads, and one short KVM run costs
# about 10 CPU s here.
KVM_NO_INVTSC_NO_STEAL = dict(boot="direct", accel="kvm", firmware="qboot",
                              cpu="host,migratable=no,-invtsc,-arch-capabilities,kvm-steal-time=off",
                              append="only=cpu_speed,stolen duration=1", timeout=400)

# Two CPUs in x2APIC mode under KVM (QEMU's TCG has no x2APIC): both CPUs
# started and their TSCs compared, kvmclock across them, each CPU's own
# APIC and TSC-deadline timers through MSRs; then KVM's steal count on each
# (the stolen-time scan, 0.5 s: tests/boot/test_steal.py).
KVM_X2APIC = dict(boot="direct", accel="kvm", firmware="qboot", smp=2, append="only=timers,cpus,stolen x2apic=on", timeout=400)


def injection(b, trigger: str) -> qemu.Injection:
    """The run's one fault started by `trigger`."""
    [inj] = [i for i in b.result.injections if i.fault.trigger == trigger]
    return inj
