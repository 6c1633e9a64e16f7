"""The "hog" fault (qemu.Fault): a busy process shares one host core with
the target's threads while it lasts, and every affinity is given back after.
Run against a stand-in process (a Python that sleeps), not QEMU."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from clockbench.machines import qemu


def children_of(pid: int) -> set[int]:
    kids = set()
    for tid in os.listdir(f"/proc/{pid}/task"):
        kids |= {int(k) for k in open(f"/proc/{pid}/task/{tid}/children").read().split()}
    return kids


@pytest.mark.timed  # the hog must be running 0.4 s in: a starved test process starts it late
def test_hog_pins_shares_and_restores():
    target = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        before = os.sched_getaffinity(target.pid)
        fault = qemu.Fault("hog", "x", delay_s=0.0, duration_s=0.8)
        fault.check()
        injector = qemu._Injector(target, [fault], qemu._Triggers([fault]), None, time.monotonic())
        inj = injector.injections[0]
        mine = children_of(os.getpid())
        t = threading.Thread(target=injector._hog, args=(fault, inj, time.monotonic()))
        t.start()
        time.sleep(0.4)
        hogs = children_of(os.getpid()) - mine - {target.pid}
        during = {tid: os.sched_getaffinity(int(tid)) for tid in os.listdir(f"/proc/{target.pid}/task")}
        hog_cpus = [os.sched_getaffinity(h) for h in hogs]
        hog_state = [open(f"/proc/{h}/stat").read().rsplit(")", 1)[1].split()[0] for h in hogs]
        t.join(5)
        assert not t.is_alive()
        assert inj.injected and inj.error is None, inj.describe()
        assert 0.75 <= inj.resume_sent_s - inj.stop_sent_s <= 2.0, inj.describe()
        # no thread names: every thread of the target, on one core with the one hog
        assert len(hogs) == 1, hogs
        [core] = set(map(frozenset, during.values())) | set(map(frozenset, hog_cpus))
        assert len(core) == 1 and set(core) <= before
        assert hog_state == ["R"], hog_state
        # after: the hog is gone and the target's affinity is as it was
        assert not (children_of(os.getpid()) - mine - {target.pid})
        assert all(os.sched_getaffinity(int(tid)) == before for tid in os.listdir(f"/proc/{target.pid}/task"))
    finally:
        target.kill()
        target.wait()


def test_hog_of_a_process_gone_says_so():
    target = subprocess.Popen([sys.executable, "-c", "pass"])
    target.wait()
    fault = qemu.Fault("hog", "x", duration_s=0.1)
    injector = qemu._Injector(target, [fault], qemu._Triggers([fault]), None, time.monotonic())
    inj = injector.injections[0]
    injector._hog(fault, inj, time.monotonic())
    assert not inj.injected and "not in /proc" in inj.error
