"""Shared fixtures: one way to boot the image, shared by every test that
asks for the same run (helpers/boots.py says how, and how `make test`'s two
lanes share them), and the `timed` marker."""

from __future__ import annotations

import os
import resource
import signal
import sys

import pytest

from helpers.paths import KERNEL, PVH_KERNEL, ROOT, TEST_ISO  # tests/ is on the path: this file's folder

sys.path.insert(0, str(ROOT / "tools"))

from helpers.boots import Boot, BootCache, vmm_binary  # noqa: E402
from clockbench.machines import microvm, qemu  # noqa: E402

BOOT_CACHE = os.environ.get("CLOCKBENCH_BOOT_CACHE")

TIMED = ("timed: times something or stops QEMU from outside, so it must not share the CPU with another QEMU: "
         "`make test` runs these one at a time, with the rest beside them at the lowest priority")


FIRST = ("first: a long test that shares no boot with the timed lane: started first, so that it does not run "
         "alone at the end of the busy lane while the other worker waits (os-vm with every language: 2-3 minutes)")


def pytest_configure(config):
    # A suite started in the background by a shell without job control (`make test &`,
    # nohup) inherits SIGINT ignored, Python then installs no handler of its own, and every
    # tool the tests start inherits the ignore: their tests of Ctrl-C waited a minute for
    # an exit that never came. A person's Ctrl-C reaches a tool with SIGINT at its default.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    config.addinivalue_line("markers", TIMED)
    config.addinivalue_line("markers", FIRST)
    # pytest-xdist's own marker, named here too for the timed lane, which runs without xdist
    config.addinivalue_line("markers", "xdist_group(name): tests pytest-xdist keeps on one worker")


_CPU_AT_START = pytest.StashKey[float]()


def _cpu_s() -> float:
    """This process's CPU seconds and its waited-for children's (QEMU, the
    tools and builds a test ran), user and system."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    item.stash[_CPU_AT_START] = _cpu_s()
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item):
    yield
    # each test's CPU (setup, call and teardown) beside its time in the lanes'
    # JUnit XML: a lane's time is what the other lane left it, its CPU is its
    # own work (scripts/test_times.py sums both). A child reaped later (a
    # fixture's server) counts where it was reaped.
    start = item.stash.get(_CPU_AT_START, None)
    if start is not None:
        item.user_properties.append(("cpu_s", f"{_cpu_s() - start:.2f}"))


def pytest_collection_modifyitems(config, items):
    # pytest-xdist hands the tests (their groups) out in this order
    items.sort(key=lambda item: item.get_closest_marker("first") is None)


@pytest.fixture(scope="session")
def boot():
    cache = BootCache(BOOT_CACHE)

    def _boot(timeout: float = 120, **kw) -> Boot:
        kw.setdefault("kernel", KERNEL)
        kw.setdefault("iso", TEST_ISO)
        return Boot(cache.run(qemu.QemuConfig(**kw), timeout))

    return _boot


@pytest.fixture(scope="session")
def vmm_boot():
    """Boots the PVH kernel under Cloud Hypervisor or Firecracker from
    VMM_DIR, once per configuration, shared as `boot` shares QEMU runs. A
    monitor missing from VMM_DIR fails the test: it is not skipped."""
    cache = BootCache(BOOT_CACHE)

    def _boot(vmm: str, timeout: float = 200, **kw) -> Boot:
        binary = vmm_binary(vmm)
        kw.setdefault("kernel", PVH_KERNEL)
        return Boot(cache.run(microvm.VmmConfig(vmm=vmm, binary=binary, **kw), timeout))

    return _boot


@pytest.fixture(scope="session")
def kvm():
    ok, why = qemu.kvm_usable()
    if not ok:
        pytest.skip(f"KVM unusable: {why}")
    return True

