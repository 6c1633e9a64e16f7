"""Steal time against its known answers (issue 29, item 6).

Where KVM offers steal time (CPUID 0x40000001 EAX bit 5), the stolen-time
scan reads KVM's count (MSR_KVM_STEAL_TIME's area) just before and just
after it and reports both counts, each with its uncertainty, in a `steal`
record (docs/output.md). KVM's count is the host scheduler's run_delay of the
vCPU's thread (Linux x86.c record_steal_time), which the host can read
itself in /proc/PID/task/TID/schedstat (its second field, ns).

- A busy process pinned with QEMU's vCPU thread to one host core (the "hog"
  fault) makes the host steal about half the scan; an undisturbed run of
  the same configuration steals only what the host's other load takes. In
  both, KVM's count must match the host's own run_delay over the serial
  lines that bracket the scan, and the scan's count must agree with KVM's
  within their stated uncertainties, but for what the host's own account
  says was not steal (see test_scan_and_kvm_agree). "Near zero" for the
  undisturbed run: KVM's count no more than the host's own run_delay of the
  vCPU thread (plus KVM's stated uncertainty) and under NEAR_ZERO of the
  scan's window, where the hog takes about half (a quarter at least is
  required of it); the scan's count no more than KVM's, its uncertainties
  and the host-measured time that was not steal.
- The undisturbed KVM run of boots.KVM_Q35 (shared): the count is read, and
  KVM's count is within what the scan saw (the check PASSes).
- Under TCG there is no KVM, and under KVM with QEMU's kvm-steal-time=off
  the CPUID bit is clear: the check says SKIP and why.
"""

from __future__ import annotations

import os
import re
import threading
import time

import pytest

import boots
from helpers.paths import KERNEL
from clockbench.machines import qemu
from clockbench.records import records

STOLEN_PROGRESS = r'"type":"progress".*"phase":"stolen"'
SCAN_MS = 1000  # duration=10 sizes the scan at 1 s (kernel/profile.c: 100 ms a second)
# The undisturbed run's KVM count, as a fraction of the scan's window: the
# hog takes about half, at least a quarter; `make test` runs these tests
# one at a time, with no other VM of ours on the CPU. A host that other work
# keeps busy fails it, and says so (seen on this shared machine, load 7-10 on
# 2 cores: 598 and 694 ms of 1000 ms, the host's run_delay confirming it, as
# much as the hog's; the vCPU thread at nice -20 still lost 58 %).
NEAR_ZERO = 0.05
UNDISTURBED_TRIES = 3  # see steal_run
STEAL_KVM = dict(boot="direct", accel="kvm", firmware="qboot", smp=1, append="only=stolen duration=10",
                 extra=["-name", "debug-threads=on"])  # names the vCPU thread "CPU 0/KVM"
# The hog starts when the host reads the scan's progress record, placed by
# wall time: the 1 s scan begins a few ms after that line (its typical-gap
# reads, one MSR), and the hog lasts 3 s, so it covers the scan from the
# host's delay in reading the line to its end; a quarter stolen needs that
# delay under about half a second (it is milliseconds in the timed lane,
# which nothing of ours shares).
RUNS = {"undisturbed": STEAL_KVM,
        "hog": dict(STEAL_KVM, faults=[qemu.Fault("hog", STOLEN_PROGRESS, delay_s=0.0, duration_s=3.0)])}
# KVM without the feature bit: CPUID 0x40000001 EAX bit 5 clear (a 100 ms
# scan), in the run test_pvclock.py reads without the invariant TSC
NO_STEAL = boots.KVM_NO_INVTSC_NO_STEAL
# the serial lines the host reads its own account at: before calibration
# (long before the scan), when the scan's phase begins, when every phase is done
MARKS = {"measuring": re.compile(r"== Measuring \(profile"), "stolen": re.compile(STOLEN_PROGRESS),
         "done": re.compile(r'"type":"progress".*"phase":"done"')}


def qemu_child() -> int | None:
    """The QEMU this process started (its only qemu-system child)."""
    for tid in os.listdir(f"/proc/{os.getpid()}/task"):
        try:
            kids = open(f"/proc/{os.getpid()}/task/{tid}/children").read().split()
        except OSError:
            continue
        for k in kids:
            try:
                if open(f"/proc/{k}/comm").read().startswith("qemu-system"):
                    return int(k)
            except OSError:
                pass
    return None


def vcpu_schedstat(pid: int) -> tuple[int, int] | None:
    """The host's account of QEMU's vCPU thread (-smp 1: one): ns on a CPU
    and ns waiting on a run queue (run_delay), schedstat's first two fields."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            if re.fullmatch(r"CPU \d+/KVM", open(f"/proc/{pid}/task/{tid}/comm").read().strip()):
                ran, waited = open(f"/proc/{pid}/task/{tid}/schedstat").read().split()[:2]
                return int(ran), int(waited)
        except (OSError, ValueError):
            return None
    return None


class HostAccount:
    """Samples the vCPU thread's run_delay and the host's clock at MARKS as the serial output arrives."""

    def __init__(self):
        self.samples: dict[str, tuple[float, tuple[int, int] | None]] = {}
        self.tail = ""
        self.lock = threading.Lock()

    def echo(self, text: str) -> None:
        with self.lock:
            self.tail = (self.tail + text)[-4096:]
            for name, pat in MARKS.items():
                if name not in self.samples and pat.search(self.tail):
                    pid = qemu_child()
                    self.samples[name] = (time.monotonic(), vcpu_schedstat(pid) if pid else None)


@pytest.fixture(scope="module", params=sorted(RUNS))
def steal_run(request, kvm):
    if not os.path.exists("/proc/self/schedstat"):
        pytest.fail("the host kernel keeps no schedstat: its run_delay, the known answer, cannot be read")
    # "Undisturbed" is a precondition the host can check by its own account,
    # without the image: the vCPU thread's run_delay over the scan. Where the
    # busy lane (or anything else) kept it waiting past NEAR_ZERO anyway, the
    # run was not undisturbed, and it is made again, at most twice more.
    for attempt in range(1 if request.param == "hog" else UNDISTURBED_TRIES):
        host = HostAccount()
        cfg = qemu.QemuConfig(kernel=KERNEL, **RUNS[request.param])
        t0 = time.monotonic()
        r = qemu.run(cfg, timeout=300, echo=host.echo)
        print(f"\n{request.param} run: {time.monotonic() - t0:.1f} s; {[i.describe() for i in r.injections]}")
        if request.param == "hog" or not {"stolen", "done"} <= set(host.samples):
            break
        try:
            waited_ns = host_bracket(host, "stolen", "done")[2]
        except AssertionError:
            break
        if waited_ns <= NEAR_ZERO * SCAN_MS * 1e6:
            break
        print(f"  not undisturbed by the host's own account: the vCPU thread waited {waited_ns / 1e6:.1f} ms "
              f"on a run queue over the scan (attempt {attempt + 1} of {UNDISTURBED_TRIES})")
    return request.param, r, host


def host_bracket(host: HostAccount, first: str, last: str) -> tuple[float, int, int]:
    """Host seconds between two marks, and the vCPU thread's ns on a CPU and on a run queue between them."""
    (t0, a), (t1, b) = host.samples[first], host.samples[last]
    assert a is not None and b is not None, f"no vCPU thread named CPU n/KVM: {host.samples}"
    return t1 - t0, b[0] - a[0], b[1] - a[1]


@pytest.mark.timed
def test_scan_and_kvm_agree(steal_run):
    """The known answer: the two counts agree within their stated
    uncertainties, but for what the host says was not steal. The scan
    counts every gap; KVM only the vCPU thread's waits on a host run queue.
    Two parts of the host's own account are in the scan's count alone:
    time the thread was neither running nor queued (asleep, the host's
    interrupts, a hypervisor under the host: wall time less both), and time
    it ran beyond the loop's own work (turns at the typical gap): the
    hypervisor's work for the vCPU, which under this machine's PVM KVM
    grows after each switch back to the vCPU (seen: 290 ms of a 1 s scan).
    Both are measured over the host's bracket of the scan and allowed; the
    image's own `agree` says whether the two counts met without them.

    Why `agree` is not simply required: on this machine's PVM KVM every
    guest instruction the hypervisor emulates is time the vCPU thread RUNS
    on a host CPU (schedstat's first field), so KVM, which counts only its
    waits on a run queue, rightly leaves it out of steal, while the scan
    sees it as gaps. Where that host-measured time (away_ns + overhead_ns)
    is within the two stated uncertainties, it cannot explain a
    disagreement, and `agree` is required."""
    kind, r, host = steal_run
    assert r.status is not None, r.describe()
    for inj in r.injections:
        assert inj.injected and not inj.error, inj.describe()
    recs = records.parse(r.output)
    st = records.one(recs, "steal", cpu=0)
    hw = records.one(recs, "hwlat")
    assert st["counted"], st
    window_ns = hw["window_s"] * 1e9
    assert set(host.samples) == set(MARKS), host.samples
    wall_s, ran_ns, waited_ns = host_bracket(host, "stolen", "done")
    away_ns = max(0.0, wall_s * 1e9 - ran_ns - waited_ns)
    loop_work_ns = hw["iterations"] * hw["typical_gap_ns"]
    overhead_ns = max(0.0, ran_ns - loop_work_ns)
    print(f"KVM {st['kvm_ns'] / 1e6:.3f} ms +- {st['kvm_uncertainty_ns'] / 1e6:.3f}, scan {st['scan_ns'] / 1e6:.3f} ms "
          f"+- {st['scan_uncertainty_ns'] / 1e6:.3f} over {window_ns / 1e6:.1f} ms; host: the vCPU thread ran "
          f"{ran_ns / 1e6:.1f} ms ({overhead_ns / 1e6:.1f} beyond the loop's own work), waited {waited_ns / 1e6:.1f} ms, "
          f"was away {away_ns / 1e6:.1f} ms of {wall_s * 1e3:.1f} ms; agree {st['agree']}")
    if kind == "hog":
        # the hog shares the core: the vCPU waits about half the scan, more
        # on a loaded host; a quarter shows the hog took effect
        assert st["kvm_ns"] > window_ns / 4, st
        assert st["scan_ns"] > st["scan_uncertainty_ns"], st
    else:
        # undisturbed: next to nothing stolen, by KVM's count and by the
        # host's own account of the vCPU thread's waits over the scan's bracket
        assert st["kvm_ns"] <= waited_ns + st["kvm_uncertainty_ns"], (st, waited_ns)
        assert st["kvm_ns"] <= NEAR_ZERO * window_ns, \
            (f"KVM counted {st['kvm_ns'] / 1e6:.1f} ms stolen of a {window_ns / 1e6:.0f} ms scan, above "
             f"{NEAR_ZERO:.0%}; the host's own run_delay of the vCPU thread over it: {waited_ns / 1e6:.1f} ms (load "
             f"{open('/proc/loadavg').read().split()[0]}): other work on this host kept it waiting", st)
    allowed = st["kvm_uncertainty_ns"] + st["scan_uncertainty_ns"]
    assert st["kvm_ns"] - st["scan_ns"] <= allowed, st
    assert st["scan_ns"] - st["kvm_ns"] <= allowed + away_ns + overhead_ns, (st, away_ns, overhead_ns)
    assert st["difference_ns"] == st["scan_ns"] - st["kvm_ns"]
    assert st["agree"] is (abs(st["difference_ns"]) <= allowed)
    if away_ns + overhead_ns <= allowed:
        assert st["agree"] is True, (st, away_ns, overhead_ns)


@pytest.mark.timed
def test_kvm_count_is_the_hosts_run_delay(steal_run):
    """KVM's count against the host scheduler's own: the run_delay over the
    serial marks around the scan. From "measuring" (printed before the
    calibration, long before KVM's count is first read) to "done" (printed
    after it is last read) the host's run_delay holds all of KVM's count;
    from "stolen" to "done" it holds KVM's count and at most the host time
    in that bracket outside the scan."""
    _, r, host = steal_run
    recs = records.parse(r.output)
    st, hw = records.one(recs, "steal", cpu=0), records.one(recs, "hwlat")
    assert set(host.samples) == set(MARKS), host.samples
    u = st["kvm_uncertainty_ns"]
    _, _, waited_all = host_bracket(host, "measuring", "done")
    assert st["kvm_ns"] <= waited_all + u, (st, host.samples)
    wall_s, _, waited = host_bracket(host, "stolen", "done")
    scan_wall_ns = hw["window_s"] * 1e9 * (1 - st["rate_ppm"] / 1e6)
    outside_ns = max(0.0, wall_s * 1e9 - scan_wall_ns)
    print(f"host run_delay {waited / 1e6:.3f} ms over {wall_s * 1e3:.1f} ms of host time "
          f"({outside_ns / 1e6:.1f} ms outside the scan); KVM {st['kvm_ns'] / 1e6:.3f} ms")
    assert waited - outside_ns - u <= st["kvm_ns"], (st, host.samples)


def test_undisturbed_kvm_q35_counts_steal(boot, kvm):
    b = boot(**boots.KVM_Q35)
    st = records.one(b.records, "steal", cpu=0)
    hw = records.one(b.records, "hwlat")
    assert st["counted"], st
    assert 0 <= st["kvm_ns"] <= hw["window_s"] * 1e9 + st["kvm_uncertainty_ns"], st
    assert st["kvm_ns"] - st["scan_ns"] <= st["kvm_uncertainty_ns"] + st["scan_uncertainty_ns"], st
    assert st["agree"] is (abs(st["difference_ns"]) <= st["kvm_uncertainty_ns"] + st["scan_uncertainty_ns"]), st
    assert any(l.startswith("PASS: steal time:") for l in b.output.split("\n")), b.explain()


def test_every_cpu_registers_its_own_area(boot, kvm):
    """-smp 2 under KVM (boots.KVM_X2APIC, shared): the boot CPU's count
    beside the scan as with one CPU, and CPU 1's, read by jobs on it just
    before and just after the scan while it sleeps in HLT. A halted vCPU is
    not runnable: its count holds only its waits for a host CPU once woken,
    never more than the time between its two reads, which bracket the scan."""
    b = boot(**boots.KVM_X2APIC)
    assert b.status == 0, b.explain()
    hw = records.one(b.records, "hwlat")
    st0 = records.one(b.records, "steal", cpu=0)
    assert st0["counted"] and "idle" not in st0, st0
    st1 = records.one(b.records, "steal", cpu=1)
    assert st1["counted"] and st1["idle"] is True, st1
    assert st1["window_ns"] >= hw["window_s"] * 1e9 * 0.999, (st1, hw)  # it brackets the scan
    assert 0 <= st1["kvm_ns"] <= st1["window_ns"], st1
    assert st1["version_updates"] >= 1, st1  # KVM updated the area at least at the second job's entry
    assert len(records.of_type(b.records, "steal")) == 2


def test_tcg_says_skip_and_why(boot):
    b = boot(**boots.TCG_Q35)
    st = records.one(b.records, "steal", cpu=0)
    assert st == {"type": "steal", "cpu": 0, "counted": False, "reason": st["reason"]}
    assert "is not KVM" in st["reason"], st
    [check] = [c for c in records.of_type(b.records, "check") if c["name"] == "steal time"]
    assert check["result"] == "SKIP" and check["detail"] == st["reason"]


def test_kvm_without_the_cpuid_bit_says_skip_and_why(boot, kvm):
    b = boot(**NO_STEAL)
    st = records.one(b.records, "steal", cpu=0)
    assert st["counted"] is False, st
    assert "KVM does not offer steal time (CPUID 0x40000001 EAX bit 5 clear" in st["reason"], st
    [check] = [c for c in records.of_type(b.records, "check") if c["name"] == "steal time"]
    assert check["result"] == "SKIP" and check["detail"] == st["reason"]
